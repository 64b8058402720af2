// The arithmetic of SWIM and Lifeguard, kept apart from any timer so it can be tested and
// reasoned about on its own: how long a suspicion lasts, how it shrinks as independent
// suspicions arrive, how many times a piece of news is retransmitted, and how the periodic
// full-state sync slows down as the cluster grows.
//
// Cluster-size scaling uses log10, as hashicorp/memberlist ships it (its comments say "log";
// its code, and therefore the defaults tuned against it in the field, use log10).

/**
 * The base suspicion timeout: `mult · max(1, log10(n)) · probeInterval`. With the defaults
 * (mult 4, 1 s probes) that is 4 s up to 10 members, 8 s at 100, 12 s at 1,000: time enough
 * for the suspected member to hear of it and refute, growing slowly with the time gossip
 * needs to reach everyone.
 */
export function suspicionTimeoutMs(suspicionMult: number, members: number, probeIntervalMs: number): number {
  const nodeScale = Math.max(1, Math.log10(Math.max(1, members)));
  return Math.floor(suspicionMult * nodeScale * probeIntervalMs);
}

/**
 * Lifeguard's dynamic suspicion (memberlist's `remainingSuspicionTime`): a suspicion starts at
 * `maxMs` and falls towards `minMs` on a log scale as `confirmations` independent suspicions
 * of the same member arrive, reaching `minMs` at `expected` confirmations. Returns the time
 * left after `elapsedMs` (may be negative: the suspicion is overdue).
 */
export function remainingSuspicionMs(
  confirmations: number,
  expected: number,
  elapsedMs: number,
  minMs: number,
  maxMs: number,
): number {
  if (expected < 1) return minMs - elapsedMs;
  const frac = Math.log(confirmations + 1) / Math.log(expected + 1);
  const raw = maxMs - frac * (maxMs - minMs);
  const timeoutMs = Math.max(minMs, Math.floor(raw));
  return timeoutMs - elapsedMs;
}

/**
 * How many times each piece of news is piggybacked before it is dropped:
 * `mult · ceil(log10(n + 1))`. With mult 4: 4 transmissions up to 9 members, 8 up to 99,
 * 12 up to 999, 16 at 1,000. Each member that learns the news retransmits it too, so the
 * total number of copies grows like n·log(n), the epidemic bound for reaching everyone
 * with high probability.
 */
export function retransmitLimit(retransmitMult: number, members: number): number {
  const nodeScale = Math.ceil(Math.log10(members + 1));
  return retransmitMult * nodeScale;
}

/** Above this size the push/pull interval grows, so the cluster-wide sync traffic stays flat. */
export const PUSH_PULL_SCALE_THRESHOLD = 32;

/**
 * The push/pull interval for a cluster of `members`: the base interval up to 32 members,
 * then one more base interval per doubling (`ceil(log2(n) - log2(32)) + 1` times the base):
 * each sync carries O(n) state, so syncing less often keeps the total traffic per member
 * roughly constant.
 */
export function pushPullIntervalMs(baseMs: number, members: number): number {
  if (members <= PUSH_PULL_SCALE_THRESHOLD) return baseMs;
  const multiplier = Math.ceil(Math.log2(members) - Math.log2(PUSH_PULL_SCALE_THRESHOLD)) + 1;
  return multiplier * baseMs;
}

/** Lifeguard's local health multiplier applied to a duration: `ms · (score + 1)`. */
export function scaleByHealth(ms: number, healthScore: number): number {
  return ms * (healthScore + 1);
}

/** Bytes of a string once UTF-8 encoded, without allocating (cores hold no Buffer work). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
