// Rounds that never overlap: a framework that looks at its whole state each time (the
// services framework) asks for a round on every input; asks during a round make one more
// round after it, not one each. A round that fails is logged and the next one retries.

export class RoundLoop {
  private dirty = false;
  private looping = false;
  private stopped = false;

  constructor(
    private readonly round: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Asks for a round; resolves when no round is running or asked for any more. */
  kick(): Promise<void> {
    this.dirty = true;
    if (this.looping || this.stopped) return Promise.resolve();
    this.looping = true;
    return (async () => {
      try {
        while (this.dirty && !this.stopped) {
          this.dirty = false;
          try {
            await this.round();
          } catch (err) {
            this.onError(err);
          }
        }
      } finally {
        this.looping = false;
      }
    })();
  }

  stop(): void {
    this.stopped = true;
  }
}
