// The dashboard's pure helpers (master/ui/static/components/series.js): durations, number
// formatting, best-so-far series, scales and ticks, and the parallel-coordinates layout.

import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain browser module without types.
import * as S from '../../master/ui/static/components/series.js';

describe('formatting', () => {
  it('writes durations at a readable precision', () => {
    expect(S.formatDuration(850)).toBe('850ms');
    expect(S.formatDuration(4_260)).toBe('4.2s');
    expect(S.formatDuration(37_900)).toBe('37s');
    expect(S.formatDuration(245_000)).toBe('4m 05s');
    expect(S.formatDuration(2 * 3_600_000 + 3 * 60_000)).toBe('2h 03m');
    expect(S.formatDuration(3 * 86_400_000 + 4 * 3_600_000 + 5)).toBe('3d 4h');
    expect(S.formatDuration(-5)).toBe('0ms');
    expect(S.formatDuration(undefined)).toBe('');
    expect(S.formatAge(1_000, 61_000)).toBe('1m 00s ago');
  });

  it('writes every point in time one way: local date and time to the second', () => {
    const ms = new Date(2026, 10, 7, 9, 5, 3).getTime();
    expect(S.formatTime(ms)).toBe('2026-11-07 09:05:03');
    // Today's times too carry their date (no bare time of day).
    expect(S.formatTime(Date.now())).toMatch(S.TIME_PATTERN);
    expect(S.formatTime(undefined)).toBe('');
    expect(S.TIME_PATTERN.test('22:10:05')).toBe(false);
  });

  it('writes numbers in a few significant digits', () => {
    expect(S.formatNumber(0.123456)).toBe('0.1235');
    expect(S.formatNumber(42)).toBe('42');
    expect(S.formatNumber(0.00001234)).toBe('1.234e-5');
    expect(S.formatNumber(1.5e9)).toBe('1.5e+9');
    expect(S.formatNumber('adam')).toBe('adam');
    expect(S.formatNumber(undefined)).toBe('');
  });

  it('measures a run so far or to its end', () => {
    expect(S.runDuration({ startedMs: 1_000, finishedMs: 4_000 })).toBe(3_000);
    expect(S.runDuration({ startedMs: 1_000 }, 2_500)).toBe(1_500);
    expect(S.runDuration({})).toBeUndefined();
    expect(S.parseIso('2024-01-01T00:00:00.000Z')).toBe(Date.UTC(2024, 0, 1));
    expect(S.parseIso(undefined)).toBeUndefined();
  });

  it('summarises states and counts finished trials', () => {
    expect(S.stateSummary([{ state: 'Running' }, { state: 'Pending' }, { state: 'Running' }])).toBe('2 Running · 1 Pending');
    expect(S.doneCount({ Pending: 1, Running: 2, Succeeded: 3, Failed: 1, EarlyStopped: 1, Killed: 0 })).toBe(5);
  });
});

describe('series', () => {
  it('keeps the best so far for either objective, null before the first value', () => {
    expect(S.bestSoFar([null, 0.5, 0.3, 0.7, null, 0.6], 'maximize')).toEqual([null, 0.5, 0.5, 0.7, 0.7, 0.7]);
    expect(S.bestSoFar([0.5, 0.3, undefined, 0.7, 0.1], 'minimize')).toEqual([0.5, 0.3, 0.3, 0.3, 0.1]);
  });

  it('orders the metric by trial index and by finish time', () => {
    const trials = [
      { index: 2, value: 0.9, finishedMs: 3_000 },
      { index: 0, value: 0.4, finishedMs: 5_000 },
      { index: 1, finishedMs: 4_000 },
      { index: 3, value: 0.2, state: 'EarlyStopped' },
    ];
    expect(S.metricOverTrials(trials, 'maximize')).toEqual({
      x: [0, 1, 2, 3], y: [0.4, null, 0.9, 0.2], best: [0.4, 0.4, 0.9, 0.9],
      // The early-stopped trial apart from those that ran to their end.
      ran: [0.4, null, 0.9, null], stopped: [null, null, null, 0.2],
    });
    expect(S.metricOverTime(trials, 'minimize')).toEqual({ x: [3, 5], y: [0.9, 0.4], best: [0.9, 0.4], ran: [0.9, 0.4], stopped: [null, null] });
  });

  it('labels time ticks by the time of day, dated where the day changes, and value ticks with their unit', () => {
    const at = (h: number, m: number, s = 0, day = 27) => new Date(2026, 10, day, h, m, s).getTime() / 1000;
    expect(S.timeTicks([at(22, 10), at(22, 15), at(22, 20)])).toEqual(['22:10', '22:15', '22:20']);
    expect(S.timeTicks([at(22, 10, 0), at(22, 10, 30)])).toEqual(['22:10:00', '22:10:30']);
    expect(S.timeTicks([at(23, 0), at(0, 0, 0, 28)])).toEqual(['11-27 23:00', '11-28 00:00']);
    expect(S.valueTick(0.25, 'cpus')).toBe('0.25 cpus');
    expect(S.valueTick(512, 'MiB')).toBe('512 MiB');
    expect(S.valueTick(3)).toBe('3');
  });

  it('turns usage samples into series: MiB, each GPU by index, null where a figure is missing', () => {
    const s = S.usageSeries([
      { timestampMs: 1000, cpusUsed: null, cpusLimit: 1, memoryBytes: 1048576, memoryLimitBytes: 2097152, gpus: [] },
      { timestampMs: 2000, cpusUsed: 0.5, cpusLimit: 1, memoryBytes: 3145728, memoryLimitBytes: 2097152, gpus: [{ index: 1, utilizationPercent: 40, memoryUsedMiB: 5 }] },
    ]);
    expect(s).toEqual({ x: [1, 2], cpus: [null, 0.5], cpusLimit: [1, 1], memMiB: [1, 3], memLimitMiB: [2, 2], gpus: [{ index: 1, util: [null, 40] }] });
  });

  it("gives the parallel plot's colour scale its ends: the worst and best metric values", () => {
    expect(S.colorLegend('maximize', [0.2, 0.9])).toMatchObject({ worst: 0.2, best: 0.9 });
    expect(S.colorLegend('minimize', [0.2, 0.9])).toMatchObject({ worst: 0.9, best: 0.2 });
    expect(S.colorLegend('maximize', undefined).best).toBeUndefined();
    expect(S.colorLegend('maximize', [0, 1]).stops).toHaveLength(5);
  });
});

describe('scales and ticks', () => {
  it('maps linearly and logarithmically, a point domain to the middle', () => {
    const lin = S.linearScale([0, 10], [100, 0]);
    expect(lin(0)).toBe(100);
    expect(lin(2.5)).toBe(75);
    expect(S.linearScale([3, 3], [0, 10])(3)).toBe(5);
    const log = S.logScale([0.001, 1], [0, 3]);
    expect(log(0.01)).toBeCloseTo(1);
    expect(log(1)).toBeCloseTo(3);
  });

  it('chooses round ticks', () => {
    expect(S.niceTicks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(S.niceTicks(0.13, 0.87, 4)).toEqual([0.2, 0.4, 0.6, 0.8]);
    expect(S.niceTicks(5, 5)).toEqual([5]);
    expect(S.logTicks(0.0001, 0.1)).toEqual([0.0001, 0.001, 0.01, 0.1]);
    expect(S.logTicks(2, 5)).toEqual([2, 5]);
  });

  it('colours from dark (worst) to bright (best)', () => {
    expect(S.rampColor(0)).toBe('rgb(68, 1, 84)');
    expect(S.rampColor(1)).toBe('rgb(253, 231, 37)');
    expect(S.rampColor(2)).toBe('rgb(253, 231, 37)');
  });
});

describe('parallel coordinates', () => {
  const space = {
    params: [
      { kind: 'double', name: 'lr', low: 0.001, high: 0.1, log: true },
      { kind: 'int', name: 'layers', low: 1, high: 4, log: false, step: 1 },
      {
        kind: 'categorical', name: 'opt', choices: [
          { value: 'sgd', sub: { params: [{ kind: 'double', name: 'momentum', low: 0, high: 1, log: false }] } },
          { value: 'adam' },
        ],
      },
    ],
  };
  const trials = [
    { index: 0, params: { lr: 0.01, layers: 2, opt: 'sgd', 'opt.momentum': 0.5 }, value: 0.8 },
    { index: 1, params: { lr: 0.1, layers: 4, opt: 'adam' }, value: 0.6 },
    { index: 2, params: { lr: 0.001, layers: 1, opt: 'adam' } },
  ];

  it('takes the axes from the space, nested ones by full name, and ends with the metric', () => {
    const axes = S.parallelAxes(space, trials, 'accuracy');
    expect(axes.map((a: any) => a.name)).toEqual(['lr', 'layers', 'opt', 'opt.momentum', 'accuracy']);
    expect(axes[0]).toMatchObject({ kind: 'numeric', log: true, domain: [0.001, 0.1] });
    expect(axes[2]).toMatchObject({ kind: 'categorical', categories: ['sgd', 'adam'] });
    expect(axes[4]).toMatchObject({ metric: true, domain: [0.6, 0.8] });
  });

  it('adds parameters the space does not name, widening domains to the values seen', () => {
    const axes = S.parallelAxes({ params: [{ kind: 'double', name: 'x', low: 0, high: 1, log: false }] },
      [{ index: 0, params: { x: 2, extra: 'a' }, value: 1 }, { index: 1, params: { x: 0.5, extra: 'b' }, value: 1 }], 'm');
    expect(axes.map((a: any) => [a.name, a.kind])).toEqual([['x', 'numeric'], ['extra', 'categorical'], ['m', 'numeric']]);
    expect(axes[0].domain).toEqual([0, 2]);
    expect(axes[1].categories).toEqual(['a', 'b']);
  });

  it('lays out axes evenly, scales values, spaces categories evenly and colours by the metric', () => {
    const axes = S.parallelAxes(space, trials, 'accuracy');
    const l = S.parallelLayout({ axes, trials, type: 'maximize', width: 500, height: 220, margin: { top: 20, right: 50, bottom: 20, left: 50 } });
    expect(l.axes.map((a: any) => a.x)).toEqual([50, 150, 250, 350, 450]);
    // opt: two categories at 1/4 and 3/4 of the height between 20 and 200.
    expect(l.axes[2].ticks).toEqual([{ y: 155, label: 'sgd' }, { y: 65, label: 'adam' }]);
    // lr is on a log axis: 0.01 is halfway between 0.001 and 0.1.
    const best = l.lines.find((x: any) => x.index === 0);
    expect(best.d.startsWith('M50.0,110.0')).toBe(true);
    expect(best.color).toBe('rgb(253, 231, 37)');
    // Trial 1 has no momentum: its line breaks there and starts again at the metric.
    const t1 = l.lines.find((x: any) => x.index === 1);
    expect(t1.d).toBe('M50.0,20.0L150.0,20.0L250.0,65.0M450.0,200.0');
    // No metric: grey, drawn first (under the others); the best last.
    expect(l.lines[0]).toMatchObject({ index: 2, color: '#9aa0a6' });
    expect(l.lines[l.lines.length - 1].index).toBe(0);
  });

  it('colours the lowest best when minimising', () => {
    const axes = S.parallelAxes(space, trials, 'loss');
    const l = S.parallelLayout({ axes, trials, type: 'minimize', width: 500, height: 220 });
    expect(l.lines.find((x: any) => x.index === 1).color).toBe('rgb(253, 231, 37)');
  });
});
