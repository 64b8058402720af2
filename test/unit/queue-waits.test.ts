// Queue waits for /metrics: a wait is counted once, when its record is placed, from when it
// was seen waiting (or its own queued time when it was placed in the write that made it);
// records already placed when following began, rewrites of a placed record, and waits that
// end in removal count nothing. Depth and the oldest wait follow what waits now.

import { describe, expect, it } from 'vitest';
import { followQueue, QueueWaits } from '../../shared/framework-host/queue-waits.ts';
import type { FrameworkStore, JsonValue, StorePut } from '../../shared/framework-host/store.ts';
import { jobQueueStatus } from '../../master/frameworks/jobs/metrics.ts';
import { trialQueueStatus } from '../../master/frameworks/tuning/metrics.ts';
import { newJobRecord } from '../../master/frameworks/jobs/record.ts';
import type { JobSpec } from '../../shared/jobs/model.ts';
import type { TrialRecord } from '../../master/frameworks/tuning/record.ts';

/** A store in memory whose writes call its listeners, as the registry's applied commands do. */
function memoryStore(): FrameworkStore {
  const data = new Map<string, JsonValue>();
  const listeners: ((keys: string[]) => void)[] = [];
  const store: FrameworkStore = {
    owner: 'test',
    get: <T extends JsonValue>(key: string) => data.get(key) as T | undefined,
    entries: <T extends JsonValue>(prefix = '') => [...data].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)) as [string, T][],
    write: async (puts: StorePut[]) => {
      for (const p of puts) {
        if (p.value === null) data.delete(p.key);
        else data.set(p.key, structuredClone(p.value));
      }
      for (const l of listeners) l(puts.map((p) => p.key));
    },
    put: (key, value) => store.write([{ key, value }]),
    onChange: (l) => {
      listeners.push(l);
      return () => listeners.splice(listeners.indexOf(l), 1);
    },
  };
  return store;
}

describe('QueueWaits', () => {
  it('counts a wait once, at its placement, from when it was seen waiting', () => {
    const w = new QueueWaits();
    w.update('a', { waitingSinceMs: 1_000 });
    w.update('b', { waitingSinceMs: 4_000 });
    expect(w.depth).toBe(2);
    expect(w.oldestSeconds(6_000)).toBe(5);
    w.update('a', { placedAtMs: 3_500, queuedAtMs: 0 });
    w.update('a', { placedAtMs: 3_500, queuedAtMs: 0 }); // rewritten while running: nothing more
    expect(w.histogram()).toMatchObject({ count: 1, sum: 2.5 });
    expect(w.depth).toBe(1);
    expect(w.oldestSeconds(6_000)).toBe(2);
    // Removed while waiting: no wait counted.
    w.update('b', undefined);
    expect(w.depth).toBe(0);
    expect(w.oldestSeconds(6_000)).toBe(0);
    expect(w.histogram().count).toBe(1);
    // Placed in the write that made it: from its own queued time.
    w.update('c', { placedAtMs: 10_000, queuedAtMs: 9_800 });
    expect(w.histogram()).toMatchObject({ count: 2, sum: 2.7 });
    // Queued again (a restart) and placed again: a second wait.
    w.update('a', { waitingSinceMs: 20_000 });
    w.update('a', { placedAtMs: 50_000, queuedAtMs: 20_000 });
    const h = w.histogram();
    expect(h.count).toBe(3);
    expect(h.cumulative[h.bounds.indexOf(30)]).toBe(3);
    expect(h.cumulative[h.bounds.indexOf(10)]).toBe(2);
  });

  it('seeded records count nothing until they change', () => {
    const w = new QueueWaits();
    w.seed('placed', { placedAtMs: 5_000, queuedAtMs: 1_000 });
    w.seed('waiting', { waitingSinceMs: 2_000 });
    w.update('placed', { placedAtMs: 5_000, queuedAtMs: 1_000 });
    expect(w.histogram().count).toBe(0);
    w.update('waiting', { placedAtMs: 7_000, queuedAtMs: 2_000 });
    expect(w.histogram()).toMatchObject({ count: 1, sum: 5 });
  });
});

describe("the frameworks' queue statuses, followed through a store", () => {
  const spec = { name: 'j', kind: 'batch', minAvailable: 1, groups: [{ name: 'w', replicas: 1, template: { command: 'true', cpus: 0.1, mem: 32 } }] } as unknown as JobSpec;

  it("a job waits from its Queued condition to its gang's placement", async () => {
    const store = memoryStore();
    const waits = followQueue(store, 'job/', jobQueueStatus);
    const r = newJobRecord(spec, [], 'u1', 1_000);
    await store.put('job/j', r as unknown as JsonValue);
    expect(waits.depth).toBe(1);
    expect(waits.oldestSeconds(4_000)).toBe(3);
    await store.put('job/j', { ...r, placedAtMs: 2_500 } as unknown as JsonValue);
    expect(waits.depth).toBe(0);
    expect(waits.histogram()).toMatchObject({ count: 1, sum: 1.5 });
    await store.put('job/j', { ...r, placedAtMs: 2_500, phase: 'Running' } as unknown as JsonValue);
    expect(waits.histogram().count).toBe(1);
  });

  it('a trial waits from its creation to its start, even when both are one write', async () => {
    const store = memoryStore();
    await store.put('trial/old/000000', { state: 'Succeeded', createdMs: 0, startedMs: 100 } as unknown as JsonValue);
    const waits = followQueue(store, 'trial/', trialQueueStatus);
    expect(waits.histogram().count).toBe(0);
    const t = { state: 'Starting', createdMs: 1_000, startedMs: 1_200 } as Partial<TrialRecord>;
    await store.put('trial/e/000000', t as unknown as JsonValue);
    expect(waits.histogram()).toMatchObject({ count: 1 });
    expect(waits.histogram().sum).toBeCloseTo(0.2, 9);
    await store.put('trial/e/000001', { state: 'Pending', createdMs: 2_000 } as unknown as JsonValue);
    expect(waits.depth).toBe(1);
    await store.put('trial/e/000001', null);
    expect(waits.depth).toBe(0);
    expect(waits.histogram().count).toBe(1);
  });
});
