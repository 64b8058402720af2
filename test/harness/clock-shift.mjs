// A test-only preload (node --import) that steps a daemon's wall clock: Date.now() and
// new Date() read the real time plus an offset in milliseconds taken from the file named by
// CAIRN_TEST_CLOCK_SHIFT_FILE, re-read every 50 ms — as an operator's `date -s` or an NTP
// step would move them. performance.now() (the monotonic clock) is left alone. Once it has
// taken an offset it writes it to `<file>.applied`, so a test knows the step is in effect.
// Never part of the product: only tests name it (see test/harness/clock-shift.ts).
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.env.CAIRN_TEST_CLOCK_SHIFT_FILE;
if (file) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  let offsetMs = 0;
  const read = () => {
    let next = 0;
    try {
      next = Number(readFileSync(file, 'utf8').trim()) || 0;
    } catch {
      // no file: no step
    }
    offsetMs = next;
    try {
      writeFileSync(`${file}.applied`, String(offsetMs));
    } catch {
      // the test's directory is gone: it is over
    }
  };
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + offsetMs);
      else super(...args);
    }
    static now() {
      return realNow() + offsetMs;
    }
  }
  globalThis.Date = ShiftedDate;
  read();
  setInterval(read, 50).unref();
}
