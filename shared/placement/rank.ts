// Ranking: in which order a demand tries the feasible candidates, and in which order demands
// are placed. What the frameworks do today is first fit in the offers' order, a restarted
// replica's previous agent first, and the largest demands first (packing: what is left stays
// in large pieces for the next gang).

import type { Candidate } from './candidate.ts';
import type { Demand } from './demand.ts';

/** The candidates a demand tries, best first. */
export type Ranker = (demand: Demand, candidates: readonly Candidate[]) => readonly Candidate[];

/** First fit: the candidates in the order given. */
export const inGivenOrder: Ranker = (_demand, candidates) => candidates;

/** The demand's previous agent first (it keeps its address when it can), then the order given. */
export const previousAgentFirst: Ranker = (demand, candidates) => {
  const prev = demand.previous?.agentId;
  const at = prev === undefined ? -1 : candidates.findIndex((c) => c.agentId === prev);
  return at <= 0 ? candidates : [candidates[at]!, ...candidates.slice(0, at), ...candidates.slice(at + 1)];
};

/** A demand's size for packing: GPUs are the scarcest, then cpus, then memory. */
export function demandSize(d: Demand): number {
  return d.scalars.gpus * 1e9 + d.scalars.cpus * 1e5 + d.scalars.mem;
}

/** Largest demands first (ties by key), so the big ones find room before small ones split it. */
export function largestFirst(demands: readonly Demand[]): Demand[] {
  return [...demands].sort((a, b) => demandSize(b) - demandSize(a) || a.key - b.key);
}
