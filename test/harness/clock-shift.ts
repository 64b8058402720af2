// Steps a daemon's wall clock from a test: start the daemon with clockShiftEnv(file), then
// setClockShift(file, ms) moves its Date.now() by `ms` (the preload clock-shift.mjs), and
// resolves once the daemon has taken the offset.
import { readFileSync, writeFileSync } from 'node:fs';
import { waitFor } from './processes.ts';

const PRELOAD = new URL('./clock-shift.mjs', import.meta.url).href;

/** The environment that makes a cairn process's wall clock steppable through `file`. */
export function clockShiftEnv(file: string): Record<string, string> {
  writeFileSync(file, '0');
  return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${PRELOAD}`.trim(), CAIRN_TEST_CLOCK_SHIFT_FILE: file };
}

/** Steps the wall clock of the process(es) reading `file` to real time + `offsetMs`. */
export async function setClockShift(file: string, offsetMs: number): Promise<void> {
  writeFileSync(file, String(offsetMs));
  await waitFor(`the clock step of ${offsetMs} ms taken (${file})`, () => {
    try {
      return Number(readFileSync(`${file}.applied`, 'utf8')) === offsetMs ? true : undefined;
    } catch {
      return undefined;
    }
  }, 10_000, 20);
}
