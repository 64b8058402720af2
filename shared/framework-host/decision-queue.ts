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

  /** Resolves once everything queued so far has been carried out (or failed). */
  settled(): Promise<void> {
    return this.chain;
  }

  stop(): void {
    this.stopped = true;
  }
}

/** What a framework's subscription can be asked: offers again, or none for now. */
export interface OfferSwitch {
  revive(): Promise<void>;
  suppress(): Promise<void>;
}

/**
 * Asks for offers while a framework wants them and not otherwise, sending REVIVE or SUPPRESS
 * only on a change (per subscription key); a call that fails is tried again next time.
 */
export class OfferInterest<K> {
  private readonly suppressed = new Map<K, boolean>();

  adjust(key: K, client: OfferSwitch, want: boolean): void {
    const suppressed = this.suppressed.get(key) === true;
    if (want && suppressed) {
      this.suppressed.set(key, false);
      client.revive().catch(() => this.suppressed.set(key, true));
    } else if (!want && !suppressed) {
      this.suppressed.set(key, true);
      client.suppress().catch(() => this.suppressed.set(key, false));
    }
  }

  /** A new subscription starts out asking for offers. */
  subscribed(key: K): void {
    this.suppressed.set(key, false);
  }

  forget(key: K): void {
    this.suppressed.delete(key);
  }
}
