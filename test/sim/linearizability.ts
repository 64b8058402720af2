// A linearizability checker in the style of Wing & Gong, with Lowe's memoization (the
// algorithm behind Knossos and Porcupine). Given a history of operations, each with the
// time it was invoked and the time it returned, it searches for a total order that
// respects real time (an operation that returned before another was invoked comes first)
// and in which every operation's output is what a sequential model would produce.
//
// Histories are recorded as events: invoke, then ok (returned, output known), fail
// (certainly did not take effect: dropped), or info (outcome unknown: it may take effect at
// any point after its invocation, or never — treated as returning at infinity with any
// output the model allows). A model can split a history into independent partitions (for a
// key-value store, one per key), each checked alone.

export interface Model<S, I, O> {
  init(): S;
  /** The state after applying `input` to `state` with result `output`; undefined if that result is impossible. `output` is undefined for an unknown outcome. */
  step(state: S, input: I, output: O | undefined): S | undefined;
  /** A string identifying a state, for the memo. */
  key(state: S): string;
  /** Groups operations that can be checked independently; default: one group. */
  partition?(ops: Operation<I, O>[]): Operation<I, O>[][];
  describe?(op: Operation<I, O>): string;
}

export interface Operation<I, O> {
  readonly client: number;
  readonly input: I;
  /** Undefined when the outcome is unknown. */
  readonly output: O | undefined;
  readonly call: number;
  /** Infinity when the outcome is unknown. */
  readonly ret: number;
}

export type HistoryEvent<I, O> =
  | { readonly type: 'invoke'; readonly client: number; readonly time: number; readonly input: I }
  | { readonly type: 'ok'; readonly client: number; readonly time: number; readonly output: O }
  | { readonly type: 'fail'; readonly client: number; readonly time: number }
  | { readonly type: 'info'; readonly client: number; readonly time: number };

/**
 * Pairs each client's invocation with its completion. A client has at most one operation
 * outstanding. Failed operations are dropped; unknown or never-completed ones return at
 * infinity with no output.
 */
export function operationsOf<I, O>(history: readonly HistoryEvent<I, O>[]): Operation<I, O>[] {
  const open = new Map<number, { input: I; call: number }>();
  const ops: Operation<I, O>[] = [];
  for (const e of history) {
    if (e.type === 'invoke') {
      if (open.has(e.client)) throw new Error(`client ${e.client} invoked twice without a completion`);
      open.set(e.client, { input: e.input, call: e.time });
      continue;
    }
    const o = open.get(e.client);
    if (o === undefined) throw new Error(`client ${e.client} completed an operation it did not invoke`);
    open.delete(e.client);
    if (e.type === 'ok') ops.push({ client: e.client, input: o.input, output: e.output, call: o.call, ret: e.time });
    else if (e.type === 'info') ops.push({ client: e.client, input: o.input, output: undefined, call: o.call, ret: Infinity });
  }
  for (const [client, o] of open) ops.push({ client, input: o.input, output: undefined, call: o.call, ret: Infinity });
  return ops;
}

export type CheckResult<I, O> =
  | { readonly linearizable: true; readonly partitions: number; readonly operations: number }
  | {
      readonly linearizable: false;
      /** The partition that failed, its operations in call order. */
      readonly partition: readonly Operation<I, O>[];
      /** The longest prefix of operations that could be linearized before the search got stuck. */
      readonly longestPrefix: readonly Operation<I, O>[];
    }
  | { readonly linearizable: 'unknown'; readonly reason: string };

interface Node<I, O> {
  op: Operation<I, O> | undefined;
  id: number;
  isCall: boolean;
  /** For a call: its return entry. */
  match: Node<I, O> | undefined;
  prev: Node<I, O> | undefined;
  next: Node<I, O> | undefined;
}

/**
 * Checks `ops` against `model`. `maxSteps` bounds the search per partition; past it the
 * answer is 'unknown' rather than a guess.
 */
export function checkLinearizable<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  maxSteps = 5_000_000,
): CheckResult<I, O> {
  const parts = model.partition ? model.partition([...ops]) : [[...ops]];
  for (const part of parts) {
    const r = checkPartition(model, part, maxSteps);
    if (r !== true) return r;
  }
  return { linearizable: true, partitions: parts.length, operations: ops.length };
}

function checkPartition<S, I, O>(model: Model<S, I, O>, ops: Operation<I, O>[], maxSteps: number): true | CheckResult<I, O> {
  const sorted = [...ops].sort((a, b) => a.call - b.call);
  const n = sorted.length;
  if (n === 0) return true;

  // The event list: calls and returns by time; at equal times calls come first, so that
  // operations touching the same instant count as concurrent (the permissive reading).
  const entries: Node<I, O>[] = [];
  sorted.forEach((op, id) => {
    const ret: Node<I, O> = { op, id, isCall: false, match: undefined, prev: undefined, next: undefined };
    const call: Node<I, O> = { op, id, isCall: true, match: ret, prev: undefined, next: undefined };
    entries.push(call, ret);
  });
  const timeOf = (e: Node<I, O>) => (e.isCall ? e.op!.call : e.op!.ret);
  entries.sort((a, b) => timeOf(a) - timeOf(b) || Number(b.isCall) - Number(a.isCall) || a.id - b.id);
  const head: Node<I, O> = { op: undefined, id: -1, isCall: false, match: undefined, prev: undefined, next: undefined };
  let prev = head;
  for (const e of entries) {
    prev.next = e;
    e.prev = prev;
    prev = e;
  }

  const lift = (call: Node<I, O>) => {
    call.prev!.next = call.next;
    if (call.next) call.next.prev = call.prev;
    const ret = call.match!;
    ret.prev!.next = ret.next;
    if (ret.next) ret.next.prev = ret.prev;
  };
  const unlift = (call: Node<I, O>) => {
    const ret = call.match!;
    ret.prev!.next = ret;
    if (ret.next) ret.next.prev = ret;
    call.prev!.next = call;
    if (call.next) call.next.prev = call;
  };

  // The set of linearized operations as a bitset; the memo key is its words and the state.
  const linearized = new Uint32Array(Math.ceil(n / 32));
  const memo = new Set<string>();
  const stack: { call: Node<I, O>; state: S }[] = [];
  let longest: Operation<I, O>[] = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;

  while (head.next !== undefined) {
    if (++steps > maxSteps) {
      return { linearizable: 'unknown', reason: `search exceeded ${maxSteps} steps on a partition of ${n} operations` };
    }
    if (entry === undefined) throw new Error('linearizability: ran off the end of the history');
    if (entry.isCall) {
      const op = entry.op!;
      const next = model.step(state, op.input, op.output);
      if (next !== undefined) {
        linearized[entry.id >>> 5] ^= 1 << (entry.id & 31);
        const key = `${linearized.join(',')}|${model.key(next)}`;
        if (!memo.has(key)) {
          memo.add(key);
          stack.push({ call: entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized[entry.id >>> 5] ^= 1 << (entry.id & 31);
      }
      entry = entry.next;
    } else {
      // An operation returned before any order could place it: undo the latest choice.
      if (stack.length > longest.length) longest = stack.map((s) => s.call.op!);
      const top = stack.pop();
      if (top === undefined) {
        return { linearizable: false, partition: sorted, longestPrefix: longest };
      }
      state = top.state;
      linearized[top.call.id >>> 5] ^= 1 << (top.call.id & 31);
      unlift(top.call);
      entry = top.call.next;
    }
  }
  return true;
}
