// Majority arithmetic over one configuration's voters: the index a quorum has matched, and
// whether an election is won, lost or still open. Single-server membership changes mean
// there is only ever one configuration to count in (no joint quorums).

import type { NodeId } from './types.ts';

export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/**
 * The highest index that a majority of `voters` have matched (`match(id)` each). With no
 * voters nothing can be committed, so 0.
 */
export function quorumMatchIndex(voters: Iterable<NodeId>, match: (id: NodeId) => number): number {
  const matched: number[] = [];
  for (const id of voters) matched.push(match(id));
  if (matched.length === 0) return 0;
  matched.sort((a, b) => b - a);
  return matched[quorumSize(matched.length) - 1];
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** `votes` maps a voter to its answer; voters absent from it have not answered yet. */
export function voteResult(voters: Iterable<NodeId>, votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let total = 0;
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    total++;
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  if (total === 0) return 'lost';
  const q = quorumSize(total);
  if (granted >= q) return 'won';
  if (total - rejected < q) return 'lost';
  return 'pending';
}

/** Whether the voters for which `yes(id)` holds form a majority. */
export function isQuorum(voters: Iterable<NodeId>, yes: (id: NodeId) => boolean): boolean {
  let total = 0;
  let count = 0;
  for (const id of voters) {
    total++;
    if (yes(id)) count++;
  }
  return total > 0 && count >= quorumSize(total);
}
