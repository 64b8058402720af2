// Followed logs through a real master and agent (separate processes, real tasks): the
// master pipes the agent's NDJSON stream as it comes, `cairn logs --follow` prints it, and
// follows again without losing or repeating a byte when the agent is killed and restarted.

import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LogChunk } from '../../shared/master-state.ts';
import { Cleanup, freePort, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { ndjsonLines } from '../harness/tasks.ts';
import { authFetch, credentialEnv } from '../harness/credentials.ts';

const CAIRN = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));
const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

function updatesOf(s: RawScheduler, taskId: string): string[] {
  return s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e) => e.update.status.state as string);
}

async function launch(masterUrl: string, id: string, cmd: string): Promise<RawScheduler> {
  const s = new RawScheduler(masterUrl);
  schedulers.push(s);
  expect((await s.subscribe({ user: '', name: 'logs', failover_timeout: 3600 })).status).toBe(200);
  autoAck(s);
  const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
  const info = taskInfo(id, offer.agent_id.value, { cpus: 0.1, mem: 32 }, cmd);
  const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [info] } }] } });
  expect(r.status).toBe(202);
  await waitFor(`${id} running`, () => updatesOf(s, id).includes('TASK_RUNNING'));
  return s;
}

/** `n` numbered lines, one every `everyS` seconds. */
function linesCmd(n: number, everyS: number): string {
  return `i=1; while [ $i -le ${n} ]; do echo "line $i"; i=$((i+1)); sleep ${everyS}; done`;
}

function expectedLines(n: number): string {
  return Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');
}

function cairn(args: string[], masterUrl: string, onStdout?: (text: string) => void): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CAIRN, ...args], { env: { ...process.env, ...credentialEnv(), CAIRN_MASTER: masterUrl, CAIRN_LOG_LEVEL: 'warn' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      onStdout?.(stdout);
    });
    child.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('followed logs through the master (real processes)', () => {
  it('arrive piece by piece while the task runs, end with eof, and `cairn logs --follow` prints them', async () => {
    const master = await startMasterProcess(cleanup);
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024' });
    await launch(master.url, 'ticker', linesCmd(10, 0.15));

    const cli = cairn(['logs', 'ticker', '--follow'], master.url);
    const res = await authFetch(`${master.url}/api/v1/tasks/ticker/logs?stream=stdout&offset=0&follow=true`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const arrivals: { chunk: LogChunk; taskState: string; atMs: number }[] = [];
    for await (const chunk of ndjsonLines<LogChunk>(res.body!)) {
      const taskState = arrivals.some((a) => a.chunk.data !== '') || chunk.data === '' ? '' : (await (await authFetch(`${master.url}/api/v1/tasks/ticker`)).json()).state;
      arrivals.push({ chunk, taskState, atMs: Date.now() });
    }
    const firstData = arrivals.find((a) => a.chunk.data !== '')!;
    expect(firstData.taskState).toBe('TASK_RUNNING');
    expect(arrivals.at(-1)!.atMs - firstData.atMs).toBeGreaterThan(700);
    expect(arrivals.filter((a) => a.chunk.data !== '').length).toBeGreaterThan(3);
    expect(arrivals.map((a) => a.chunk.data).join('')).toBe(expectedLines(10));
    expect(arrivals.at(-1)!.chunk.eof).toBe(true);

    const r = await cli;
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(expectedLines(10));
    expect(r.code).toBe(0);
  });

  it('answers CAIRN_AGENT_UNAVAILABLE when the agent is down; `cairn logs --follow` carries on across an agent restart', async () => {
    const master = await startMasterProcess(cleanup);
    const agentOpts = { workDir: cleanup.dir('cairn-agent-'), port: await freePort(), resources: 'cpus:2;mem:1024' };
    const agent = await startAgentProcess(cleanup, master.url, agentOpts);
    await launch(master.url, 'steady', linesCmd(40, 0.1));

    let printed = '';
    const cli = cairn(['logs', 'steady', '--follow'], master.url, (text) => (printed = text));
    await waitFor('some lines printed', () => printed.split('\n').length > 5);
    await agent.kill('SIGKILL');

    const down = await authFetch(`${master.url}/api/v1/tasks/steady/logs?follow=true`);
    expect(down.status).toBe(503);
    expect(down.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await down.json()).toMatchObject({ code: 'CAIRN_AGENT_UNAVAILABLE' });

    await new Promise((r) => setTimeout(r, 700));
    await startAgentProcess(cleanup, master.url, agentOpts);
    const r = await cli;
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(expectedLines(40));
    expect(r.code).toBe(0);
  });
});
