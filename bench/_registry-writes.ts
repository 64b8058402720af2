// Writes through a leader's registry, measured the same way by the raft and tls benches.

import type { MasterHandle } from '../master/server.ts';

/**
 * Writes through a leader's registry: after a warm-up, `oneClientWrites` one at a time
 * (latency), then 64 clients each writing as fast as its previous write commits for
 * `seconds` (throughput).
 */
export async function registryWriteFigures(registry: MasterHandle['context']['registry'], oneClientWrites: number, seconds = 5): Promise<{ lat: number[]; perSecond: number }> {
  const write = (i: number) => registry.submit({ type: 'role_weight_set', role: `r${i % 1000}`, weight: 1 + (i % 7) });
  for (let i = 0; i < 500; i++) await write(i);
  const lat: number[] = [];
  for (let i = 0; i < oneClientWrites; i++) {
    const t0 = performance.now();
    await write(i);
    lat.push(performance.now() - t0);
  }
  let done = 0;
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 64 }, async (_, c) => {
    for (let i = c; performance.now() < until; i += 64) {
      await write(i);
      done++;
    }
  }));
  return { lat, perSecond: done / ((performance.now() - t0) / 1000) };
}
