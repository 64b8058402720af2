// The key-value state machine the simulated clients use (put, get, compare-and-set), the
// command encoding that travels through the Raft log, and the sequential model the
// linearizability checker compares histories against.

import type { Model, Operation } from './linearizability.ts';

export type KvValue = number | null;

export type KvInput =
  | { readonly op: 'put'; readonly key: string; readonly value: number }
  | { readonly op: 'get'; readonly key: string }
  | { readonly op: 'cas'; readonly key: string; readonly from: KvValue; readonly to: number };

/** put → true; get → the value; cas → whether it swapped. */
export type KvOutput = boolean | KvValue;

/** A command in the log: the client's request id (unique), and the operation. */
export interface KvCommand {
  readonly id: string;
  readonly input: KvInput;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeKvCommand(c: KvCommand): Uint8Array {
  return enc.encode(JSON.stringify(c));
}

export function decodeKvCommand(data: Uint8Array): KvCommand {
  return JSON.parse(dec.decode(data)) as KvCommand;
}

export class KvStore {
  readonly values = new Map<string, number>();

  /** Applies a write (put or cas) and returns its output. */
  apply(input: KvInput): KvOutput {
    const current = this.values.get(input.key) ?? null;
    switch (input.op) {
      case 'put':
        this.values.set(input.key, input.value);
        return true;
      case 'cas':
        if (current !== input.from) return false;
        this.values.set(input.key, input.to);
        return true;
      case 'get':
        return current;
    }
  }

  get(key: string): KvValue {
    return this.values.get(key) ?? null;
  }

  /** A canonical encoding: equal stores, equal bytes. */
  snapshot(): Uint8Array {
    const pairs = [...this.values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return enc.encode(JSON.stringify(pairs));
  }

  static restore(data: Uint8Array): KvStore {
    const s = new KvStore();
    if (data.length === 0) return s;
    for (const [k, v] of JSON.parse(dec.decode(data)) as [string, number][]) s.values.set(k, v);
    return s;
  }

  fingerprint(): string {
    return dec.decode(this.snapshot());
  }
}

/** One register per key; the store is linearizable iff every key's register is. */
export const kvModel: Model<KvValue, KvInput, KvOutput> = {
  init: () => null,
  step(state, input, output) {
    switch (input.op) {
      case 'put':
        return input.value;
      case 'get':
        if (output === undefined) return state;
        return output === state ? state : undefined;
      case 'cas':
        if (output === undefined) return state === input.from ? input.to : state;
        if (output === true) return state === input.from ? input.to : undefined;
        return state !== input.from ? state : undefined;
    }
  },
  key: (s) => String(s),
  partition(ops) {
    const byKey = new Map<string, Operation<KvInput, KvOutput>[]>();
    for (const op of ops) {
      let list = byKey.get(op.input.key);
      if (list === undefined) byKey.set(op.input.key, (list = []));
      list.push(op);
    }
    return [...byKey.values()];
  },
  describe(op) {
    const i = op.input;
    const args = i.op === 'put' ? `${i.value}` : i.op === 'cas' ? `${i.from}→${i.to}` : '';
    const out = op.output === undefined ? '?' : String(op.output);
    return `c${op.client} ${i.op}(${i.key}${args ? ', ' + args : ''}) = ${out} [${op.call}, ${op.ret}]`;
  },
};
