// The paper's Algorithm 1 as written (the `gap` rule of dynamic-priority.ts), against examples
// worked by hand: after n > k·m results, the smallest gap g between neighbours among the best
// m; the level is how many of the thresholds G, 2G, … maxLevel·G that g lies below. Then the
// rule inside one experiment's priority and inside the tuning core (a minimised metric
// judged the right way up), and the field and flag that select it.

import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamicPriority, gapLevel, smallestTopGap } from '../../master/frameworks/tuning/dynamic-priority.ts';
import { TuningCore } from '../../master/frameworks/tuning/core.ts';
import type { ExperimentSpec } from '../../shared/tuning/model.ts';
import { parseExperimentDocument } from '../../master/frameworks/tuning/spec-parse.ts';
import { experimentFromFlags } from '../../bin/commands/tune/flags.ts';
import { CairnError } from '../../shared/errors.ts';
import { Resources } from '../../shared/resources.ts';

// m = 3, k = 2 (judged from the 7th result on), G = 0.25: thresholds 0.25, 0.5, 0.75, 1.
// Values in quarters, so every gap is exact in binary floating point.
const S = { topResults: 3, warmupMultiple: 2, gapThreshold: 0.25, maxLevel: 4 };

describe('the gap rule, worked by hand', () => {
  it('the smallest gap among the best m, whatever the order the results came in', () => {
    // Best three: 9, 8.5, 8.25 → gaps 0.5 and 0.25 → g = 0.25.
    expect(smallestTopGap([1, 8.25, 9, 2, 8.5], 3)).toBe(0.25);
    // Two equal best results: g = 0.
    expect(smallestTopGap([5, 3, 5, 1], 3)).toBe(0);
    // m = 2: the best's lead over the second.
    expect(smallestTopGap([4, 7, 6], 2)).toBe(1);
  });

  it('level 0 while n <= k·m, however close the results', () => {
    expect(gapLevel([5, 5, 5, 5, 5, 5], S)).toBe(0); // n = 6 = k·m
    expect(gapLevel([5, 5, 5, 5, 5, 5, 5], S)).toBe(4); // n = 7: g = 0, below every threshold
  });

  it('the level is the number of thresholds G, 2G, … that g lies below', () => {
    const rest = [0, 0, 0, 0];
    // g = 1 (top 9, 8, 7): below none of 0.25, 0.5, 0.75, 1 (1 < 1 is false) → 0.
    expect(gapLevel([9, 8, 7, ...rest], S)).toBe(0);
    // g = 0.75 (top 9, 8.25, 7.25: gaps 0.75, 1) → below 1 only → 1.
    expect(gapLevel([9, 8.25, 7.25, ...rest], S)).toBe(1);
    // g = 0.5 (top 9, 8.5, 7.5) → below 0.75 and 1 → 2.
    expect(gapLevel([9, 8.5, 7.5, ...rest], S)).toBe(2);
    // g = 0.25 (top 9, 8.5, 8.25) → below 0.5, 0.75, 1 → 3.
    expect(gapLevel([9, 8.5, 8.25, ...rest], S)).toBe(3);
    // g = 0.125 → below all four → 4, the lowest priority.
    expect(gapLevel([9, 8.875, 8, ...rest], S)).toBe(4);
    // A lower maxLevel caps it: only thresholds 0.25 and 0.5 exist.
    expect(gapLevel([9, 8.875, 8, ...rest], { ...S, maxLevel: 2 })).toBe(2);
    // A new best well clear of the rest does not lift it while the next two stay close:
    // top 12, 8.5, 8.25 → gaps 3.5, 0.25 → g = 0.25 → 3.
    expect(gapLevel([12, 8.5, 8.25, ...rest], S)).toBe(3);
  });

  it('m and k move when judging starts and what is compared', () => {
    const xs = [9, 8.875, 8, 7, 6]; // n = 5
    expect(gapLevel(xs, { ...S, warmupMultiple: 2 })).toBe(0); // 5 <= 6
    expect(gapLevel(xs, { ...S, warmupMultiple: 1 })).toBe(4); // 5 > 3: g = 0.125
    // m = 2 with k = 2: 5 > 4; the best two only: g = 0.125 still → 4.
    expect(gapLevel(xs, { ...S, topResults: 2 })).toBe(4);
    // m = 2 on other results: top two 9, 8 → g = 1 → 0, although 8 and 7.875 are close.
    expect(gapLevel([9, 8, 7.875, 1, 1], { ...S, topResults: 2 })).toBe(0);
  });
});

describe('the gap rule in one experiment\'s priority', () => {
  it('judges every result afresh, declines L × d wanted offers, and climbs back when its best results spread', () => {
    const p = new DynamicPriority({ declinesPerLevel: 1, patience: 3, rule: 'gap', ...S });
    const results: number[] = [];
    const add = (x: number): void => {
      results.push(x);
      p.trialFinished(false, results);
    };
    for (const x of [1, 2, 3, 4, 5, 6]) add(x);
    expect(p.level).toBe(0); // n = 6: too few to judge (the stagnation rule would have dropped)
    add(6.125); // top 6.125, 6, 5: g = 0.125 → 4
    expect(p.level).toBe(4);
    expect([...Array(5)].map(() => p.offer(true))).toEqual(['decline', 'decline', 'decline', 'decline', 'take']);
    add(7); // top 7, 6.125, 6: g = 0.125 still → 4
    expect(p.level).toBe(4);
    add(8); // top 8, 7, 6.125: gaps 1, 0.875 → g = 0.875 → below 1 only → 1
    expect(p.level).toBe(1);
    add(9.5); // top 9.5, 8, 7: g = 1 → 0
    expect(p.level).toBe(0);
  });

  it('an idle cluster raises it, until the next result judges it again', () => {
    const p = new DynamicPriority({ declinesPerLevel: 2, patience: 3, rule: 'gap', ...S });
    const results = [1, 2, 3, 4, 5, 6, 6];
    p.trialFinished(false, results);
    expect(p.level).toBe(4);
    p.offer(false);
    p.offer(false);
    expect(p.level).toBe(3);
    p.trialFinished(false, results);
    expect(p.level).toBe(4);
  });

  it('an experiment that names no rule keeps the stagnation rule (records written before the choice)', () => {
    const p = new DynamicPriority({ declinesPerLevel: 2, patience: 1, maxLevel: 4 });
    p.trialFinished(false, [5, 5, 5, 5, 5, 5, 5, 5]);
    expect(p.level).toBe(1);
  });
});

describe('the gap rule in the tuning core', () => {
  function spec(over: Partial<ExperimentSpec>): ExperimentSpec {
    return {
      name: 'exp', role: '*',
      objective: { type: 'minimize', metricName: 'loss', additionalMetricNames: [] },
      algorithm: { name: 'random', settings: {} },
      space: { params: [{ kind: 'double', name: 'lr', low: 0, high: 1, log: false }] },
      parallelTrialCount: 1, maxTrialCount: 50, maxFailedTrialCount: 0, seed: 7,
      scheduling: 'dynamic', dynamic: { declinesPerLevel: 1, patience: 1, maxLevel: 4, rule: 'gap', topResults: 3, warmupMultiple: 1, gapThreshold: 0.25 },
      trial: { command: 'train --lr ${lr}', cpus: 1, memMb: 128, diskMb: 0, gpus: 0, env: {}, inputs: [], outputs: [], files: [], timeoutSeconds: 0 },
      ...over,
    };
  }

  it('judges a minimised metric with the lowest values as the best', () => {
    const core = new TuningCore();
    core.submit(spec({}), [], 'u1', 0, '');
    core.takeEffects();
    const run = (loss: number, now: number): void => {
      core.offers('exp', [{ id: `o${now}`, agentId: 'a1', hostname: 'a1', ip: '127.0.0.1', resources: Resources.of({ cpus: 4, mem: 4096, disk: 0, gpus: 0 }), role: '*' }], now);
      const id = core.takeEffects().launches[0].trials[0].taskId;
      core.taskUpdate('exp', { taskId: id, state: 'TASK_RUNNING', message: '' }, now);
      core.trialOutput('exp', id, [`loss=${loss}`], 20, now);
      core.taskUpdate('exp', { taskId: id, state: 'TASK_FINISHED', message: '' }, now);
      core.takeEffects();
    };
    // Best (lowest) three: 1, 2, 3 → g = 1 → level 0; read the wrong way up the best three
    // would be 3.125, 3, 2 (g = 0.125, level 4).
    for (const [i, loss] of [3, 2, 1, 3.125].entries()) run(loss, i + 1);
    expect(core.priorityLevel('exp')).toBe(0);
    // A fifth, 1.125, sits next to the best: g = 0.125 → level 4.
    run(1.125, 10);
    expect(core.priorityLevel('exp')).toBe(4);
  });
});

describe('selecting the rule', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-gap-rule-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const space = join(dir, 'space.json');
  writeFileSync(space, '{"parameters": [{"name": "lr", "type": "bound", "value": [0.1, 0.3]}]}');
  const doc = (scheduling: unknown): unknown => ({
    metadata: { name: 'g' },
    spec: { objective: { type: 'maximize', objectiveMetricName: 'accuracy' }, algorithm: { algorithmName: 'random' }, parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.3' } }], scheduling, trialTemplate: { command: 'train ${lr}', resources: { cpus: 1, memory: '128M' } } },
  });
  const refusal = (f: () => unknown): CairnError => {
    try {
      f();
    } catch (err) {
      return err as CairnError;
    }
    throw new Error('expected a refusal');
  };

  it('spec.scheduling.rule and its settings, with defaults; bad values refused naming the field', () => {
    expect(parseExperimentDocument(doc({ policy: 'dynamic' })).spec.dynamic).toMatchObject({ rule: 'stagnation', topResults: 3, warmupMultiple: 2, gapThreshold: 0.001 });
    expect(parseExperimentDocument(doc({ policy: 'dynamic', rule: 'gap', topResults: 4, warmupMultiple: 3, gapThreshold: 0.01 })).spec.dynamic)
      .toEqual({ declinesPerLevel: 2, patience: 3, maxLevel: 4, rule: 'gap', topResults: 4, warmupMultiple: 3, gapThreshold: 0.01 });
    expect(refusal(() => parseExperimentDocument(doc({ policy: 'dynamic', rule: 'gaps' }))).message).toContain('spec.scheduling.rule');
    expect(refusal(() => parseExperimentDocument(doc({ policy: 'dynamic', rule: 'gap', topResults: 1 }))).message).toContain('spec.scheduling.topResults');
    expect(refusal(() => parseExperimentDocument(doc({ policy: 'dynamic', rule: 'gap', warmupMultiple: 0 }))).message).toContain('spec.scheduling.warmupMultiple');
    expect(refusal(() => parseExperimentDocument(doc({ policy: 'dynamic', rule: 'gap', gapThreshold: 0 }))).message).toContain('spec.scheduling.gapThreshold');
    expect(refusal(() => parseExperimentDocument(doc({ policy: 'dynamic', rule: 'gap', gapThreshold: '0.1' }))).message).toContain('spec.scheduling.gapThreshold');
  });

  it('cairn tune submit --scheduling dynamic --dynamic-rule gap; the rule alone, or an unknown one, refused naming the flag', () => {
    const base = { appRunnerLaunchCmd: 'train ${lr}', tuningParameters: space };
    const d = experimentFromFlags({ ...base, scheduling: 'dynamic', dynamicRule: 'gap' }, 0) as { spec: { scheduling: unknown } };
    expect(d.spec.scheduling).toEqual({ policy: 'dynamic', rule: 'gap' });
    expect(parseExperimentDocument(d).spec.dynamic.rule).toBe('gap');
    for (const [flags, named] of [[{ ...base, dynamicRule: 'gap' }, '--dynamic-rule'], [{ ...base, scheduling: 'dynamic', dynamicRule: 'paper' }, '--dynamic-rule']] as const) {
      const err = refusal(() => experimentFromFlags(flags, 0));
      expect(err.code).toBe('CAIRN_BAD_FLAG');
      expect(err.message).toContain(named);
    }
  });
});
