// The agent's option checking and the small pure pieces of its connection handling:
// attributes, the master's WebSocket address, the advertised IP, backoff, pending
// status updates and the stored agent id.

import { describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileAgentOptions, defaultAdvertisedIp, masterWebSocketUrl, parseAttributes } from '../../agent/options.ts';
import { backoffDelayMs } from '../../agent/master-link.ts';
import { PendingUpdates, uuidKey } from '../../agent/status-updates.ts';
import { readAgentId, writeAgentId } from '../../agent/agent-id.ts';
import type { StatusUpdate } from '../../shared/agent-protocol.ts';
import { AGENT_DEFAULTS } from '../../shared/agent-defaults.ts';
import { formatDurationMs, parseDurationMs } from '../../shared/duration.ts';
import { CAIRN_VERSION } from '../../shared/version.ts';
import { runCli } from '../../bin/commands/program.ts';
import type { AgentOptions as AgentCommandOptions } from '../../bin/commands/daemons/options.ts';

describe('parseAttributes', () => {
  it('reads k:v pairs', () => {
    expect(parseAttributes('rack:r1; zone : us-west ;gpu_model:A100')).toEqual([
      { name: 'rack', value: 'r1' },
      { name: 'zone', value: 'us-west' },
      { name: 'gpu_model', value: 'A100' },
    ]);
    expect(parseAttributes(undefined)).toEqual([]);
    expect(parseAttributes('')).toEqual([]);
    expect(parseAttributes('url:http://x:1')).toEqual([{ name: 'url', value: 'http://x:1' }]);
  });

  it('rejects bad input naming attributes', () => {
    for (const bad of ['rack', ':r1', 'rack:', 'ra ck:r1', 'rack:a;rack:b']) {
      expect(() => parseAttributes(bad)).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'attributes' }));
    }
  });
});

describe('master address', () => {
  it('derives the agent WebSocket URL from the master URL', () => {
    expect(masterWebSocketUrl('http://10.0.0.1:5050')).toBe('ws://10.0.0.1:5050/api/v1/agent');
    expect(masterWebSocketUrl('https://master.example:443/')).toBe('wss://master.example/api/v1/agent');
    expect(() => masterWebSocketUrl('10.0.0.1:5050x')).toThrow(expect.objectContaining({ field: 'masterUrl' }));
    expect(() => masterWebSocketUrl('ftp://x')).toThrow(/scheme/);
  });

  it('advertises loopback for a local master, else the first external IPv4', () => {
    const ifaces = {
      lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }],
      eth0: [{ address: 'fe80::1', family: 'IPv6', internal: false }, { address: '10.1.2.3', family: 'IPv4', internal: false }],
    } as unknown as Parameters<typeof defaultAdvertisedIp>[1];
    expect(defaultAdvertisedIp('http://127.0.0.1:5050', ifaces)).toBe('127.0.0.1');
    expect(defaultAdvertisedIp('http://localhost:5050', ifaces)).toBe('127.0.0.1');
    expect(defaultAdvertisedIp('http://10.1.0.1:5050', ifaces)).toBe('10.1.2.3');
    expect(defaultAdvertisedIp('http://10.1.0.1:5050', {})).toBe('127.0.0.1');
  });
});

describe('compileAgentOptions', () => {
  it('checks GPU sharing, naming the field', () => {
    expect(compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: '/w', gpuSharing: 4 }).gpuSharing).toBe(4);
    for (const bad of [0, 65, 1.5]) {
      expect(() => compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: '/w', gpuSharing: bad })).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'gpuSharing' }));
    }
  });

  it('checks the Docker runtime name, naming the field', () => {
    const base = { masterUrl: 'http://127.0.0.1:5050', workDir: '/w' };
    expect(compileAgentOptions(base).dockerRuntime).toBeUndefined();
    expect(compileAgentOptions({ ...base, dockerRuntime: 'crun' }).dockerRuntime).toBe('crun');
    expect(compileAgentOptions({ ...base, dockerRuntime: 'nvidia-container.runtime_2' }).dockerRuntime).toBe('nvidia-container.runtime_2');
    for (const bad of ['', '-x', 'a b', 'run/c', 'x'.repeat(65)]) {
      expect(() => compileAgentOptions({ ...base, dockerRuntime: bad })).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'dockerRuntime' }));
    }
  });

  it('fills defaults', () => {
    const cfg = compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: 'relative/dir' });
    expect(cfg).toMatchObject({ httpPort: 5051, reconnectMinMs: 100, reconnectMaxMs: 2000, statusResendMs: 2000, ip: '127.0.0.1', attributes: [] });
    expect(cfg.workDir.startsWith('/')).toBe(true);
  });

  it('serves on the address it advertises, never every interface: loopback for a local master', () => {
    expect(compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: '/w' }).httpHost).toBe('127.0.0.1');
    expect(compileAgentOptions({ masterUrl: 'http://10.1.2.3:5050', workDir: '/w', ip: '10.1.2.4' }).httpHost).toBe('10.1.2.4');
    const remote = compileAgentOptions({ masterUrl: 'http://10.1.2.3:5050', workDir: '/w' });
    expect(remote.httpHost).toBe(remote.ip);
    expect(remote.httpHost).not.toBe('0.0.0.0');
  });

  it('takes every default from AGENT_DEFAULTS, as `cairn agent` does', async () => {
    const cfg = compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: '/w' });
    expect(cfg).toMatchObject(AGENT_DEFAULTS);
    expect(cfg.version).toBe(CAIRN_VERSION);
    // The command line's defaults are the same values.
    const calls: AgentCommandOptions[] = [];
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, onInterrupt: () => () => undefined };
    await runCli(['agent', '--master', 'http://127.0.0.1:5050'], io, { agent: async (o) => (calls.push(o), 0) });
    const { masterUrl: _m, workDir: _w, ...fromFlags } = calls[0];
    expect(AGENT_DEFAULTS).toMatchObject(fromFlags);
    expect(formatDurationMs(AGENT_DEFAULTS.sandboxGcAgeMs)).toBe('7d');
    for (const text of ['12h', '90s', '500ms', '2d']) expect(formatDurationMs(parseDurationMs(text)!)).toBe(text);
  });

  it('rejects bad flags naming them', () => {
    const base = { masterUrl: 'http://127.0.0.1:5050', workDir: '/tmp/x' };
    expect(() => compileAgentOptions({ ...base, resources: 'cpus:x' })).toThrow(expect.objectContaining({ field: 'resources.cpus' }));
    expect(() => compileAgentOptions({ ...base, attributes: 'nope' })).toThrow(expect.objectContaining({ field: 'attributes' }));
    expect(() => compileAgentOptions({ ...base, httpPort: 70000 })).toThrow(expect.objectContaining({ field: 'httpPort' }));
    expect(() => compileAgentOptions({ ...base, workDir: '' })).toThrow(expect.objectContaining({ field: 'workDir' }));
    expect(() => compileAgentOptions({ ...base, reconnectMaxMs: 0 })).toThrow(expect.objectContaining({ field: 'reconnectMaxMs' }));
  });

  it('needs no master URL when gossip has members to join through; checks the gossip options', () => {
    const secret = 'a-secret-of-16-bytes-at-least';
    const cfg = compileAgentOptions({ workDir: '/tmp/x', gossip: { port: 0, secret, join: ['127.0.0.1:7946'] } });
    expect(cfg).toMatchObject({ masterUrl: '', masterWsUrl: '', masterWsUrls: [], ip: '127.0.0.1' });
    expect(() => compileAgentOptions({ workDir: '/tmp/x' })).toThrow(expect.objectContaining({ field: 'masterUrl' }));
    expect(() => compileAgentOptions({ workDir: '/tmp/x', gossip: { port: 0, secret } })).toThrow(expect.objectContaining({ field: 'masterUrl' }));
    expect(() => compileAgentOptions({ workDir: '/tmp/x', gossip: { port: 0, secret, join: ['nowhere'] } })).toThrow(expect.objectContaining({ field: 'join' }));
    expect(() => compileAgentOptions({ workDir: '/tmp/x', gossip: { port: 0, secret: 'short', join: ['127.0.0.1:7946'] } })).toThrow(expect.objectContaining({ field: 'secret' }));
    expect(() => compileAgentOptions({ workDir: '/tmp/x', gossip: { port: 65536, secret, join: ['127.0.0.1:7946'] } })).toThrow(expect.objectContaining({ field: 'gossipPort' }));
  });
});

describe('backoffDelayMs', () => {
  it('doubles from 100 ms up to the maximum', () => {
    expect([0, 1, 2, 3, 4, 5, 50].map((a) => backoffDelayMs(a, 100, 2000))).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
  });
});

describe('PendingUpdates', () => {
  const update = (n: number): StatusUpdate => ({
    uuid: new Uint8Array(16).fill(n), taskId: `t${n}`, frameworkId: 'f', state: 'TASK_RUNNING',
    message: '', hasExitCode: false, exitCode: 0, timestampMs: n, reason: '',
  });

  it('keeps updates in order until acknowledged, ignoring unknown and repeated acks', () => {
    const p = new PendingUpdates();
    p.add(update(1));
    p.add(update(2));
    p.add(update(3));
    expect(p.ack(new Uint8Array(16).fill(2))?.taskId).toBe('t2');
    expect(p.ack(new Uint8Array(16).fill(2))).toBeUndefined();
    expect(p.ack(new Uint8Array(16).fill(9))).toBeUndefined();
    expect(p.list().map((u) => u.taskId)).toEqual(['t1', 't3']);
    expect(p.size).toBe(2);
  });

  it('keys by the uuid bytes, whatever buffer holds them', () => {
    const big = Buffer.alloc(32, 7);
    expect(uuidKey(big.subarray(8, 24))).toBe('07'.repeat(16));
  });
});

describe('agent id file', () => {
  it('is empty before the first registration and durable after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-id-'));
    expect(await readAgentId(dir)).toBe('');
    await writeAgentId(dir, 'agent-42');
    expect(await readAgentId(dir)).toBe('agent-42');
    await writeAgentId(dir, 'agent-43');
    expect(await readAgentId(dir)).toBe('agent-43');
    expect(readdirSync(dir)).toEqual(['agent-id']); // no temporary file left behind
    rmSync(dir, { recursive: true, force: true });
  });
});
