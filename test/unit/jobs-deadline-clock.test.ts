// activeDeadlineSeconds across a leader change whose clock reads differently (finding 13 of
// issue 22): a leader that resumes a job counts its active time on from what the record
// holds (activeMs, written while the deadline runs), not from startedAtMs on its own clock —
// so a new leader whose wall clock is two hours ahead fails no job early, and one two hours
// behind does not hold the deadline back by two hours; nor does it wait two hours for a
// back-off or a placement try an earlier leader timed.

import { describe, expect, it } from 'vitest';
import { Resources } from '../../shared/resources.ts';
import { ACTIVE_CHECKPOINT_MAX_MS, JobEngine, type EngineOptions } from '../../master/frameworks/jobs/engine.ts';
import type { JobSpec } from '../../shared/jobs/model.ts';
import type { JobRecord } from '../../master/frameworks/jobs/record.ts';

const OPTS: EngineOptions = { domain: 'cairn', gatherMs: 2_000, backoffBaseMs: 1_000, backoffMaxMs: 8_000, restartBackoff: { initialMs: 1, factor: 2, maxMs: 4, resetAfterMs: 1_000 } };
const HOUR = 3_600_000;
const DEADLINE_S = 600;

function spec(): JobSpec {
  return {
    name: 'd', kind: 'batch', minAvailable: 1, successPolicy: 'Default', failurePolicies: [], backoffLimit: 3, cleanupPolicy: 'Running', role: '*', priority: 0,
    activeDeadlineSeconds: DEADLINE_S,
    groups: [{ name: 'worker', replicas: 1, restartPolicy: 'OnFailure', template: { command: 'sleep 1000', cpus: 1, memMb: 64, diskMb: 0, gpus: 0, ports: 0, env: {}, volumes: [] } }],
  };
}

function engine(): JobEngine {
  const e = new JobEngine(OPTS);
  e.setClusterTotals([Resources.parse('cpus:4;mem:1024')]);
  return e;
}

/** A job started at 100 on the first leader's clock, ticked to `untilMs`; returns the record as last written. */
function runFirstLeader(untilMs: number): JobRecord {
  const e = engine();
  e.submit(spec(), [], 'u', 0);
  e.offers([{ id: 'o1', agentId: 'a1', hostname: 'h1', ip: '10.0.0.1', resources: Resources.parse('cpus:4;mem:1024'), role: '*' }], 100);
  let written: JobRecord | undefined;
  for (let t = 100; t <= untilMs; t += 200) {
    e.tick(t);
    const w = e.takeEffects().writes.get('d');
    if (w) written = structuredClone(w);
  }
  expect(written?.startedAtMs).toBe(100);
  return written!;
}

function resumeAt(record: JobRecord, clockOffsetMs: number, firstTickMs: number): { e: JobEngine; at: (ms: number) => string } {
  const e = engine();
  e.load([record]);
  e.tick(firstTickMs + clockOffsetMs);
  return { e, at: (ms) => (e.tick(ms + clockOffsetMs), e.get('d')!.phase) };
}

describe('activeDeadlineSeconds across leaders whose clocks differ', () => {
  it('writes the active time while the deadline runs', () => {
    const r = runFirstLeader(130_100);
    // A 600 s deadline is checkpointed every 60 s: 120 s by 130 s.
    expect(r.activeMs).toBe(120_000);
    expect(r.phase).not.toBe('Failed');
  });

  for (const offset of [2 * HOUR, -2 * HOUR]) {
    it(`a new leader whose clock is ${offset > 0 ? 'two hours ahead' : 'two hours behind'} neither fails the job early nor holds it back`, () => {
      const r = runFirstLeader(130_100);
      // The first leader died at 130.1 s; the second takes over at 135 s (real time).
      const { e, at } = resumeAt(r, offset, 135_000);
      // On the old code a +2 h clock failed the job here, 35 s after it started.
      expect(e.get('d')!.phase).not.toBe('Failed');
      // Active 120 s as recorded, counted on from the take-over: the deadline is due at
      // 135 s + 480 s, 15 s late (the time since the last checkpoint and the take-over) and no
      // more than a checkpoint plus the take-over late.
      expect(at(614_000)).not.toBe('Failed');
      expect(at(615_000)).toBe('Failed');
      expect(e.get('d')!.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'DeadlineExceeded' });
      expect(615_000 - (100 + DEADLINE_S * 1000)).toBeLessThanOrEqual(ACTIVE_CHECKPOINT_MAX_MS + 5_000);
    });
  }

  it('a new leader whose clock is two hours behind does not make an inherited job wait two hours', () => {
    const first = engine();
    first.submit(spec(), [], 'u', 2 * HOUR);
    const queued = structuredClone(first.takeEffects().writes.get('d')!);
    expect(queued.phase).toBe('Queued');
    // Its next placement try was due at the first leader's 2 h; the second reads 10 s.
    const e = engine();
    e.load([queued]);
    // At most the longest placement back-off (8 s here) away, not two hours.
    e.tick(10_000);
    e.offers([{ id: 'o1', agentId: 'a1', hostname: 'h1', ip: '10.0.0.1', resources: Resources.parse('cpus:4;mem:1024'), role: '*' }], 10_000 + OPTS.backoffMaxMs);
    expect(e.takeEffects().launches.length).toBe(1);
    expect(e.get('d')!.startedAtMs).toBe(10_000 + OPTS.backoffMaxMs);
  });

  it('a record of a version without activeMs still counts from startedAtMs', () => {
    const r = runFirstLeader(10_100);
    delete r.activeMs;
    const { at } = resumeAt(r, 0, 20_000);
    expect(at(600_000)).not.toBe('Failed');
    expect(at(600_100)).toBe('Failed');
  });
});
