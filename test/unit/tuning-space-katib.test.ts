// A Katib experiment's parameters: its four types, its string numbers, its distributions read
// as Katib's suggestion services read them, and the refusals naming the field.

import { describe, expect, it } from 'vitest';
import { refusal } from '../harness/refusal.ts';
import { parseKatibParameters } from '../../shared/tuning/space/katib-format.ts';

const one = (parameterType: string, feasibleSpace: unknown) =>
  parseKatibParameters([{ name: 'x', parameterType, feasibleSpace }]).params[0];

describe('parseKatibParameters', () => {
  it("reads Katib's random example, numbers written as strings", () => {
    const space = parseKatibParameters([
      { name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.01', max: '0.03' } },
      { name: 'num-layers', parameterType: 'int', feasibleSpace: { min: '2', max: '5' } },
      { name: 'optimizer', parameterType: 'categorical', feasibleSpace: { list: ['sgd', 'adam', 'ftrl'] } },
      { name: 'batch', parameterType: 'discrete', feasibleSpace: { list: ['16', 32, '64'] } },
    ]);
    expect(space).toEqual({
      params: [
        { kind: 'double', name: 'lr', low: 0.01, high: 0.03, log: false },
        { kind: 'int', name: 'num-layers', low: 2, high: 5, log: false, step: 1 },
        { kind: 'categorical', name: 'optimizer', choices: [{ value: 'sgd' }, { value: 'adam' }, { value: 'ftrl' }] },
        { kind: 'categorical', name: 'batch', choices: [{ value: 16 }, { value: 32 }, { value: 64 }] },
      ],
    });
  });

  it('reads steps and distributions', () => {
    expect(one('double', { min: 0, max: 1, step: '0.1' })).toEqual({ kind: 'double', name: 'x', low: 0, high: 1, log: false, q: 0.1 });
    expect(one('int', { min: '0', max: '10', step: '2' })).toEqual({ kind: 'int', name: 'x', low: 0, high: 10, log: false, step: 2 });
    expect(one('double', { min: '1e-4', max: '1e-1', distribution: 'logUniform' })).toEqual({
      kind: 'double', name: 'x', low: 1e-4, high: 1e-1, log: true,
    });
    expect(one('int', { min: 1, max: 1024, distribution: 'logUniform' })).toEqual({ kind: 'int', name: 'x', low: 1, high: 1024, log: true, step: 1 });
    // normal over [min, max]: centred, the range ±3 sigma.
    expect(one('double', { min: '-3', max: '9', distribution: 'normal' })).toEqual({ kind: 'normal', name: 'x', mu: 3, sigma: 2, log: false });
    // An int stays whole: rounded to its step.
    expect(one('int', { min: 0, max: 60, distribution: 'normal' })).toEqual({ kind: 'normal', name: 'x', mu: 30, sigma: 10, log: false, q: 1 });
    const ln = one('double', { min: Math.exp(1), max: Math.exp(7), distribution: 'logNormal', step: 0.5 });
    expect(ln).toMatchObject({ kind: 'normal', log: true, q: 0.5 });
    if (ln.kind !== 'normal') throw new Error('not normal');
    expect(ln.mu).toBeCloseTo(4, 12);
    expect(ln.sigma).toBeCloseTo(1, 12);
    expect(one('double', { min: 0, max: 1, distribution: '' })).toMatchObject({ kind: 'double', log: false });
  });

  it('refuses what is not a non-empty list of parameter objects', () => {
    expect(refusal(() => parseKatibParameters({})).field).toBe('parameters');
    expect(refusal(() => parseKatibParameters([])).message).toMatch(/^parameters: is empty/);
    expect(refusal(() => parseKatibParameters([], 'spec.parameters')).field).toBe('spec.parameters');
    expect(refusal(() => parseKatibParameters(['lr'])).field).toBe('parameters[0]');
  });

  it('refuses missing and duplicate names, unknown types and keys', () => {
    const fs = { min: 0, max: 1 };
    expect(refusal(() => parseKatibParameters([{ parameterType: 'double', feasibleSpace: fs }])).field).toBe('parameters[0].name');
    const dup = refusal(() =>
      parseKatibParameters([
        { name: 'lr', parameterType: 'double', feasibleSpace: fs },
        { name: 'lr', parameterType: 'double', feasibleSpace: fs },
      ]),
    );
    expect(dup.field).toBe('parameters[1].name');
    const type = refusal(() => parseKatibParameters([{ name: 'lr', parameterType: 'float', feasibleSpace: fs }]));
    expect(type.field).toBe('parameters.lr.parameterType');
    expect(type.message).toMatch(/unknown type "float"; known types: double, int, discrete, categorical/);
    expect(refusal(() => parseKatibParameters([{ name: 'lr', parameterType: 'double' }])).field).toBe('parameters.lr.feasibleSpace');
    expect(refusal(() => one('double', { min: 0, max: 1, maximum: 2 })).field).toBe('parameters.x.feasibleSpace.maximum');
    const dist = refusal(() => one('double', { min: 0, max: 1, distribution: 'loguniform' }));
    expect(dist.field).toBe('parameters.x.feasibleSpace.distribution');
    expect(dist.message).toMatch(/known: uniform, logUniform, normal, logNormal/);
  });

  it('refuses bad ranges, naming the feasible space', () => {
    expect(() => parseKatibParameters([{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.01' } }], 'spec.parameters'))
      .toThrow(/spec\.parameters\.lr\.feasibleSpace: low > high \(0\.1 > 0\.01\)/);
    expect(refusal(() => one('double', { min: 'a lot', max: 1 })).field).toBe('parameters.x.feasibleSpace.min');
    expect(refusal(() => one('double', { min: 0 })).field).toBe('parameters.x.feasibleSpace.max');
    expect(refusal(() => one('int', { min: '1.5', max: 3 })).message).toMatch(/feasibleSpace\.min: must be an integer, got 1\.5/);
    expect(refusal(() => one('int', { min: 0, max: 3, step: '0' })).field).toBe('parameters.x.feasibleSpace.step');
    expect(refusal(() => one('double', { min: 0, max: 1, distribution: 'logUniform' })).field).toBe('parameters.x.feasibleSpace.min');
    expect(refusal(() => one('double', { min: 2, max: 2, distribution: 'normal' })).message).toMatch(/normal needs min < max/);
    expect(refusal(() => one('double', { list: ['1'] })).field).toBe('parameters.x.feasibleSpace.list');
  });

  it('refuses bad lists', () => {
    expect(refusal(() => one('categorical', { list: [] })).field).toBe('parameters.x.feasibleSpace.list');
    expect(refusal(() => one('categorical', {})).field).toBe('parameters.x.feasibleSpace.list');
    expect(refusal(() => one('categorical', { list: ['a', 2] })).field).toBe('parameters.x.feasibleSpace.list[1]');
    expect(refusal(() => one('discrete', { list: ['1', 'two'] })).field).toBe('parameters.x.feasibleSpace.list[1]');
    expect(refusal(() => one('discrete', { list: ['1', 1] })).field).toBe('parameters.x.feasibleSpace.list[1]');
    expect(refusal(() => one('discrete', { list: [1], min: 0 })).field).toBe('parameters.x.feasibleSpace.min');
    expect(refusal(() => one('categorical', { list: ['a'], distribution: 'normal' })).field).toBe('parameters.x.feasibleSpace.distribution');
  });

  it('refuses two names passed in one environment variable', () => {
    const fs = { list: ['a'] };
    const err = refusal(() =>
      parseKatibParameters([
        { name: 'num-layers', parameterType: 'categorical', feasibleSpace: fs },
        { name: 'num.layers', parameterType: 'categorical', feasibleSpace: fs },
      ]),
    );
    expect(err.field).toBe('parameters["num.layers"]');
    expect(err.message).toMatch(/both passed as CAIRN_PARAM_NUM_LAYERS/);
  });
});
