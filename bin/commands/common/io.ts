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
