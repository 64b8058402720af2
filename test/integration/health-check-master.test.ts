// The master's side of health checks, with a simulated agent speaking the real protocol: the
// check goes to the agent with its defaults filled; an update in the same state that changes
// only the task's health reaches the framework (and one that changes nothing does not); the
// registry keeps the latest result and the check on the task, through a master restart.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { silentLogger } from '../../shared/logger.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';

let master: MasterHandle | undefined;
let dir: string;
const agents: FakeAgent[] = [];
const schedulers: RawScheduler[] = [];

function start(): Promise<MasterHandle> {
  return startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), allocationIntervalMs: 50 });
}

beforeEach(async () => {
  dir = tempDir();
  master = await start();
});

afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await Promise.all(agents.splice(0).map((a) => a.close()));
  await master?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A health update as an agent sends it: TASK_RUNNING with `healthy`. */
function sendHealth(a: FakeAgent, taskId: string, frameworkId: string, healthy: boolean): string {
  const uuid = randomBytes(16);
  a.send({
    statusUpdate: {
      uuid, taskId, frameworkId, state: 'TASK_RUNNING', message: healthy ? 'health check passed' : 'health check failed', reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED',
      hasExitCode: false, exitCode: 0, timestampMs: Date.now(), hasHealthy: true, healthy,
    },
  });
  return uuid.toString('hex');
}

describe('health checks in the master', () => {
  it('sends the check to the agent, forwards health-only updates, drops repeats, and keeps the latest result', async () => {
    const a = new FakeAgent({ masterUrl: master!.url });
    agents.push(a);
    await a.connect();
    const s = new RawScheduler(master!.url);
    schedulers.push(s);
    expect((await s.subscribe({ user: 'test', name: 'fw', failover_timeout: 3600 })).status).toBe(200);
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const info = taskInfo('web', a.agentId, { cpus: 0.1, mem: 32, ports: [[31000, 31000]] }, 'serve', { health_check: { type: 'HTTP', http: { port: 31000, path: '/ok' }, interval_seconds: 1 } });
    expect((await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [info] } }] } })).status).toBe(202);

    await waitFor('launch', () => a.launched.length === 1);
    expect(a.launched[0]!.healthCheck).toEqual({
      type: 'http', port: 31000, path: '/ok', scheme: 'http', statuses: [], command: '',
      delayMs: 15_000, intervalMs: 1000, timeoutMs: 20_000, gracePeriodMs: 10_000, consecutiveFailures: 3,
    });
    const running = await s.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING');
    expect(running.update.status.healthy).toBeUndefined();

    const updates = () => s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'web').map((e) => e.update.status);
    const healthy = sendHealth(a, 'web', s.frameworkId, true);
    await waitFor('healthy forwarded', () => updates().some((u) => u.healthy === true));
    await waitFor('healthy acknowledged to the agent', () => a.acked.has(healthy));
    // The same result again is a duplicate: acknowledged to the agent, not forwarded.
    const again = sendHealth(a, 'web', s.frameworkId, true);
    await waitFor('repeat acknowledged', () => a.acked.has(again));
    const unhealthy = sendHealth(a, 'web', s.frameworkId, false);
    await waitFor('unhealthy forwarded', () => updates().some((u) => u.healthy === false));
    await waitFor('unhealthy acknowledged', () => a.acked.has(unhealthy));
    expect(updates().map((u) => [u.state, u.healthy])).toEqual([['TASK_RUNNING', undefined], ['TASK_RUNNING', true], ['TASK_RUNNING', false]]);
    expect(updates()[2]).toMatchObject({ reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED', source: 'SOURCE_AGENT' });

    const record = master!.master.registry.state.tasks.get('web')!;
    expect(record).toMatchObject({ state: 'TASK_RUNNING', healthy: false, healthCheck: { type: 'http', port: 31000 } });
    const view = await (await fetch(`${master!.url}/api/v1/tasks/web`)).json();
    expect(view).toMatchObject({ state: 'TASK_RUNNING', healthy: false, healthCheck: 'HTTP' });
    expect(view.history.map((c: { state: string; healthy?: boolean }) => c.healthy)).toEqual([undefined, undefined, true, false]);

    // A restarted master reads it all back from its log: the check and the latest result.
    s.close();
    await a.close();
    await master!.stop();
    master = undefined;
    master = await start();
    expect(master.master.registry.state.tasks.get('web')).toMatchObject({ healthy: false, healthCheck: { type: 'http', port: 31000, path: '/ok', intervalMs: 1000 } });
  });
});
