// The one placement pipeline every framework uses, after Nomad's scheduler iterators:
// for each demand, in the order given, the candidates in ranked order are checked for
// feasibility (checks.ts, the first failure is that candidate's reason), and the first
// feasible one is selected (select.ts): the demand takes its resources and ports there.
// What did not fit comes back with each candidate's reason, so the sentences that explain
// a wait (sdk/why-waiting.ts) and a service's declined offers come from the same checks.
// Pure: no I/O; it changes only the `left` of the candidates it is given.

import type { Candidate } from './candidate.ts';
import { firstFailure, RESOURCE_CHECKS, type Check, type Reason } from './checks.ts';
import type { Demand } from './demand.ts';
import { inGivenOrder, type Ranker } from './rank.ts';
import { select, type Taken } from './select.ts';

export interface PlaceRequest {
  /** In the order they are placed (rank.ts largestFirst packs). */
  demands: readonly Demand[];
  /** A working copy: each placement takes from its candidate's `left`. */
  candidates: readonly Candidate[];
  /** Feasibility, in the order their reasons win; defaults to the resource checks alone. */
  checks?: readonly Check[];
  /** The order a demand tries the candidates; defaults to the order given (first fit). */
  rank?: Ranker;
  /** Place at most this many; the rest come back unplaced, with no reasons. */
  limit?: number;
  /** Stop at the first demand that fits nowhere (all or nothing: the caller launches none). */
  stopAtFirstMiss?: boolean;
}

export interface Placed extends Taken {
  demand: Demand;
  candidate: Candidate;
}

export interface Unplaced {
  demand: Demand;
  /** Each candidate tried, by id, and the first check it failed; empty when it was not tried. */
  reasons: Map<string, Reason>;
}

export interface PlaceResult {
  placed: Placed[];
  unplaced: Unplaced[];
}

/** Where one demand goes among `candidates`, or every candidate's reason why not. */
export function placeOne(demand: Demand, candidates: readonly Candidate[], checks: readonly Check[]): { placed?: Placed; reasons: Map<string, Reason> } {
  const reasons = new Map<string, Reason>();
  for (const candidate of candidates) {
    const failed = firstFailure(demand, candidate, checks);
    if (failed !== undefined) {
      reasons.set(candidate.id, failed);
      continue;
    }
    const taken = select(demand, candidate);
    if (taken === undefined) {
      reasons.set(candidate.id, 'ports');
      continue;
    }
    for (const check of checks) check.placed?.(demand, candidate);
    return { placed: { demand, candidate, ...taken }, reasons };
  }
  return { reasons };
}

export function place(req: PlaceRequest): PlaceResult {
  const checks = req.checks ?? RESOURCE_CHECKS;
  const rank = req.rank ?? inGivenOrder;
  const limit = req.limit ?? Infinity;
  const placed: Placed[] = [];
  const unplaced: Unplaced[] = [];
  let stopped = false;
  for (const demand of req.demands) {
    if (stopped || placed.length >= limit) {
      unplaced.push({ demand, reasons: new Map() });
      continue;
    }
    const one = placeOne(demand, rank(demand, req.candidates), checks);
    if (one.placed) placed.push(one.placed);
    else {
      unplaced.push({ demand, reasons: one.reasons });
      stopped = req.stopAtFirstMiss === true;
    }
  }
  return { placed, unplaced };
}

/** How many candidates gave each reason (Nomad's "filtered by" counts), over what did not fit. */
export function countReasons(unplaced: readonly Unplaced[]): Map<Reason, number> {
  const counts = new Map<Reason, number>();
  for (const u of unplaced) for (const r of u.reasons.values()) counts.set(r, (counts.get(r) ?? 0) + 1);
  return counts;
}
