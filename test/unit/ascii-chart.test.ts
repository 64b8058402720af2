// The terminal chart of `cairn tune show`: points, a best-so-far step line, axes labelled with
// their min and max, colour only when asked. Exact output, character for character.

import { describe, expect, it } from 'vitest';
import { asciiChart, axisNumber, bestSoFar } from '../../bin/commands/tune/ascii-chart.ts';

const lines = (...l: string[]) => `${l.join('\n')}\n`;

describe('asciiChart', () => {
  it('draws points, the best so far as steps, and the axes with their min and max', () => {
    const points = [{ x: 0, y: 1 }, { x: 1, y: 3 }, { x: 2, y: 2 }, { x: 3, y: 4 }];
    expect(asciiChart(points, bestSoFar(points, 'maximize'), { width: 10, height: 4 })).toBe(lines(
      '4 |         *',
      '  |   *-----',
      '  |   |  *',
      '1 |*--',
      '  +----------',
      '   0        3',
    ));
  });

  it('labels: a y label above, an x label between the x min and max where it fits, a legend', () => {
    const points = [{ x: 1, y: 0.5 }, { x: 5, y: 0.25 }, { x: 9, y: 0.125 }];
    expect(asciiChart(points, bestSoFar(points, 'minimize'), { width: 12, height: 3, yLabel: 'loss', xLabel: 'trial', pointLabel: 'trial value', lineLabel: 'best so far' })).toBe(lines(
      'loss',
      '  0.5 |*-----',
      '      |      *----',
      '0.125 |           *',
      '      +------------',
      '       1  trial   9',
      '       * trial value   - best so far',
    ));
    // Too narrow for the x label: left out, the min and max kept.
    expect(asciiChart(points, [], { width: 6, height: 2, xLabel: 'trial' }).split('\n').at(-2)).toBe('       1    9');
  });

  it('one value, or all equal: the middle row, min and max both that value', () => {
    const points = [{ x: 0, y: 0.5 }, { x: 1, y: 0.5 }];
    expect(asciiChart(points, bestSoFar(points, 'maximize'), { width: 4, height: 3 })).toBe(lines(
      '0.5 |',
      '    |*--*',
      '0.5 |',
      '    +----',
      '     0  1',
    ));
    expect(asciiChart([{ x: 7, y: 2 }], [], { width: 3, height: 2 })).toBe(lines(
      '2 |*',
      '2 |',
      '  +---',
      '   7',
    ));
  });

  it('colour only when asked: points cyan, the line yellow', () => {
    const points = [{ x: 0, y: 0 }, { x: 1, y: 1 }];
    const plain = asciiChart(points, bestSoFar(points, 'maximize'), { width: 2, height: 2, pointLabel: 'v', lineLabel: 'best' });
    expect(plain).not.toContain('\x1b[');
    const coloured = asciiChart(points, bestSoFar(points, 'maximize'), { width: 2, height: 2, colour: true, pointLabel: 'v', lineLabel: 'best' });
    expect(coloured).toBe(lines(
      '1 | \x1b[36m*\x1b[0m',
      '0 |\x1b[36m*\x1b[0m',
      '  +--',
      '   0 1',
      '   \x1b[36m*\x1b[0m v   \x1b[33m-\x1b[0m best',
    ));
  });

  it('nothing to draw: nothing; non-finite values are left out; too small a grid is refused', () => {
    expect(asciiChart([], [], { width: 10, height: 4 })).toBe('');
    expect(asciiChart([{ x: 0, y: Number.NaN }, { x: 1, y: Infinity }], [], { width: 10, height: 4 })).toBe('');
    expect(asciiChart([{ x: 0, y: 1 }, { x: 1, y: Number.NaN }], [], { width: 2, height: 2 })).toBe(lines('1 |*', '1 |', '  +--', '   0'));
    expect(() => asciiChart([{ x: 0, y: 1 }], [], { width: 1, height: 4 })).toThrow(RangeError);
    expect(() => asciiChart([{ x: 0, y: 1 }], [], { width: 4, height: 1 })).toThrow(RangeError);
  });
});

describe('bestSoFar and axisNumber', () => {
  it('the running best in x order, for either direction', () => {
    const points = [{ x: 2, y: 3 }, { x: 1, y: 5 }, { x: 3, y: 4 }, { x: 4, y: 1 }];
    expect(bestSoFar(points, 'minimize')).toEqual([{ x: 1, y: 5 }, { x: 2, y: 3 }, { x: 3, y: 3 }, { x: 4, y: 1 }]);
    expect(bestSoFar(points, 'maximize')).toEqual([{ x: 1, y: 5 }, { x: 2, y: 5 }, { x: 3, y: 5 }, { x: 4, y: 5 }]);
  });

  it('axis numbers: four significant digits, no trailing zeros', () => {
    expect([0, 1, 0.5, 0.93125, 1234567, -2.5, 1e-7, 100].map(axisNumber)).toEqual(['0', '1', '0.5', '0.9313', '1235000', '-2.5', '1e-7', '100']);
  });
});
