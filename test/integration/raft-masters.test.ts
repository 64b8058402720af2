// Three replicated masters as real processes on loopback, an agent that knows all three,
// and a framework: SIGKILL the leader again and again; every acknowledged registry write
// survives, the agent follows the new leader on its own, and a running task stays RUNNING.

import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, freePort, startAgentProcess, startCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { SchedulerClient } from '../../shared/sdk/scheduler-client.ts';
import type { TaskStatusJson } from '../../shared/mesos-v1.ts';
import { authFetch, TEST_USER } from '../harness/credentials.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterAll(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

interface Member { id: number; url: string; dataDir: string; proc: CairnProcess | undefined }

async function state(url: string): Promise<any> {
  const r = await authFetch(`${url}/api/v1/state`, { signal: AbortSignal.timeout(2000) });
  return r.json();
}

describe('replicated masters', () => {
  it('loses no acknowledged write and no running task over ten leader kills', async () => {
    const base = cleanup.dir('cairn-raft-');
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, 'a-test-secret-of-enough-bytes\n');
    const ports = [await freePort(), await freePort(), await freePort()];
    const members: Member[] = ports.map((p, i) => ({ id: i + 1, url: `http://127.0.0.1:${p}`, dataDir: join(base, `m${i + 1}`), proc: undefined }));
    const peers = members.map((m) => `${m.id}=${m.url}`).join(',');
    const start = async (m: Member) => {
      m.proc = cleanup.track(startCairn(['master', '--id', String(m.id), '--peers', peers, '--secret-file', secretFile, '--port', new URL(m.url).port, '--host', '127.0.0.1', '--data-dir', m.dataDir, '--dns-port', '0', '--ping-interval', '500ms'], m.url));
      await m.proc.waitHealthy();
    };
    await Promise.all(members.map(start));
    const leader = async (among = members): Promise<Member> =>
      waitFor('a leader', async () => {
        for (const m of among) {
          try {
            if ((await state(m.url)).master.role === 'leader') return m;
          } catch {
            // down or starting
          }
        }
        return undefined;
      }, 20_000, 50);

    let lead = await leader();
    await startAgentProcess(cleanup, members.map((m) => m.url).join(','), { resources: 'cpus:2;mem:1024' });
    await waitFor('agent registered with the leader', async () => ((await state(lead.url)).agents[0]?.connected ? true : undefined), 15_000);

    // A framework with a long-running task.
    const fw = new RawScheduler(lead.url);
    schedulers.push(fw);
    await fw.subscribe({ user: '', name: 'keeper', failover_timeout: 3600 });
    const offer = (await fw.next((e) => e.type === 'OFFERS')).offers.offers[0];
    await fw.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('long', offer.agent_id.value, { cpus: 0.5, mem: 32 }, 'sleep 600')] } }] } });
    await fw.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING');
    fw.close();

    // A framework through the SDK that knows every master and stays subscribed throughout:
    // it must follow each new leader by itself and hear of its task from whichever leads.
    const sdkFw = new SchedulerClient({ masterUrl: members.map((m) => m.url).join(','), token: TEST_USER.secret, frameworkInfo: { name: 'follower', user: '', failover_timeout: 3600 }, maxBackoffMs: 300 });
    const heard: TaskStatusJson[] = [];
    let resubscriptions = 0;
    sdkFw.on('update', (st) => void heard.push(st));
    sdkFw.on('subscribed', (_id, info) => {
      if (info.resubscribed) resubscriptions++;
    });
    let launched = false;
    sdkFw.on('offers', (offers) => {
      if (launched || offers.length === 0) return;
      launched = true;
      const o = offers[0]!;
      void sdkFw.accept([o.id.value], [taskInfo('watched', o.agent_id.value, { cpus: 0.2, mem: 32 }, 'sleep 600') as never]);
    });
    await sdkFw.subscribe();
    await waitFor('watched running', () => heard.some((st) => st.task_id.value === 'watched' && st.state === 'TASK_RUNNING'), 15_000);

    const acknowledged: string[] = [];
    for (let round = 0; round < 10; round++) {
      lead = await leader();
      // Writes through the REST API: each subscription acknowledged (SUBSCRIBED) is a registry change.
      for (let i = 0; i < 3; i++) {
        const w = new RawScheduler(lead.url);
        const r = await w.subscribe({ user: 'w', name: `writer-${round}-${i}`, failover_timeout: 3600 });
        if (r.status === 200) acknowledged.push(w.frameworkId);
        w.close();
      }
      await lead.proc!.kill('SIGKILL');
      const survivors = members.filter((m) => m !== lead);
      const next = await leader(survivors);
      expect(next).not.toBe(lead);
      for (const m of survivors) {
        const ids = await waitFor(`writes applied on master ${m.id}`, async () => {
          const st = await state(m.url);
          const have = new Set(st.frameworks.map((f: any) => f.id));
          return acknowledged.every((id) => have.has(id)) ? have : undefined;
        }, 10_000);
        expect(ids.size).toBeGreaterThanOrEqual(acknowledged.length);
      }
      // The task is RUNNING on the new leader, and the agent has followed it.
      const st = await state(next.url);
      expect(st.tasks.find((t: any) => t.id === 'long')?.state).toBe('TASK_RUNNING');
      await waitFor('agent on the new leader', async () => ((await state(next.url)).agents[0]?.connected ? true : undefined), 15_000);
      await start(lead); // back as a follower, so the next round keeps a quorum after its kill
    }
    expect(acknowledged).toHaveLength(30);

    // The SDK framework resubscribed after every kill, with no address changed, and gets the
    // end of its task, killed through the current leader, from that leader.
    lead = await leader();
    expect(resubscriptions).toBeGreaterThanOrEqual(10);
    await waitFor('the framework on the current leader', async () => ((await state(lead.url)).frameworks.find((f: any) => f.name === 'follower')?.connected ? true : undefined), 15_000);
    expect(new URL(sdkFw.endpointUrl).origin).toBe(lead.url);
    expect((await authFetch(`${lead.url}/api/v1/tasks/watched/kill`, { method: 'POST' })).status).toBe(202);
    await waitFor('TASK_KILLED at the framework', () => heard.some((st) => st.task_id.value === 'watched' && st.state === 'TASK_KILLED'), 15_000);
    sdkFw.close();

    // The framework resubscribes to the current leader and hears its task is still running.
    lead = await leader();
    const again = new RawScheduler(lead.url);
    schedulers.push(again);
    expect((await again.subscribe({ user: '', name: 'keeper', failover_timeout: 3600, id: { value: fw.frameworkId } }, fw.frameworkId)).status).toBe(200);
    await again.call({ type: 'RECONCILE', reconcile: { tasks: [{ task_id: { value: 'long' } }] } });
    const rec = await again.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'long');
    expect(rec.update.status.state).toBe('TASK_RUNNING');
    // A follower redirects the scheduler API to the leader.
    const follower = members.find((m) => m !== lead)!;
    const redirect = await waitFor('a redirect from a follower that knows the leader', async () => {
      const r = await authFetch(`${follower.url}/api/v1/scheduler`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', redirect: 'manual' });
      return r.status === 503 ? undefined : r; // 503: it has not heard from the leader yet
    });
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get('location')).toBe(`${lead.url}/api/v1/scheduler`);
  }, 180_000);
});
