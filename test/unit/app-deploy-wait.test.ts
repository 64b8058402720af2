// `cairn app deploy --wait`: the lines it prints as the apps come up, when it calls an app
// deployed (health checks counted), and the time-out.

import { describe, expect, it } from 'vitest';
import { deployed, waitDeployed, type AppState } from '../../bin/commands/apps/deploy-wait.ts';

function fakeIo(states: AppState[][], reasons: Map<string, string>[] = []) {
  let poll = 0;
  let now = 0;
  const lines: string[] = [];
  return {
    lines,
    io: {
      app: async (id: string) => states[Math.min(poll, states.length - 1)]!.find((a) => a.id === id)!,
      reasons: async () => reasons[Math.min(poll, reasons.length - 1)] ?? new Map(),
      write: (line: string) => void lines.push(line),
      sleep: async (ms: number) => {
        poll++;
        now += ms;
      },
      nowMs: () => now,
    },
  };
}

describe('app deploy --wait', () => {
  it('prints the instances running and why the others wait as they change, then deployed', async () => {
    const why = 'needs cpus 0.9; the best agent, h, has cpus 0.8 free; /dev/web holds cpus 0.2 there';
    const { io, lines } = fakeIo(
      [[{ id: '/a', instances: 2, tasksRunning: 0, deployments: [{}] }], [{ id: '/a', instances: 2, tasksRunning: 1, deployments: [{}] }], [{ id: '/a', instances: 2, tasksRunning: 1, deployments: [{}] }], [{ id: '/a', instances: 2, tasksRunning: 2, deployments: [] }]],
      [new Map(), new Map([['/a', why]]), new Map([['/a', why]]), new Map()],
    );
    expect(await waitDeployed(['/a'], io, { pollMs: 10 })).toBe('deployed');
    expect(lines).toEqual(['/a: replicas 0/2 running', '/a: replicas 1/2 running', `/a: waiting: ${why}`, '/a: replicas 2/2 running', '/a: deployed (2/2 running)']);
  });

  it('gives up at the time-out', async () => {
    const { io, lines } = fakeIo([[{ id: '/a', instances: 1, tasksRunning: 0, deployments: [{}] }]]);
    expect(await waitDeployed(['/a'], io, { pollMs: 100, timeoutMs: 250 })).toBe('timeout');
    expect(lines).toEqual(['/a: replicas 0/1 running']);
  });

  it('an app with health checks is deployed once its instances are healthy, not only running', () => {
    expect(deployed({ id: '/a', instances: 1, tasksRunning: 1, healthChecks: [{}], tasksHealthy: 0, deployments: [] })).toBe(false);
    expect(deployed({ id: '/a', instances: 1, tasksRunning: 1, healthChecks: [{}], tasksHealthy: 1, deployments: [] })).toBe(true);
    expect(deployed({ id: '/a', instances: 1, tasksRunning: 1, deployments: [{}] })).toBe(false);
  });
});
