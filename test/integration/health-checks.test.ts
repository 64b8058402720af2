// Health checks end to end, as real processes: a real master, a real `cairn agent`, a plain
// Mesos v1 client as the framework. The agent checks a tiny HTTP server each task starts:
// healthy is reported; a path that answers 404 gets its task killed after 3 failures with
// Mesos' reason; TCP and COMMAND checks report; an agent restarted with its tasks recovered
// resumes their checks; the master and `cairn task` show the latest result.

import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { Cleanup, freePort, freePortRun, runCairn, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo, type RawEvent } from '../harness/raw-scheduler.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

/** A server on $PORT: 200 on /health, 404 elsewhere. Node's own binary: no PATH needed. */
const SERVER = `exec ${JSON.stringify(process.execPath)} -e "require('http').createServer((q, s) => { s.statusCode = q.url === '/health' ? 200 : 404; s.end(); }).listen(+process.env.PORT, '127.0.0.1')"`;

/** Every check in these tests: at once, each second, short timeouts. */
const FAST = { delay_seconds: 0, interval_seconds: 1, timeout_seconds: 5, grace_period_seconds: 0 };
/** The same, with time for the task's server to start listening: failures before its first success are not counted meanwhile. */
const STARTING = { ...FAST, grace_period_seconds: 30 };

function updatesOf(s: RawScheduler, taskId: string): RawEvent['update']['status'][] {
  return s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e) => e.update.status);
}

async function masterTask(masterUrl: string, taskId: string): Promise<any> {
  const r = await authFetch(`${masterUrl}/api/v1/tasks/${taskId}`);
  return r.json();
}

async function cluster(opts: { workDir?: string; agentPort?: number } = {}) {
  const master = await startMasterProcess(cleanup);
  const firstPort = await freePortRun(10);
  const agentOpts = { workDir: opts.workDir ?? cleanup.dir('cairn-agent-'), port: opts.agentPort ?? (await freePort()), resources: `cpus:2;mem:1024;ports:[${firstPort}-${firstPort + 9}]` };
  const agent = await startAgentProcess(cleanup, master.url, agentOpts);
  const s = new RawScheduler(master.url);
  schedulers.push(s);
  expect((await s.subscribe({ user: '', name: 'health', failover_timeout: 3600 })).status).toBe(200);
  autoAck(s);
  const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
  return { master, agent, agentOpts, s, offer, agentId: offer.agent_id.value as string, firstPort };
}

describe('health checks (real master and agent)', () => {
  it('HTTP healthy, HTTP 404 killed after 3 failures with the reason, TCP and COMMAND reported; the master and `cairn task` show it', async () => {
    const { master, s, offer, agentId, firstPort: p } = await cluster();
    const port = (n: number): [number, number][] => [[p + n, p + n]];
    const infos = [
      taskInfo('http-ok', agentId, { cpus: 0.1, mem: 32, ports: port(0) }, SERVER, { health_check: { type: 'HTTP', http: { port: p, path: '/health' }, ...STARTING } }),
      taskInfo('http-404', agentId, { cpus: 0.1, mem: 32, ports: port(1) }, SERVER, { health_check: { type: 'HTTP', http: { port: p + 1, path: '/missing' }, ...FAST, grace_period_seconds: 10, consecutive_failures: 3 }, kill_policy: { grace_period: { nanoseconds: 500e6 } } }),
      taskInfo('tcp', agentId, { cpus: 0.1, mem: 32, ports: port(2) }, SERVER, { health_check: { type: 'TCP', tcp: { port: p + 2 }, ...STARTING } }),
      // The check runs in the task's sandbox (its file) and with its environment (its variable).
      taskInfo('command', agentId, { cpus: 0.1, mem: 32 }, 'touch ready; exec sleep 600', {
        command: { value: 'touch ready; exec sleep 600', shell: true, environment: { variables: [{ name: 'HEALTH_MARK', value: 'yes' }] } },
        health_check: { type: 'COMMAND', command: { value: 'test -f ready && test "$HEALTH_MARK" = yes' }, ...STARTING },
      }),
      // No task listens on its port: unhealthy, but never killed with consecutive_failures 0.
      taskInfo('tcp-closed', agentId, { cpus: 0.1, mem: 32, ports: port(3) }, 'exec sleep 600', { health_check: { type: 'TCP', tcp: { port: p + 3 }, ...FAST, consecutive_failures: 0 } }),
    ];
    const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }] } });
    expect(r.status).toBe(202);

    const healthyOf = (id: string) => updatesOf(s, id).filter((u) => u.healthy !== undefined);
    await waitFor('http-ok healthy', () => healthyOf('http-ok').some((u) => u.healthy === true), 60_000);
    await waitFor('tcp healthy', () => healthyOf('tcp').some((u) => u.healthy === true), 60_000);
    await waitFor('command healthy', () => healthyOf('command').some((u) => u.healthy === true), 60_000);
    await waitFor('tcp-closed unhealthy', () => healthyOf('tcp-closed').some((u) => u.healthy === false), 60_000);
    for (const id of ['http-ok', 'tcp', 'command']) {
      const first = healthyOf(id)[0]!;
      expect(first).toMatchObject({ state: 'TASK_RUNNING', healthy: true, reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED', source: 'SOURCE_AGENT' });
    }
    expect(healthyOf('http-ok')[0]!.message).toContain(`HTTP GET http://127.0.0.1:${p}/health`);
    expect(healthyOf('tcp-closed')[0]!.message).toMatch(/ECONNREFUSED/);

    // The 404 task: unhealthy on its first failure, killed after its third, its end saying why.
    await waitFor('http-404 killed', () => updatesOf(s, 'http-404').some((u) => u.state === 'TASK_KILLED'), 60_000);
    const states = updatesOf(s, 'http-404').map((u) => `${u.state}${u.healthy === undefined ? '' : `:${u.healthy}`}`);
    expect(states).toEqual(['TASK_RUNNING', 'TASK_RUNNING:false', 'TASK_KILLED:false']);
    const killed = updatesOf(s, 'http-404').at(-1)!;
    expect(killed.reason).toBe('REASON_TASK_HEALTH_CHECK_STATUS_UPDATED');
    expect(killed.message).toContain(`HTTP GET http://127.0.0.1:${p + 1}/missing`);
    expect(killed.message).toContain('3 times in a row');
    expect(killed.message).toContain('HTTP status 404');

    // The others were neither flipped nor killed meanwhile.
    expect(healthyOf('http-ok').map((u) => u.healthy)).toEqual([true]);
    expect(updatesOf(s, 'tcp-closed').some((u) => u.state !== 'TASK_RUNNING')).toBe(false);

    // The master keeps the latest result on the task.
    expect(await masterTask(master.url, 'http-ok')).toMatchObject({ state: 'TASK_RUNNING', healthy: true, healthCheck: 'HTTP' });
    expect(await masterTask(master.url, 'tcp-closed')).toMatchObject({ state: 'TASK_RUNNING', healthy: false, healthCheck: 'TCP' });
    expect(await masterTask(master.url, 'http-404')).toMatchObject({ state: 'TASK_KILLED', healthy: false, reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED' });

    // So does the command line.
    const described = await runCairn(['task', 'http-ok'], { CAIRN_MASTER: master.url });
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/Health:\s+healthy \(HTTP check\)/);
    const asJson = await runCairn(['task', 'tcp-closed', '-o', 'json'], { CAIRN_MASTER: master.url });
    expect(JSON.parse(asJson.stdout)).toMatchObject({ healthy: false });

    // Reconciliation answers with the health too.
    const mark = s.events.length;
    await s.call({ type: 'RECONCILE', reconcile: { tasks: [{ task_id: { value: 'http-ok' } }] } });
    const rec = await s.next((e) => e.type === 'UPDATE' && e.update.status.reason === 'REASON_RECONCILIATION', 10_000, mark);
    expect(rec.update.status.healthy).toBe(true);
  }, 180_000);

  it('refuses a check on a port the task does not hold, naming the field, and launches nothing', async () => {
    const { s, offer, agentId, firstPort: p } = await cluster();
    const bad = taskInfo('bad', agentId, { cpus: 0.1, mem: 32, ports: [[p, p]] }, 'sleep 60', { health_check: { type: 'HTTP', http: { port: p + 5 } } });
    const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [bad] } }] } });
    // As Mesos answers an invalid task: TASK_ERROR from the master, naming the field; never launched.
    expect(r.status, r.body).toBe(202);
    await waitFor('TASK_ERROR', () => updatesOf(s, 'bad').length > 0 || undefined, 20_000);
    const [error] = updatesOf(s, 'bad');
    expect(error).toMatchObject({ state: 'TASK_ERROR', reason: 'REASON_TASK_INVALID', source: 'SOURCE_MASTER' });
    expect(error.message).toContain('accept.operations[0].launch.task_infos[0].health_check.http.port');
    expect(updatesOf(s, 'bad').map((u: { state: string }) => u.state)).toEqual(['TASK_ERROR']);
  }, 60_000);

  it('an agent restarted with its tasks recovered resumes their checks', async () => {
    const { master, agent, agentOpts, s, offer, agentId } = await cluster();
    const info = taskInfo('resumed', agentId, { cpus: 0.1, mem: 32 }, 'exec sleep 600', {
      health_check: { type: 'COMMAND', command: { value: 'test ! -f sick' }, ...FAST, consecutive_failures: 2 },
    });
    expect((await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [info] } }] } })).status).toBe(202);
    await waitFor('healthy', () => updatesOf(s, 'resumed').some((u) => u.healthy === true), 60_000);

    await agent.kill('SIGKILL');
    await startAgentProcess(cleanup, master.url, agentOpts);
    // Made sick after the restart: only a resumed check can notice, and kill it.
    writeFileSync(join(sandboxDir(agentOpts.workDir, 'resumed'), 'sick'), '');
    await waitFor('killed by the resumed check', () => updatesOf(s, 'resumed').some((u) => u.state === 'TASK_KILLED'), 60_000);
    const end = updatesOf(s, 'resumed').at(-1)!;
    expect(end).toMatchObject({ state: 'TASK_KILLED', healthy: false, reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED' });
    expect(end.message).toContain("COMMAND 'test ! -f sick'");
    expect(updatesOf(s, 'resumed').some((u) => u.state === 'TASK_RUNNING' && u.healthy === false)).toBe(true);
  }, 180_000);
});
