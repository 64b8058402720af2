// A trial's stdout cut into lines (trial-logs.ts' stdoutLines): a line counts once it has
// ended, and the rest is read again next time; a final read at the task's end takes the last
// line without its newline.

import { describe, expect, it } from 'vitest';
import { stdoutLines } from '../../master/frameworks/tuning/trial-logs.ts';

describe('a trial\'s stdout, in lines', () => {
  it('returns the complete lines and where the next read starts (bytes, not characters)', () => {
    expect(stdoutLines('accuracy=0.5\nloss=1é\nepo', 10, 36, false, false)).toEqual({ lines: ['accuracy=0.5', 'loss=1é'], nextOffset: 10 + 13 + 9, eof: false });
  });

  it('returns nothing and reads again from the same byte while no line has ended', () => {
    expect(stdoutLines('accur', 7, 12, false, false)).toEqual({ lines: [], nextOffset: 7, eof: false });
    // Not final: even at the end of the task, an unfinished line waits for the final read.
    expect(stdoutLines('accur', 7, 12, false, true)).toEqual({ lines: [], nextOffset: 7, eof: true });
  });

  it('takes the last line without its newline on a final read at the task\'s end', () => {
    expect(stdoutLines('a=1\nb=2', 0, 7, true, true)).toEqual({ lines: ['a=1', 'b=2'], nextOffset: 7, eof: true });
    expect(stdoutLines('a=1\n', 0, 4, true, true)).toEqual({ lines: ['a=1'], nextOffset: 4, eof: true });
  });
});
