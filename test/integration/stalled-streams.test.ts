// Issue 22, finding 8 (second half): a framework that stops reading its event stream kept
// being offered the cluster, and everything the master sent it piled up in the master. Now a
// stream whose unsent bytes pass a bound (8 MiB beyond what the kernel holds) is cut, as if
// the client had hung up, and the master logs why: a scheduler is disconnected (its offers
// rescinded, its failover time-out started) and another framework is offered the agent it
// held; a Marathon /v2/events subscriber that stops reading is cut off the same way.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { authFetch, authHeaders } from '../harness/credentials.ts';
import { marathon, waitForNoDeployments } from '../harness/marathon.ts';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { RawScheduler } from '../harness/raw-scheduler.ts';

const cleanup = new Cleanup();
afterAll(() => cleanup.run());

const CPUS = 4;
const STALLED = 'a client stopped reading its event stream';

/** CPUs offered on `agentId` in `offers`. */
function cpusOn(offers: any[], agentId: string): number {
  return offers
    .filter((o) => o.agent_id.value === agentId)
    .flatMap((o) => o.resources as any[])
    .filter((r) => r.name === 'cpus')
    .reduce((n, r) => n + r.scalar.value, 0);
}

/** The master's log lines that say a stream was cut. */
const cutLines = (p: CairnProcess) => p.output.split('\n').filter((l) => l.includes(STALLED));

describe('a client that stops reading its event stream', () => {
  let master: CairnProcess;

  beforeAll(async () => {
    master = await startMasterProcess(cleanup);
    await startAgentProcess(cleanup, master.url, { resources: `cpus:${CPUS};mem:2048` });
  }, 60_000);

  it('a scheduler is disconnected past a bounded backlog, and the agent it held is offered to another', async () => {
    const stalled = new RawScheduler(master.url);
    const other = new RawScheduler(master.url);
    try {
      expect((await stalled.subscribe({ user: 'test', name: 'stalled', failover_timeout: 3600 })).status).toBe(200);
      // It is offered the whole agent (the built-in frameworks decline what they do not need).
      const agentId = await waitFor('the agent offered to the stalled framework', () => {
        const offers = stalled.offers();
        const agent = offers[0]?.agent_id.value as string | undefined;
        return agent !== undefined && cpusOn(offers, agent) === CPUS ? agent : undefined;
      }, 60_000, 100);
      stalled.stopReading();
      expect((await other.subscribe({ user: 'test', name: 'other', failover_timeout: 3600 })).status).toBe(200);

      // Its calls still go through, on their own connections: each RECONCILE of 1,000 tasks it
      // never launched is answered with 1,000 UPDATEs on the stream it no longer reads.
      const tasks = Array.from({ length: 1000 }, (_, i) => ({ task_id: { value: `never-launched-${'x'.repeat(150)}-${i}` } }));
      let calls = 0;
      await waitFor('the stalled framework disconnected', async () => {
        const state = await (await authFetch(`${master.url}/api/v1/state`)).json();
        const fw = state.frameworks.find((f: { id: string }) => f.id === stalled.frameworkId);
        if (fw && fw.connected === false) return true;
        expect(calls, 'calls before the stream was cut').toBeLessThan(200);
        const r = await stalled.call({ type: 'RECONCILE', reconcile: { tasks } });
        calls++;
        return r.status === 202 ? undefined : true;
      }, 180_000, 0);

      // Why, logged with the framework's id and the backlog.
      await waitFor('the cut logged', () => cutLines(master).some((l) => l.includes(stalled.frameworkId)) || undefined);
      // The agent it held is offered to the framework that reads, whole.
      await waitFor('the other framework offered the whole agent', () => cpusOn(other.offers(), agentId) === CPUS || undefined, 30_000, 100);
      const state = await (await authFetch(`${master.url}/api/v1/state`)).json();
      expect(state.offers.filter((o: { frameworkId: string }) => o.frameworkId === stalled.frameworkId)).toEqual([]);
      // Disconnected, not removed: its failover time-out runs, as for one that hung up.
      expect(state.frameworks.find((f: { id: string }) => f.id === stalled.frameworkId)).toMatchObject({ connected: false, failoverTimeoutS: 3600 });
    } finally {
      stalled.close();
      other.close();
    }
  }, 300_000);

  it('a Marathon /v2/events subscriber is cut off past a bounded backlog', async () => {
    const before = cutLines(master).length;
    // A subscriber that reads the headers, then nothing more.
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get(`${master.url}/v2/events`, { headers: { ...authHeaders(), accept: 'text/event-stream' } }, resolve);
      req.on('error', reject);
    });
    try {
      expect(res.statusCode).toBe(200);
      res.pause();
      res.socket.pause();
      // Each update of an app with a large environment (and no instances) is a few events
      // carrying its definition.
      const app = (n: number) => ({ id: '/stall/probe', cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 0, env: { BIG0: String(n % 10).repeat(60_000), BIG1: String(n % 10).repeat(60_000) } });
      const created = await marathon(master.url, 'POST', '/v2/apps', app(0));
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      let updates = 0;
      await waitFor('the subscriber cut off', async () => {
        if (cutLines(master).slice(before).some((l) => l.includes('/v2/events'))) return true;
        expect(updates, 'updates before the stream was cut').toBeLessThan(300);
        const r = await marathon(master.url, 'PUT', '/v2/apps/stall/probe?force=true', app(++updates));
        expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
        return undefined;
      }, 240_000, 0);
      await waitForNoDeployments(master.url);
      expect((await marathon(master.url, 'DELETE', '/v2/apps/stall/probe?force=true')).status).toBeLessThan(300);
    } finally {
      res.destroy();
    }
  }, 300_000);
});
