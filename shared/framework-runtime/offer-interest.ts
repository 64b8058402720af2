// The one offer-interest switch: whether a framework asks the master for offers (REVIVE) or
// for none for now (SUPPRESS). Offers a framework does not want cost the master an allocation
// and a decline each; a framework that waits while suppressed, or behind a long decline
// filter, waits for nothing. A call is sent only on a change, and again where the policy says.

/** What a subscription can be asked: offers again, or none for now. */
export interface OfferSwitch {
  revive(): Promise<void>;
  suppress(): Promise<void>;
}

export interface InterestPolicy {
  /**
   * While offers are wanted and none come, REVIVE again this often: a REVIVE lost as a leader
   * changes would otherwise leave the framework waiting (Marathon repeats its revives for the
   * same reason). Infinity: only when the want changes.
   */
  reviveAgainMs: number;
  /**
   * SUPPRESS only once an offer arrives that nothing wants, rather than as soon as nothing
   * is wanted (a framework that declines for long anyway saves the call while none come).
   */
  suppressOnOffer: boolean;
}

/** Offers while the framework wants them, none otherwise: a call only when that changes. */
export const ON_CHANGE: InterestPolicy = { reviveAgainMs: Infinity, suppressOnOffer: false };

export interface InterestState {
  /** Offers were wanted at the last look. */
  wanted: boolean;
  suppressed: boolean;
  revivedAtMs: number;
  /** When offers last arrived. */
  offeredAtMs: number;
}

/** A fresh subscription: nothing asked of the master yet. */
export const NO_INTEREST: InterestState = { wanted: false, suppressed: false, revivedAtMs: -Infinity, offeredAtMs: -Infinity };

/**
 * The next state, and the call that gets there: REVIVE the moment offers are wanted (it
 * clears a SUPPRESS and any decline filters, so nothing waits out a refusal), SUPPRESS once
 * nothing wants them. Pure.
 */
export function nextInterest(prev: InterestState, policy: InterestPolicy, want: boolean, offers: number, nowMs: number): { next: InterestState; call?: 'revive' | 'suppress' } {
  const offeredAtMs = offers > 0 ? nowMs : prev.offeredAtMs;
  if (want && (!prev.wanted || nowMs - Math.max(prev.revivedAtMs, offeredAtMs) >= policy.reviveAgainMs)) {
    return { next: { wanted: true, suppressed: false, revivedAtMs: nowMs, offeredAtMs }, call: 'revive' };
  }
  if (!want && !prev.suppressed && (offers > 0 || !policy.suppressOnOffer)) {
    return { next: { ...prev, wanted: false, suppressed: true, offeredAtMs }, call: 'suppress' };
  }
  return { next: { ...prev, wanted: want, offeredAtMs } };
}

/** The switch for a framework's subscriptions, one state per key; a call that fails is sent again next time. */
export class OfferInterest<K> {
  private readonly states = new Map<K, InterestState>();

  constructor(private readonly policy: InterestPolicy) {}

  /** Sends what `want` asks of `sw` (after `offers` offers arrived since the last look). */
  adjust(key: K, sw: OfferSwitch, want: boolean, nowMs: number, offers = 0): Promise<void> {
    const { next, call } = nextInterest(this.states.get(key) ?? NO_INTEREST, this.policy, want, offers, nowMs);
    this.states.set(key, next);
    if (call === undefined) return Promise.resolve();
    // Undone on failure, so the next look sends it again.
    const undo = (): void => {
      const now = this.states.get(key);
      if (now === next) this.states.set(key, call === 'revive' ? { ...next, wanted: false } : { ...next, suppressed: false });
    };
    return (call === 'revive' ? sw.revive() : sw.suppress()).catch(undo);
  }

  /** A new subscription: `revived` when it starts out asking for offers (it sent a REVIVE, or gets offers unasked). */
  subscribed(key: K, revived: boolean, nowMs: number): void {
    this.states.set(key, revived ? { ...NO_INTEREST, wanted: true, revivedAtMs: nowMs } : { ...NO_INTEREST });
  }

  forget(key: K): void {
    this.states.delete(key);
  }
}
