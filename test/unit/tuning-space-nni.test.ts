// NNI's search space: every _type, randint's excluded upper end, nested choices, and each
// refusal naming the parameter's path.

import { describe, expect, it } from 'vitest';
import { refusal } from '../harness/refusal.ts';
import { parseNniSpace } from '../../shared/tuning/space/nni-format.ts';

const one = (type: string, value: unknown) => parseNniSpace({ x: { _type: type, _value: value } }).params[0];

describe('parseNniSpace', () => {
  it('reads every type', () => {
    expect(one('choice', [1, 'two', true])).toEqual({
      kind: 'categorical', name: 'x', choices: [{ value: 1 }, { value: 'two' }, { value: true }],
    });
    // [2, 5) in NNI is 2, 3 or 4.
    expect(one('randint', [2, 5])).toEqual({ kind: 'int', name: 'x', low: 2, high: 4, log: false, step: 1 });
    expect(one('uniform', [-1, 1])).toEqual({ kind: 'double', name: 'x', low: -1, high: 1, log: false });
    expect(one('quniform', [0, 10, 2.5])).toEqual({ kind: 'double', name: 'x', low: 0, high: 10, log: false, q: 2.5 });
    expect(one('loguniform', [1e-4, 1e-1])).toEqual({ kind: 'double', name: 'x', low: 1e-4, high: 1e-1, log: true });
    expect(one('qloguniform', [1, 1000, 10])).toEqual({ kind: 'double', name: 'x', low: 1, high: 1000, log: true, q: 10 });
    expect(one('normal', [0, 2])).toEqual({ kind: 'normal', name: 'x', mu: 0, sigma: 2, log: false });
    expect(one('qnormal', [5, 1, 0.5])).toEqual({ kind: 'normal', name: 'x', mu: 5, sigma: 1, log: false, q: 0.5 });
    expect(one('lognormal', [-3, 1])).toEqual({ kind: 'normal', name: 'x', mu: -3, sigma: 1, log: true });
    expect(one('qlognormal', [2, 0.5, 1])).toEqual({ kind: 'normal', name: 'x', mu: 2, sigma: 0.5, log: true, q: 1 });
  });

  it('keeps the order of the document', () => {
    const space = parseNniSpace({
      lr: { _type: 'loguniform', _value: [1e-4, 1e-1] },
      batch_size: { _type: 'choice', _value: [16, 32] },
      dropout: { _type: 'uniform', _value: [0, 0.5] },
    });
    expect(space.params.map((p) => p.name)).toEqual(['lr', 'batch_size', 'dropout']);
  });

  it('reads a nested choice into choices carrying their own parameters', () => {
    const space = parseNniSpace({
      optimizer: {
        _type: 'choice',
        _value: [
          { _name: 'sgd', lr: { _type: 'uniform', _value: [0.01, 0.1] }, momentum: { _type: 'choice', _value: [0.9, 0.99] } },
          { _name: 'adam', lr: { _type: 'loguniform', _value: [1e-4, 1e-2] } },
          { _name: 'plain' },
          'none',
        ],
      },
    });
    expect(space).toEqual({
      params: [{
        kind: 'categorical',
        name: 'optimizer',
        choices: [
          {
            value: 'sgd',
            sub: {
              params: [
                { kind: 'double', name: 'lr', low: 0.01, high: 0.1, log: false },
                { kind: 'categorical', name: 'momentum', choices: [{ value: 0.9 }, { value: 0.99 }] },
              ],
            },
          },
          { value: 'adam', sub: { params: [{ kind: 'double', name: 'lr', low: 1e-4, high: 1e-2, log: true }] } },
          { value: 'plain' },
          { value: 'none' },
        ],
      }],
    });
  });

  it('refuses an unknown type, listing the known ones', () => {
    const err = refusal(() => parseNniSpace({ lr: { _type: 'logUniform', _value: [1, 2] } }));
    expect(err.field).toBe('lr._type');
    expect(err.message).toMatch(/unknown type "logUniform"; known types: choice, randint, uniform, quniform, loguniform/);
    expect(refusal(() => parseNniSpace({ lr: { _value: [1, 2] } })).message).toMatch(/^lr\._type: missing/);
    expect(refusal(() => parseNniSpace({ lr: { _type: 'uniform', _values: [1, 2] } })).field).toBe('lr._values');
    expect(refusal(() => parseNniSpace({ lr: [1, 2] })).field).toBe('lr');
  });

  it('refuses the wrong number of values', () => {
    const err = refusal(() => parseNniSpace({ lr: { _type: 'quniform', _value: [0, 1] } }));
    expect(err.field).toBe('lr._value');
    expect(err.message).toMatch(/quniform takes \[low, high, q\], got 2 value/);
    expect(refusal(() => parseNniSpace({ m: { _type: 'normal', _value: [0, 1, 2] } })).message).toMatch(/normal takes \[mu, sigma\], got 3/);
    expect(refusal(() => parseNniSpace({ m: { _type: 'uniform', _value: 3 } })).field).toBe('m._value');
    expect(refusal(() => parseNniSpace({ m: { _type: 'uniform', _value: [0, '1'] } })).field).toBe('m._value[1]');
  });

  it('refuses empty ranges, non-positive log bounds, sigmas and q', () => {
    expect(() => parseNniSpace({ lr: { _type: 'uniform', _value: [2, 1] } })).toThrow(/lr\._value: low > high \(2 > 1\)/);
    expect(() => parseNniSpace({ lr: { _type: 'qloguniform', _value: [10, 1, 1] } })).toThrow(/lr\._value: low > high/);
    const zero = refusal(() => parseNniSpace({ lr: { _type: 'loguniform', _value: [0, 1] } }));
    expect(zero.field).toBe('lr._value[0]');
    expect(zero.message).toMatch(/loguniform's low must be > 0, got 0/);
    expect(refusal(() => parseNniSpace({ lr: { _type: 'loguniform', _value: [-1, 1] } })).field).toBe('lr._value[0]');
    const sigma = refusal(() => parseNniSpace({ w: { _type: 'lognormal', _value: [0, 0] } }));
    expect(sigma.field).toBe('w._value[1]');
    expect(sigma.message).toMatch(/sigma must be > 0/);
    expect(refusal(() => parseNniSpace({ w: { _type: 'quniform', _value: [0, 1, 0] } })).field).toBe('w._value[2]');
  });

  it("refuses a randint whose range is empty or not whole numbers", () => {
    expect(refusal(() => parseNniSpace({ n: { _type: 'randint', _value: [3, 3] } })).message).toMatch(/n\._value: randint's upper is excluded: needs lower < upper, got \[3, 3\)/);
    expect(refusal(() => parseNniSpace({ n: { _type: 'randint', _value: [0, 2.5] } })).field).toBe('n._value[1]');
  });

  it('refuses an empty choice, a repeated value, and an empty space', () => {
    const empty = refusal(() => parseNniSpace({ c: { _type: 'choice', _value: [] } }));
    expect(empty.field).toBe('c._value');
    expect(empty.message).toMatch(/at least one value/);
    expect(refusal(() => parseNniSpace({ c: { _type: 'choice', _value: ['a', 'b', 'a'] } })).field).toBe('c._value[2]');
    expect(refusal(() => parseNniSpace({ c: { _type: 'choice', _value: [null] } })).field).toBe('c._value[0]');
    const none = refusal(() => parseNniSpace({}));
    expect(none.field).toBe('searchSpace');
    expect(none.message).toMatch(/no parameters/);
    expect(refusal(() => parseNniSpace({}, 'spec.searchSpace')).field).toBe('spec.searchSpace');
    expect(refusal(() => parseNniSpace([])).field).toBe('searchSpace');
  });

  it('names the path through a nested choice, under the caller\'s field', () => {
    const bad = {
      optimizer: {
        _type: 'choice',
        _value: ['none', { _name: 'sgd', lr: { _type: 'uniform', _value: [1, 0] } }],
      },
    };
    expect(refusal(() => parseNniSpace(bad)).field).toBe('optimizer._value[1].lr._value');
    expect(refusal(() => parseNniSpace(bad, 'spec.searchSpace')).field).toBe('spec.searchSpace.optimizer._value[1].lr._value');
    const noName = refusal(() => parseNniSpace({ o: { _type: 'choice', _value: [{ lr: { _type: 'uniform', _value: [0, 1] } }] } }));
    expect(noName.field).toBe('o._value[0]._name');
  });

  it('allows one nested name under two choices, but not a top-level name it would clash with', () => {
    const lr = { _type: 'uniform', _value: [0, 1] };
    const optimizer = { _type: 'choice', _value: [{ _name: 'sgd', lr }, { _name: 'adam', lr }] };
    expect(parseNniSpace({ optimizer }).params).toHaveLength(1);
    const clash = refusal(() => parseNniSpace({ 'optimizer.lr': lr, optimizer }));
    expect(clash.field).toBe('optimizer._value[0].lr');
    expect(clash.message).toMatch(/full name "optimizer\.lr" is also the name of \["optimizer\.lr"\]/);
  });
});
