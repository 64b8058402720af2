// What the whole-cluster simulation remembers across masters, for the invariants that no one
// master's state can check: every committed entry, the leader of each term, and since when
// each agent has been silent.
//   - Entries: what one master applies at an index, every master applies there (no
//     acknowledged write lost, none invented — a member that lost its storage and founded
//     again would apply other entries at the same indexes).
//   - Leaders: at most one per term, and a new leader holds every entry applied anywhere.
//   - Liveness: an agent silent (crashed, host lost, cut off) is marked unreachable by a
//     leader within a bound of the later of its silence and the leader's start — wall-clock
//     steps or not.

import type { LeaderConfig } from '../../master/leader/config.ts';
import type { NodeId } from '../../shared/raft/types.ts';
import type { SimAgent } from './cluster-agent.ts';
import type { SimMaster } from './cluster-master.ts';

/** The ping window and a round more to notice, then two seconds for the change to commit. */
export function livenessBoundMs(config: LeaderConfig): number {
  return config.pingIntervalMs * (config.maxMissedPings + 2) + 2_000;
}

export class ClusterHistory {
  /** Per index: the entry first applied there (by any master), and by whom. */
  private readonly entries = new Map<number, { term: number; data: Uint8Array; by: NodeId }>();
  private maxApplied = 0;
  private readonly leaderOfTerm = new Map<number, NodeId>();
  private readonly silentSince = new Map<SimAgent, number>();

  /** A master applied an entry; returns the violation, if it differs from what another applied there. */
  applied(masterId: NodeId, index: number, term: number, data: Uint8Array): string | undefined {
    const first = this.entries.get(index);
    if (first === undefined) {
      this.entries.set(index, { term, data, by: masterId });
      this.maxApplied = Math.max(this.maxApplied, index);
      return undefined;
    }
    if (first.term === term && Buffer.compare(first.data, data) === 0) return undefined;
    return `master ${masterId} applied another entry at index ${index} (term ${term}) than master ${first.by} did (term ${first.term}): a committed entry was lost or replaced`;
  }

  /** One leader per term; a leader first seen holds every entry applied anywhere so far. */
  checkLeaders(masters: readonly SimMaster[], nowMs: number): string[] {
    const out: string[] = [];
    for (const m of masters) {
      if (!m.up || m.node.role !== 'leader') continue;
      const term = m.node.term;
      const known = this.leaderOfTerm.get(term);
      if (known === m.id) continue;
      if (known !== undefined) {
        out.push(`masters ${known} and ${m.id} both lead term ${term} (at ${nowMs} ms)`);
        continue;
      }
      this.leaderOfTerm.set(term, m.id);
      const last = this.entries.get(this.maxApplied);
      if (last !== undefined && this.maxApplied > 1 && m.node.termAt(this.maxApplied) !== last.term) {
        out.push(`master ${m.id} leads term ${term} without entry ${this.maxApplied} (term ${last.term}), which master ${last.by} applied: a committed entry is missing from its log`);
      }
    }
    return out;
  }

  /** Every silent agent a leader still counts reachable past the bound. */
  checkLiveness(leaders: readonly SimMaster[], agents: readonly SimAgent[], nowMs: number, boundMs: number): string[] {
    for (const a of agents) {
      const silent = !a.up || a.partitioned;
      if (!silent) this.silentSince.delete(a);
      else if (!this.silentSince.has(a)) this.silentSince.set(a, nowMs);
    }
    const out: string[] = [];
    for (const leader of leaders) {
      for (const [a, since] of this.silentSince) {
        const from = Math.max(since, leader.ledSinceMs);
        if (nowMs - from <= boundMs || a.agentId === '') continue;
        if (leader.state.agents.get(a.agentId)?.reachable === true) {
          out.push(`master ${leader.id} still counts agent ${a.hostname} (${a.agentId}) reachable ${nowMs - from} ms after it went silent (bound ${boundMs} ms)`);
        }
      }
    }
    return out;
  }
}
