// A training job across a leader's death: three replicated masters as real processes and an
// agent that knows all three. The job's replicas run; the leader is killed with SIGKILL; the
// new leader's jobs framework resumes from the replicated records: the same tasks go on
// (nothing launched twice), the job is seen from every master, and it succeeds on the new
// leader once its replicas exit.

import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, waitFor } from '../harness/processes.ts';
import { getFromMaster, startFailoverCluster, waitForLeaderProcess } from '../harness/master-processes.ts';
import { authFetch } from '../harness/credentials.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const cleanup = new Cleanup();
afterAll(async () => {
  await cleanup.run();
}, 60_000);

function job(url: string, name: string): Promise<JobView | undefined> {
  return getFromMaster<JobView>(url, `/api/v1/jobs/${name}`);
}

describe('training jobs across a leader change', () => {
  it('the next leader carries on with the same replicas, and the job succeeds there', async () => {
    const cluster = await startFailoverCluster(cleanup, 'cairn-jobs-raft-', 'cpus:2;mem:1024;ports:[31000-31099]');
    const { base, members } = cluster;
    let lead = cluster.lead;

    // Each replica runs until the test says go.
    const go = join(base, 'go');
    const res = await authFetch(`${lead.url}/api/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'survivor', kind: 'pytorch', groups: [
        { name: 'master', template: { command: `while [ ! -f ${go} ]; do sleep 0.2; done; echo "rank $RANK done"`, cpus: 0.25, mem: 32 } },
        { name: 'worker', replicas: 2, template: { command: `while [ ! -f ${go} ]; do sleep 0.2; done`, cpus: 0.25, mem: 32 } },
      ] }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const running = await waitFor('the job running', async () => {
      const j = await job(lead.url, 'survivor');
      return j?.phase === 'Running' ? j : undefined;
    }, 30_000, 100);
    const tasks = running.replicas.map((r) => r.taskId);

    await lead.proc!.kill('SIGKILL');
    const survivors = members.filter((m) => m !== lead);
    lead = await waitForLeaderProcess(survivors);

    // The new leader's framework subscribed with the stored id, reconciled, and changed nothing.
    await waitFor('the jobs framework on the new leader', async () => {
      const st = await (await authFetch(`${lead.url}/api/v1/state`)).json();
      return st.frameworks.find((f: { name: string; connected?: boolean }) => f.name === 'jobs' && f.connected) ? true : undefined;
    }, 30_000, 100);
    const after = (await job(lead.url, 'survivor'))!;
    expect(after.phase).toBe('Running');
    expect(after.replicas.map((r) => r.taskId)).toEqual(tasks);

    writeFileSync(go, '');
    // The master's end decides the job; the workers' own ends are recorded a moment later.
    const done = await waitFor('the job succeeded and every replica ended', async () => {
      const j = await job(lead.url, 'survivor');
      return j?.phase === 'Succeeded' && !j.replicas.some((r) => r.state === 'Starting' || r.state === 'Running') ? j : undefined;
    }, 30_000, 100);
    expect(done.restarts).toBe(0);
    expect(done.replicas.map((r) => r.taskId)).toEqual(tasks);
    expect(done.replicas.every((r) => r.state === 'Succeeded' && r.restarts === 0)).toBe(true);
    // Every master answers with the same record.
    for (const m of survivors) expect((await job(m.url, 'survivor'))?.phase).toBe('Succeeded');
    // No task of the job but the first three was ever launched.
    const st = await (await authFetch(`${lead.url}/api/v1/state`)).json();
    const jobTasks = st.tasks.filter((t: { id: string }) => t.id.startsWith('survivor.'));
    expect(jobTasks.map((t: { id: string }) => t.id).sort()).toEqual([...tasks].sort());
  }, 120_000);
});
