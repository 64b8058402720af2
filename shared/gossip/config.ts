// Gossip configuration: options in, defaults filled, an immutable compiled config out.
// Every default carries its reason; durations carry their unit in the name.

import { CairnError } from '../errors.ts';

export interface GossipConfig {
  readonly probeIntervalMs: number;
  readonly probeTimeoutMs: number;
  readonly indirectChecks: number;
  readonly suspicionMult: number;
  readonly suspicionMaxTimeoutMult: number;
  readonly retransmitMult: number;
  readonly gossipIntervalMs: number;
  readonly gossipNodes: number;
  readonly gossipToTheDeadMs: number;
  readonly pushPullIntervalMs: number;
  readonly awarenessMaxMultiplier: number;
  readonly localHealthAwareness: boolean;
  readonly dynamicSuspicion: boolean;
  readonly maxPacketBytes: number;
  readonly maxMetaBytes: number;
  readonly rejoinIntervalMs: number;
  readonly reconnectIntervalMs: number;
  readonly deadMemberRetentionMs: number;
}

export type GossipConfigOptions = Partial<GossipConfig>;

/** The defaults for members on one LAN or data centre, each with the reason for its value. */
export function defaultGossipConfig(): GossipConfig {
  return {
    // One member probed per second by each member: a crash is first detected in about 1.6
    // periods on average (SWIM), while probe traffic stays at one ping/ack per member per second
    // whatever the cluster size.
    probeIntervalMs: 1_000,
    // Half a period for the direct ack: far above a LAN round trip, and it leaves the other
    // half of the period for the indirect probes to come back.
    probeTimeoutMs: 500,
    // Three members re-probe a silent member on our behalf: enough that one lost packet or one
    // congested path does not raise a suspicion, few enough that a real failure costs little.
    indirectChecks: 3,
    // The suspicion timeout is 4 · log10(n) probe periods (4 s for up to 10 members, 12 s at
    // 1,000): time for the suspected member to hear of it and refute, growing as slowly as
    // gossip's spread.
    suspicionMult: 4,
    // A suspicion nobody else confirms lasts up to 6 times that (Lifeguard): a lone accuser,
    // often the slow one, gets the least weight; independent confirmations bring it down.
    suspicionMaxTimeoutMult: 6,
    // News is piggybacked 4 · ceil(log10(n+1)) times by each member that learns it (16 times at
    // 1,000 members), the epidemic bound for reaching everyone with high probability.
    retransmitMult: 4,
    // Gossip five times a probe period so news spreads in a few hundred milliseconds per hop,
    // instead of waiting for the next probe to carry it.
    gossipIntervalMs: 200,
    // Three targets per gossip round: with piggybacking on probes as well, news reaches
    // everyone in O(log n) rounds.
    gossipNodes: 3,
    // Keep gossiping to a member for 30 s after it is declared dead, so a member that was
    // wrongly declared dead hears of it and refutes.
    gossipToTheDeadMs: 30_000,
    // A full state exchange with one random member every 30 s (slower above 32 members) repairs
    // whatever gossip missed; it also runs on join.
    pushPullIntervalMs: 30_000,
    // Lifeguard's health score goes from 0 to 7, stretching a struggling member's probe interval
    // and timeout up to 8 times: a member that cannot keep up with its own probes accuses less.
    awarenessMaxMultiplier: 8,
    // Lifeguard's local health awareness (probe side). Off only to measure what it buys.
    localHealthAwareness: true,
    // Lifeguard's dynamic suspicion (max timeout falling with confirmations). Off means SWIM's
    // fixed timeout; off only to measure what it buys.
    dynamicSuspicion: true,
    // One UDP datagram fits a 1,500-byte Ethernet frame with IP and UDP headers and the
    // authentication envelope; larger datagrams fragment, and one lost fragment loses all.
    maxPacketBytes: 1_400,
    // Member metadata rides in every alive message and must leave room for other news in a
    // datagram: an API URL, a leader hint and a term fit easily.
    maxMetaBytes: 512,
    // A member that knows nobody alive (started before its seeds, or cut off from everyone)
    // asks its join addresses again this often.
    rejoinIntervalMs: 5_000,
    // Once per interval, a full state exchange with one member declared dead (not left): the
    // two sides of a healed partition find each other again.
    reconnectIntervalMs: 30_000,
    // A dead or left member is remembered for an hour: stale alive news about it is rejected,
    // and a partition that heals within the hour is reconnected. Longer would let a churning
    // fleet grow the table without bound.
    deadMemberRetentionMs: 3_600_000,
  };
}

/**
 * The defaults with every period scaled to a probe interval of `probeIntervalMs` (the LAN
 * profile has 1,000): the probe timeout stays half a period, gossip five times a period,
 * rejoin every 5 periods, push/pull and reconnection every 30. Suspicion timeouts follow by
 * themselves, being counted in periods. Short periods detect failures sooner at the cost of
 * more packets; tests and small clusters on one switch use them.
 */
export function gossipConfigForPeriod(probeIntervalMs: number): GossipConfigOptions {
  if (!Number.isInteger(probeIntervalMs) || probeIntervalMs < 10) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a whole number of milliseconds of at least 10, got ${String(probeIntervalMs)}`, 'gossip.probeIntervalMs');
  }
  const base = defaultGossipConfig();
  const scale = (ms: number) => Math.max(1, Math.round((ms * probeIntervalMs) / base.probeIntervalMs));
  return {
    probeIntervalMs,
    probeTimeoutMs: scale(base.probeTimeoutMs),
    gossipIntervalMs: scale(base.gossipIntervalMs),
    rejoinIntervalMs: scale(base.rejoinIntervalMs),
    pushPullIntervalMs: scale(base.pushPullIntervalMs),
    reconnectIntervalMs: scale(base.reconnectIntervalMs),
  };
}

const POSITIVE_INTEGERS: ReadonlyArray<keyof GossipConfig> = [
  'probeIntervalMs', 'probeTimeoutMs', 'suspicionMult', 'suspicionMaxTimeoutMult', 'retransmitMult',
  'gossipIntervalMs', 'awarenessMaxMultiplier', 'maxPacketBytes', 'maxMetaBytes', 'rejoinIntervalMs',
  'reconnectIntervalMs', 'pushPullIntervalMs',
];
const NON_NEGATIVE_INTEGERS: ReadonlyArray<keyof GossipConfig> = [
  'indirectChecks', 'gossipNodes', 'gossipToTheDeadMs', 'deadMemberRetentionMs',
];

/** Fills defaults and validates once, at the edge; errors name the field. */
export function compileGossipConfig(options: GossipConfigOptions = {}): GossipConfig {
  const config = { ...defaultGossipConfig(), ...options };
  for (const key of POSITIVE_INTEGERS) {
    const v = config[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', `must be a positive integer, got ${String(v)}`, `gossip.${key}`);
    }
  }
  for (const key of NON_NEGATIVE_INTEGERS) {
    const v = config[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', `must be a non-negative integer, got ${String(v)}`, `gossip.${key}`);
    }
  }
  for (const key of ['localHealthAwareness', 'dynamicSuspicion'] as const) {
    if (typeof config[key] !== 'boolean') {
      throw new CairnError('CAIRN_BAD_REQUEST', `must be true or false`, `gossip.${key}`);
    }
  }
  if (config.probeTimeoutMs >= config.probeIntervalMs) {
    throw new CairnError(
      'CAIRN_BAD_REQUEST',
      `must be shorter than probeIntervalMs (${config.probeIntervalMs}) to leave time for indirect probes`,
      'gossip.probeTimeoutMs',
    );
  }
  if (config.maxPacketBytes < 512 || config.maxPacketBytes > 65_000) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be between 512 and 65000 bytes`, 'gossip.maxPacketBytes');
  }
  return Object.freeze(config);
}
