// An experiment across a leader's death: three replicated masters as real processes and an
// agent that knows all three. Trials run; the leader is killed with SIGKILL mid-experiment;
// the new leader's tuning framework loads the replicated trials, resubscribes each
// experiment's framework with its stored id, reads on from where the trials' stdout was read,
// and the experiment completes with every trial recorded once and no trial run twice.

import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, waitFor } from '../harness/processes.ts';
import { getFromMaster, startFailoverCluster, waitForLeaderProcess } from '../harness/master-processes.ts';
import { authFetch } from '../harness/credentials.ts';
import type { ExperimentView } from '../../shared/tuning/views.ts';

const cleanup = new Cleanup();
afterAll(async () => {
  await cleanup.run();
}, 60_000);

function view(url: string, name: string): Promise<ExperimentView | undefined> {
  return getFromMaster<ExperimentView>(url, `/api/v1/experiments/${name}`);
}

describe('an experiment across a leader change', () => {
  it('completes on the next leader, with every finished trial recorded once', async () => {
    const cluster = await startFailoverCluster(cleanup, 'cairn-tuning-raft-', 'cpus:2;mem:1024;ports:[31000-31099]');
    const { base, members } = cluster;
    let lead = cluster.lead;

    // Trials 0-1 finish at once; later ones wait for the go file, so some run when the leader dies.
    const go = join(base, 'go');
    const res = await authFetch(`${lead.url}/api/v1/experiments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'Experiment', metadata: { name: 'survivor' },
        spec: {
          objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
          algorithm: { algorithmName: 'tpe', algorithmSettings: [{ name: 'n_startup_trials', value: '3' }] },
          parallelTrialCount: 2, maxTrialCount: 6, seed: 5,
          parameters: [{ name: 'x', parameterType: 'double', feasibleSpace: { min: '0', max: '1' } }],
          trialTemplate: {
            command: `echo step=1 accuracy=0; if [ "$CAIRN_TRIAL" -ge 2 ]; then while [ ! -f ${go} ]; do sleep 0.1; done; fi; echo accuracy=\${x}`,
            resources: { cpus: 0.25, memory: '32M' },
          },
        },
      }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const before = await waitFor('two trials done and two running', async () => {
      const v = await view(lead.url, 'survivor');
      return v && v.counts.Succeeded === 2 && v.counts.Running === 2 && v.trials.filter((t) => t.state === 'Running').every((t) => t.intermediate.length === 1) ? v : undefined;
    }, 60_000, 100);

    await lead.proc!.kill('SIGKILL');
    lead = await waitForLeaderProcess(members.filter((m) => m !== lead));
    // The new leader has the trials as they were, running ones still running (the same tasks).
    const after = await waitFor('the new leader\'s view', () => view(lead.url, 'survivor'), 30_000, 100);
    expect(after.trials.filter((t) => t.state === 'Running').map((t) => t.taskId)).toEqual(before.trials.filter((t) => t.state === 'Running').map((t) => t.taskId));
    writeFileSync(go, '');

    const done = await waitFor('the experiment to end on the new leader', async () => {
      const v = await view(lead.url, 'survivor');
      return v && v.phase !== 'Running' && v.counts.Running === 0 ? v : undefined;
    }, 120_000, 200);
    expect(done.phase, done.message).toBe('Succeeded');
    expect(done.reason).toBe('MaxTrialsReached');
    expect(done.trials.map((t) => t.index)).toEqual([0, 1, 2, 3, 4, 5]);
    // Every trial ran once (one attempt), and its result is its own parameter.
    for (const t of done.trials) {
      expect(t.state).toBe('Succeeded');
      expect(t.attempt).toBe(1);
      expect(t.value).toBeCloseTo(t.params.x as number, 10);
    }
    // The trials finished before the leader died kept their records unchanged.
    for (const t of before.trials.filter((x) => x.state === 'Succeeded')) expect(done.trials[t.index]).toEqual(t);
    // Each trial's task was launched once: the master knows exactly six tasks of the experiment.
    const state = await (await authFetch(`${lead.url}/api/v1/state`)).json();
    const launched = (state.tasks as { id: string; name: string }[]).filter((t) => t.name.startsWith('survivor-'));
    expect(launched.map((t) => t.id).sort()).toEqual(done.trials.map((t) => t.taskId).sort());
  }, 240_000);
});
