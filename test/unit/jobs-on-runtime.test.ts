// The jobs framework as it runs on the master (master/frameworks/jobs/runtime.ts) on the
// framework runtime, driven through a fake transport and clock: its job's record is durable
// before the ACCEPT that launches it is sent, and it resubscribes with its recorded id.

import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../../shared/jobs/model.ts';
import { FAILOVER_TIMEOUT_S } from '../../shared/framework-runtime/failover.ts';
import { JobsRuntime } from '../../master/frameworks/jobs/runtime.ts';
import { FakeClock, fakeOffer, fakeWorld, flush, launchedTaskId } from '../harness/fake-scheduler.ts';

function spec(name: string): JobSpec {
  return {
    name, kind: 'batch', minAvailable: 1, successPolicy: 'Default', failurePolicies: [], backoffLimit: 3, cleanupPolicy: 'Running', role: '*', priority: 0,
    groups: [{ name: 'worker', replicas: 1, restartPolicy: 'Never', template: { command: 'true', cpus: 1, memMb: 128, diskMb: 0, gpus: 0, ports: 0, env: {}, volumes: [] } }],
  };
}

function setup() {
  const w = fakeWorld('jobs');
  return { ...w, start: () => new JobsRuntime(w.env, { gatherMs: 400, ...w.io }) };
}

/** Moves the fake clock in ticks, letting the queue run between them. */
async function advance(clock: FakeClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 100) {
    clock.advance(100);
    await flush();
  }
}

describe('the jobs framework on the framework runtime', () => {
  it('writes the job\'s record, durably, before the ACCEPT that launches it', async () => {
    const { log, clock, store, transports, start } = setup();
    const rt = start();
    try {
      await rt.submit(spec('train'), []);
      expect(store.m.has('job/train')).toBe(true);
      expect(transports).toHaveLength(1);
      expect(transports[0]!.info).toMatchObject({ name: 'jobs', failover_timeout: FAILOVER_TIMEOUT_S, capabilities: [{ type: 'GPU_RESOURCES' }] });
      transports[0]!.accept('fw-1');
      await flush();
      expect(log.slice(-3)).toEqual(['put framework-id', 'RECONCILE', 'REVIVE']);

      // The next write (the replica launched) waits: nothing may be sent meanwhile.
      const release = store.hold();
      transports[0]!.emit('offers', [fakeOffer('o1', 'fw-1')]);
      await advance(clock, 1_000);
      expect(transports[0]!.calls.map((c) => c.type)).not.toContain('ACCEPT');
      release();
      await flush();
      await advance(clock, 200);
      const accept = log.indexOf('ACCEPT');
      expect(accept).toBeGreaterThan(-1);
      expect(log.lastIndexOf('put job/train', accept)).toBeGreaterThan(log.indexOf('REVIVE'));
      const call = transports[0]!.calls.find((c) => c.type === 'ACCEPT')!;
      expect(call).toMatchObject({ framework_id: { value: 'fw-1' }, accept: { offer_ids: [{ value: 'o1' }] } });
      const launched = launchedTaskId(call)!;
      // The record that was durable first names the task the ACCEPT launches.
      expect(JSON.stringify(store.m.get('job/train'))).toContain(launched);
    } finally {
      rt.stop();
    }
  });

  it('a new instance (the next leader) subscribes with the framework id the last one recorded', async () => {
    const { transports, start } = setup();
    const first = start();
    await first.submit(spec('train'), []);
    transports[0]!.accept('fw-1');
    await flush();
    first.stop();
    expect(transports[0]!.closed).toBe(true);
    const next = start();
    try {
      expect(transports).toHaveLength(2);
      expect(transports[1]!.info.id).toEqual({ value: 'fw-1' });
    } finally {
      next.stop();
    }
  });
});
