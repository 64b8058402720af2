// What `cairn tune submit --wait` says while it follows an experiment, beside each ended
// trial: a new condition of the experiment, each trial as it starts, and why the waiting
// trials wait (what is short and who holds it) when that changes. Kept between polls; each
// call gets the latest view and returns the lines to print.

import type { ExperimentView } from '../../../shared/tuning/views.ts';

/** The core's prefix for a pending trial that waits for room (master/frameworks/tuning/core.ts WAITING_FOR_ROOM). */
const WAITING_FOR_ROOM = 'waiting for room: ';

export class ExperimentProgress {
  private conditions = 0;
  private readonly started = new Set<string>();
  private waiting: string | undefined;

  lines(e: ExperimentView): string[] {
    const out: string[] = [];
    // The first look shows where it stands, not its whole story.
    const fresh = this.conditions === 0 ? e.conditions.slice(-1) : e.conditions.slice(this.conditions);
    this.conditions = e.conditions.length;
    for (const c of fresh) out.push(`experiment ${e.name}: ${c.type} (${c.reason}): ${c.message}`);
    for (const t of [...e.trials].sort((a, b) => a.index - b.index)) {
      // A distributed trial is Starting from its job's submission; it has started once its chief runs (it has a task).
      if (t.state !== 'Running' && !(t.state === 'Starting' && t.taskId !== undefined)) continue;
      // An attempt started again is news too: its task id changes.
      const key = `${t.index}/${t.name}/${t.startedMs ?? ''}`;
      if (this.started.has(key)) continue;
      this.started.add(key);
      out.push(`trial ${t.index} started${t.hostname ? ` on ${t.hostname}` : ''}`);
    }
    // Pending trials wait for an offer; a distributed trial's job (Starting) for its gang to fit.
    const waits = (t: ExperimentView['trials'][number]) => (t.state === 'Pending' || t.state === 'Starting') && t.message?.startsWith(WAITING_FOR_ROOM) === true;
    const reason = e.trials.find(waits)?.message;
    if (reason !== undefined && reason !== this.waiting) {
      const n = e.trials.filter((t) => t.state === 'Pending' || (waits(t) && t.state === 'Starting')).length;
      out.push(`${n} trial${n === 1 ? '' : 's'} ${reason}`);
    }
    this.waiting = reason;
    return out;
  }
}
