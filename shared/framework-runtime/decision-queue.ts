// The one queue every input of a built-in framework's shell goes through: its core decides,
// then the effects are carried out — records written and durable first, then launches and
// kills — before the next input is looked at, so no decision is made on a state whose
// writes are still on their way. An input that fails is logged and the queue goes on.

export class DecisionQueue {
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  /** `carryOut` runs after each decision; `onError` hears of one that failed. */
  constructor(
    private readonly carryOut: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Runs `decide` after everything before it, then carries out its effects; nothing once stopped. */
  run(decide: () => void): Promise<void> {
    const next = this.chain.then(async () => {
      if (this.stopped) return;
      decide();
      await this.carryOut();
    });
    this.chain = next.catch((err: unknown) => this.onError(err));
    return next;
  }

  /**
   * Runs `decide` as run() does and resolves with what it returned, once its effects are
   * carried out (a submission answered only once durable); `ifStopped` when the queue was stopped.
   */
  async ask<T>(decide: () => T, ifStopped: T): Promise<T> {
    let out = ifStopped;
    await this.run(() => {
      out = decide();
    });
    return out;
  }

  /** Resolves once everything queued so far has been carried out (or failed). */
  settled(): Promise<void> {
    return this.chain;
  }

  stop(): void {
    this.stopped = true;
  }
}
