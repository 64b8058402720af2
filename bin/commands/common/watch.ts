// `-w`/`--watch` on a list (kubectl get -w, nomad status with a loop): the list is read again
// every interval and printed again whenever what it prints changed, until Ctrl-C. Polling
// reads the same API the list does, so every list watches the same way and a watch outlives
// a master failover (an error is printed once, and the watch goes on).

import { USAGE_EXIT_CODE } from './context.ts';
import { untilInterrupted, type CliIo } from './io.ts';

/** How often a watched list is read again. */
export const WATCH_INTERVAL_MS = 1000;

/**
 * What must change for a snapshot to be printed again: not the AGE column ticking on (`9s`,
 * `10s`) nor the padding that follows it, or a table would be printed every interval.
 */
export function comparable(text: string): string {
  return text.replace(/\b\d+(ms|s|m|h|d)\b/g, '').replace(/[ \t]+/g, ' ');
}

/**
 * Runs `once` (the list, printing to the io it is given) every `intervalMs` and copies what it
 * printed to `io` when it differs from the last time; each snapshot after the first follows a
 * blank line. Resolves with 0 on the first interrupt, or 2 at once for a line the parser refuses.
 */
export async function watchList(once: (io: CliIo) => Promise<number>, io: CliIo, intervalMs = WATCH_INTERVAL_MS): Promise<number> {
  const loop = untilInterrupted(io);
  try {
    let last: string | undefined;
    while (!loop.stopped()) {
      let out = '';
      let err = '';
      const captured: CliIo = { ...io, stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) }, onInterrupt: () => () => undefined };
      // A line the parser refused is refused every time: said once, and the watch ends.
      if ((await once(captured)) === USAGE_EXIT_CODE) {
        io.stderr.write(err);
        return USAGE_EXIT_CODE;
      }
      const snapshot = comparable(`${out}\u0000${err}`);
      if (!loop.stopped() && snapshot !== last) {
        if (last !== undefined) io.stdout.write('\n');
        if (out !== '') io.stdout.write(out);
        if (err !== '') io.stderr.write(err);
        last = snapshot;
      }
      await loop.sleep(intervalMs);
    }
    return 0;
  } finally {
    loop.dispose();
  }
}
