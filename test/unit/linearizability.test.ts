// The linearizability checker on small histories whose answer is known. Each history is
// written as a timeline: [call, return] per operation; ∞ marks an unknown outcome.

import { describe, expect, it } from 'vitest';
import { checkLinearizable, operationsOf, type HistoryEvent, type Operation } from '../sim/linearizability.ts';
import { kvModel, type KvInput, type KvOutput } from '../sim/kv.ts';

type Op = Operation<KvInput, KvOutput>;
const put = (client: number, key: string, value: number, call: number, ret: number): Op => ({ client, input: { op: 'put', key, value }, output: true, call, ret });
const get = (client: number, key: string, value: number | null, call: number, ret: number): Op => ({ client, input: { op: 'get', key }, output: value, call, ret });
const cas = (client: number, key: string, from: number | null, to: number, ok: boolean | undefined, call: number, ret: number): Op => ({
  client, input: { op: 'cas', key, from, to }, output: ok, call, ret,
});
const unknownPut = (client: number, key: string, value: number, call: number): Op => ({ client, input: { op: 'put', key, value }, output: undefined, call, ret: Infinity });

const linearizable = (ops: Op[]) => checkLinearizable(kvModel, ops).linearizable;

describe('linearizability checker (WGL)', () => {
  it('accepts a sequential history', () => {
    expect(linearizable([put(1, 'x', 1, 0, 1), get(1, 'x', 1, 2, 3), put(1, 'x', 2, 4, 5), get(1, 'x', 2, 6, 7)])).toBe(true);
  });

  it('accepts a read concurrent with a write seeing either value', () => {
    // put(x,1)  [0 ───── 10]
    // get(x)=0?   [2 ─ 4]        nothing written yet: null
    // get(x)=1       [5 ─ 6]
    expect(linearizable([put(1, 'x', 1, 0, 10), get(2, 'x', null, 2, 4), get(3, 'x', 1, 5, 6)])).toBe(true);
  });

  it('refuses a stale read after a completed write', () => {
    // put(x,1) [0 ─ 1]
    // get(x)=null      [2 ─ 3]   the write had returned: the read must see 1
    expect(linearizable([put(1, 'x', 1, 0, 1), get(2, 'x', null, 2, 3)])).toBe(false);
  });

  it('refuses a read going back in time', () => {
    // put(x,1) [0 ────────── 10]
    // get(x)=1   [1 ─ 2]
    // get(x)=null       [3 ─ 4]  once a read saw 1, a later read cannot see the old value
    expect(linearizable([put(1, 'x', 1, 0, 10), get(2, 'x', 1, 1, 2), get(3, 'x', null, 3, 4)])).toBe(false);
  });

  it('refuses a value nobody wrote', () => {
    expect(linearizable([put(1, 'x', 1, 0, 1), get(2, 'x', 7, 2, 3)])).toBe(false);
  });

  it('refuses two compare-and-sets from the same value both succeeding', () => {
    // cas(x, null→1) ok [0 ─── 5]
    // cas(x, null→2) ok   [1 ─── 6]   only one of them can have seen null
    expect(linearizable([cas(1, 'x', null, 1, true, 0, 5), cas(2, 'x', null, 2, true, 1, 6)])).toBe(false);
    expect(linearizable([cas(1, 'x', null, 1, true, 0, 5), cas(2, 'x', null, 2, false, 1, 6), get(3, 'x', 1, 7, 8)])).toBe(true);
  });

  it('refuses a failed compare-and-set whose expected value was there', () => {
    expect(linearizable([put(1, 'x', 1, 0, 1), cas(2, 'x', 1, 2, false, 2, 3)])).toBe(false);
  });

  it('lets an unknown write take effect late, or never', () => {
    // put(x,1) ?  [0 ─────────── ∞
    // get(x)=null     [2 ─ 3]
    // get(x)=1              [4 ─ 5]
    expect(linearizable([unknownPut(1, 'x', 1, 0), get(2, 'x', null, 2, 3), get(3, 'x', 1, 4, 5)])).toBe(true);
    // never took effect
    expect(linearizable([unknownPut(1, 'x', 1, 0), get(2, 'x', null, 2, 3), get(3, 'x', null, 4, 5)])).toBe(true);
    // but it cannot take effect before it was invoked
    expect(linearizable([get(2, 'x', 1, 0, 1), unknownPut(1, 'x', 1, 2)])).toBe(false);
    // nor flicker: seen, then unseen, then seen
    expect(linearizable([unknownPut(1, 'x', 1, 0), get(2, 'x', 1, 2, 3), get(3, 'x', null, 4, 5)])).toBe(false);
  });

  it('checks keys independently', () => {
    const ops = [put(1, 'x', 1, 0, 1), put(2, 'y', 5, 0, 1), get(3, 'x', 1, 2, 3), get(3, 'y', 5, 4, 5)];
    expect(checkLinearizable(kvModel, ops)).toEqual({ linearizable: true, partitions: 2, operations: 4 });
    expect(linearizable([...ops, get(1, 'y', null, 6, 7)])).toBe(false);
  });

  it('reports the partition that failed and how far it got', () => {
    const r = checkLinearizable(kvModel, [put(1, 'x', 1, 0, 1), put(1, 'x', 2, 2, 3), get(2, 'x', 1, 4, 5)]);
    expect(r.linearizable).toBe(false);
    if (r.linearizable === false) {
      expect(r.partition).toHaveLength(3);
      expect(r.longestPrefix.map((o) => o.input.op)).toEqual(['put', 'put']);
    }
  });

  it('handles many concurrent writers with memoization', () => {
    // 12 writers all concurrent, then a read of the last value: 12! orders, but the memo
    // keeps the search to (subsets × values).
    const ops: Op[] = [];
    for (let c = 0; c < 12; c++) ops.push(put(c, 'x', c, 0, 100));
    ops.push(get(99, 'x', 7, 101, 102));
    expect(linearizable(ops)).toBe(true);
    ops.push(get(98, 'x', 8, 103, 104));
    expect(linearizable(ops)).toBe(false);
  });

  it('builds operations from invoke/ok/fail/info events', () => {
    const events: HistoryEvent<KvInput, KvOutput>[] = [
      { type: 'invoke', client: 1, time: 0, input: { op: 'put', key: 'x', value: 1 } },
      { type: 'invoke', client: 2, time: 1, input: { op: 'put', key: 'x', value: 2 } },
      { type: 'ok', client: 1, time: 2, output: true },
      { type: 'fail', client: 2, time: 3 },
      { type: 'invoke', client: 2, time: 4, input: { op: 'put', key: 'x', value: 3 } },
      { type: 'info', client: 2, time: 5 },
      { type: 'invoke', client: 3, time: 6, input: { op: 'get', key: 'x' } },
    ];
    const ops = operationsOf(events);
    expect(ops.map((o) => [o.client, o.call, o.ret, o.output])).toEqual([
      [1, 0, 2, true],
      [2, 4, Infinity, undefined],
      [3, 6, Infinity, undefined],
    ]);
    // The failed put(x,2) is gone: a later read of 2 is impossible.
    expect(checkLinearizable(kvModel, [...ops, get(4, 'x', 2, 10, 11)]).linearizable).toBe(false);
    expect(checkLinearizable(kvModel, [...ops, get(4, 'x', 3, 10, 11)]).linearizable).toBe(true);
  });

  it('gives up with unknown rather than guessing when the budget runs out', () => {
    const ops: Op[] = [];
    for (let c = 0; c < 12; c++) ops.push(put(c, 'x', c, 0, 100));
    ops.push(get(99, 'x', 1000, 101, 102));
    expect(checkLinearizable(kvModel, ops, 50).linearizable).toBe('unknown');
  });
});
