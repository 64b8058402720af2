// `cairn top`: the frame it prints from a state and agents' usage, and one real run
// against a stand-in master (which does not proxy usage) and a stand-in agent.

import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StateView } from '../../shared/master-state.ts';
import type { AgentUsage } from '../../shared/agent-usage.ts';
import { runTop, topFrame } from '../../bin/commands/tasks/top.ts';

const MIB = 1024 * 1024;

function state(agentUrl: string): StateView {
  return {
    version: '0.1.0',
    startedAtMs: 0,
    agents: [
      { id: 'a1', hostname: 'gpu-1', ip: '127.0.0.1', url: agentUrl, reachable: true, connected: true, registeredAtMs: 0, resources: 'cpus:8;mem:4096;gpus:2', used: '', offered: '', attributes: {}, isolation: '', draining: null, usage: null },
      { id: 'a2', hostname: 'cpu-1', ip: '10.0.0.2', url: 'http://10.0.0.2:5051', reachable: false, connected: false, registeredAtMs: 0, resources: 'cpus:4', used: '', offered: '', attributes: {}, isolation: '', draining: null, usage: null },
    ],
    frameworks: [],
    tasks: [
      { id: 'train-0', name: 'train-0', frameworkId: 'f', agentId: 'a1', state: 'TASK_RUNNING', resources: 'cpus:2;mem:1024;gpus:2', message: '', launchedAtMs: 0, updatedAtMs: 0 },
      { id: 'done-0', name: 'done-0', frameworkId: 'f', agentId: 'a1', state: 'TASK_FINISHED', resources: 'cpus:1', message: '', launchedAtMs: 0, updatedAtMs: 0 },
    ],
    offers: [],
  } as unknown as StateView;
}

const usage: AgentUsage = {
  agentId: 'a1',
  timestampMs: 10_000,
  intervalMs: 5000,
  tasks: [{
    taskId: 'train-0', frameworkId: 'f', timestampMs: 10_000, source: 'cgroup', cpuSeconds: 30, cpusUsed: 1.5, cpusLimit: 2, memoryBytes: 512 * MIB, rssBytes: 500 * MIB, memoryLimitBytes: 1024 * MIB,
    gpus: [{ index: 0, uuid: 'GPU-0', memoryUsedMiB: 30000, memoryTotalMiB: 81559, utilizationPercent: 97 }, { index: 1, uuid: 'GPU-1', memoryUsedMiB: null, memoryTotalMiB: null, utilizationPercent: null }],
  }],
  total: { tasks: 1, cpusUsed: 1.5, cpusLimit: 2, memoryBytes: 512 * MIB, rssBytes: 500 * MIB, memoryLimitBytes: 1024 * MIB, gpus: 2, gpuMemoryUsedMiB: 30000 },
  gpus: [{ index: 0, uuid: 'GPU-0', memoryUsedMiB: 30000, memoryTotalMiB: 81559, utilizationPercent: 97 }],
  unhealthyGpus: [{ index: 1, reason: 'GPU is lost' }],
};

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function serve(routes: Record<string, unknown>): Promise<string> {
  const srv = http.createServer((req, res) => {
    const body = routes[req.url ?? ''];
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body ?? { code: 'CAIRN_UNKNOWN_CALL', message: 'no such route' }));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

describe('cairn top', () => {
  it('shows each running task with its usage, then each agent', () => {
    const frame = topFrame(state('http://x'), new Map([['a1', { usage }]]), 12_000);
    expect(frame).toBe(
      [
        'TASK     AGENT  STATE    CPUS USED/LIMIT  MEM MIB USED/LIMIT  GPU UTIL',
        'train-0  gpu-1  RUNNING  1.50/2           512/1024            0:97% 1:?',
        '',
        'AGENT  USAGE           TASKS  CPUS USED/LIMIT  MEM MIB USED/LIMIT  GPU UTIL',
        'gpu-1  sampled 2s ago  1      1.50/2           512/1024            97% (out of service: 1)',
        'cpu-1  unreachable     -      -                -                   -',
        '',
      ].join('\n'),
    );
    expect(topFrame(state('http://x'), new Map([['a1', { error: 'HTTP 500' }]]), 0)).toMatch(/gpu-1 +usage unavailable: HTTP 500/);
  });

  it('reads usage from the agents when the master does not proxy it', async () => {
    const agentUrl = await serve({ '/api/v1/usage': usage });
    const masterUrl = await serve({ '/api/v1/state': state(agentUrl) });
    let out = '';
    const io = { stdout: { write: (t: string) => (out += t) }, stderr: { write: () => true }, env: {}, onInterrupt: () => () => undefined };
    expect(await runTop({ masterUrl, intervalMs: 2000, once: true, clear: false }, io)).toBe(0);
    expect(out).toMatch(/train-0 +gpu-1 +RUNNING +1\.50\/2 +512\/1024/);
  });
});
