// The tuning paper's dynamic multi-tenant strategy (its Algorithm 1), as a pure state machine
// one experiment keeps. Every experiment is a framework of its own, so the master's DRF
// shares the cluster between them; this adds what DRF cannot know: how much a search still
// gains from more trials. A search that has stopped gaining (by one of the two rules below)
// lowers its priority, and at level L declines L × d offers before it takes one, so searches
// still improving get those resources. Declining is only useful when someone else wants
// what is declined: the paper's App Core infers that from the offers (a declined offer that
// comes back no smaller went unwanted), but all experiments live in one tuning core here,
// which knows whether an experiment of a higher priority has a trial waiting that the offer
// would hold. When none has, the offer is taken — declining would leave it idle for the
// decline's filter — and d such offers running mean the cluster is idle: the search raises
// its priority again. The state is soft: a new leader starts every search at level 0, as a
// new search would (under `gap`, the next result puts it back where its results say).
//
// What lowers the level is a rule, chosen per experiment (`spec.scheduling.rule`):
// - `stagnation` (the default, and what the level above describes): `patience` finished trials
//   without a better best lower it one level; an improvement raises it one.
// - `gap`, the paper's Algorithm 1 as written: after n > k·m results, the smallest gap g
//   between neighbours among the best m results, against a threshold G that steps up. The
//   paper's sentence leaves two things open; our reading, stated here:
//   * the threshold steps up by G a level: the thresholds are G, 2G, … maxLevel·G, and the
//     search's level is how many of them g lies below. Best results bunched together (a small
//     g: the search sits on a plateau, more trials gain little) mean a low priority; results
//     spread apart (a new best well clear of the rest) a high one. g ≥ maxLevel·G is level 0,
//     g < G the lowest level.
//   * the level is judged afresh after every result, from the results alone (`gapLevel`, a
//     pure function), so a search whose top results spread again climbs back; until there are
//     more than k·m results it is level 0 (too few results to judge by).
//   The idle-cluster signal (d offers running that nobody else wanted) raises the level one
//   step under both rules, as the paper's App Core does when its declines do not shrink the
//   offers; under `gap` the next result judges it afresh.

import type { DynamicRule, DynamicSchedulingSettings } from '../../../shared/tuning/model.ts';

export type OfferVerdict = 'take' | 'decline';

/** The gap rule's settings when an experiment names none (for metrics in [0, 1], such as accuracy). */
export const GAP_DEFAULTS = { topResults: 3, warmupMultiple: 2, gapThreshold: 0.001 } as const;

/** The settings `gapLevel` reads. */
export interface GapSettings {
  readonly topResults: number;
  readonly warmupMultiple: number;
  readonly gapThreshold: number;
  readonly maxLevel: number;
}

/** The smallest gap between neighbours among the best `m` results (higher is better). */
export function smallestTopGap(results: readonly number[], m: number): number {
  const top = [...results].sort((a, b) => b - a).slice(0, m);
  let g = Infinity;
  for (let i = 1; i < top.length; i++) g = Math.min(g, top[i - 1] - top[i]);
  return g;
}

/**
 * The paper's Algorithm 1 as a pure function: the level (0 highest) of a search with these
 * results (objective values, higher is better; a minimised metric negated). Level 0 until
 * n > k·m; then the number of thresholds G, 2G, … maxLevel·G that the smallest gap g among
 * the best m lies below.
 */
export function gapLevel(results: readonly number[], s: GapSettings): number {
  if (results.length <= s.warmupMultiple * s.topResults) return 0;
  const g = smallestTopGap(results, s.topResults);
  let level = 0;
  for (let step = 1; step <= s.maxLevel; step++) if (g < step * s.gapThreshold) level++;
  return level;
}

export class DynamicPriority {
  /** 0 is the highest priority: every offer is taken. */
  private levelNow = 0;
  private finishedWithoutGain = 0;
  private declinedRun = 0;
  private idleSignals = 0;

  private readonly rule: DynamicRule;
  private readonly gap: GapSettings;

  constructor(private readonly settings: DynamicSchedulingSettings) {
    this.rule = settings.rule ?? 'stagnation';
    this.gap = {
      topResults: settings.topResults ?? GAP_DEFAULTS.topResults,
      warmupMultiple: settings.warmupMultiple ?? GAP_DEFAULTS.warmupMultiple,
      gapThreshold: settings.gapThreshold ?? GAP_DEFAULTS.gapThreshold,
      maxLevel: settings.maxLevel,
    };
  }

  get level(): number {
    return this.levelNow;
  }

  /**
   * A trial finished; `improved` when it bettered the best result so far; `results` every
   * result so far, this one included (objective values, higher is better), which the gap
   * rule judges.
   */
  trialFinished(improved: boolean, results: readonly number[] = []): void {
    if (this.rule === 'gap') {
      const level = gapLevel(results, this.gap);
      if (level !== this.levelNow) this.lower(level - this.levelNow);
      return;
    }
    if (improved) {
      this.finishedWithoutGain = 0;
      this.lower(-1);
      return;
    }
    if (++this.finishedWithoutGain >= this.settings.patience) {
      this.finishedWithoutGain = 0;
      this.lower(1);
    }
  }

  /**
   * What to do with an offer this search could use; `othersWaiting` when a search of a higher
   * priority has a trial waiting that the offer would hold.
   */
  offer(othersWaiting: boolean): OfferVerdict {
    if (this.levelNow === 0) return 'take';
    if (!othersWaiting) {
      if (++this.idleSignals >= this.settings.declinesPerLevel) this.lower(-1);
      return 'take';
    }
    this.idleSignals = 0;
    if (this.declinedRun < this.settings.declinesPerLevel * this.levelNow) {
      this.declinedRun++;
      return 'decline';
    }
    this.declinedRun = 0;
    return 'take';
  }

  private lower(by: number): void {
    this.levelNow = Math.min(this.settings.maxLevel, Math.max(0, this.levelNow + by));
    this.declinedRun = 0;
    this.idleSignals = 0;
  }
}
