// What a command touches of the outside world, passed in so tests can run commands
// without a terminal, a real environment or real signals.

export interface CliIo {
  /** `isTTY`: a terminal (the daemons then print a banner and, by default, text log lines). */
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  /** Calls `listener` on each SIGINT/SIGTERM until the returned function is called. */
  onInterrupt(listener: (signal: string) => void): () => void;
}

/** The real process. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    onInterrupt(listener) {
      const onSignal = (signal: NodeJS.Signals) => listener(signal);
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      return () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      };
    },
  };
}

/** Resolves with the first interrupt signal. */
export function nextInterrupt(io: CliIo): Promise<string> {
  return new Promise((resolve) => {
    const dispose = io.onInterrupt((signal) => {
      dispose();
      resolve(signal);
    });
  });
}

/**
 * For a command that repeats until Ctrl-C (`top`, a watched list): `stopped` turns true on the
 * first interrupt, which also cuts short the `sleep` under way; `dispose` stops listening.
 */
export function untilInterrupted(io: CliIo): { stopped(): boolean; sleep(ms: number): Promise<void>; dispose(): void } {
  let stop = false;
  let wake: () => void = () => undefined;
  const dispose = io.onInterrupt(() => {
    stop = true;
    wake();
  });
  return {
    stopped: () => stop,
    sleep: (ms) => new Promise<void>((resolve) => {
      if (stop) return resolve();
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    }),
    dispose,
  };
}
