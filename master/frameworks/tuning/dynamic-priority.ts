// The tuning paper's dynamic multi-tenant strategy (its Algorithm 1), as a pure state machine
// one experiment keeps. Every experiment is a framework of its own, so the master's DRF
// shares the cluster between them; this adds what DRF cannot know: how much a search still
// gains from more trials. A search whose best result has not improved for `patience`
// finished trials lowers its priority one level, and at level L declines L × d offers before
// it takes one, so searches still improving get those resources; an improvement raises it
// one level. Declining is only useful when someone else wants what is declined: the paper's
// App Core infers that from the offers (a declined offer that comes back no smaller went
// unwanted), but all experiments live in one tuning core here, which knows whether an
// experiment of a higher priority has a trial waiting that the offer would hold. When none
// has, the offer is taken — declining would leave it idle for the decline's filter — and d
// such offers running mean the cluster is idle: the search raises its priority again. The
// state is soft: a new leader starts every search at level 0, as a new search would.

import type { DynamicSchedulingSettings } from './model.ts';

export type OfferVerdict = 'take' | 'decline';

export class DynamicPriority {
  /** 0 is the highest priority: every offer is taken. */
  private levelNow = 0;
  private finishedWithoutGain = 0;
  private declinedRun = 0;
  private idleSignals = 0;

  constructor(private readonly settings: DynamicSchedulingSettings) {}

  get level(): number {
    return this.levelNow;
  }

  /** A trial finished; `improved` when it bettered the best result so far. */
  trialFinished(improved: boolean): void {
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

  private lower(by: 1 | -1): void {
    this.levelNow = Math.min(this.settings.maxLevel, Math.max(0, this.levelNow + by));
    this.declinedRun = 0;
    this.idleSignals = 0;
  }
}
