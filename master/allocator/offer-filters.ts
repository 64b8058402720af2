// One framework's offer filters: "do not offer me these resources on that agent again
// until then", made when it declines an offer or gives back its unused part with a refusal
// time. Time is whatever `nowMs` the caller passes; nothing here reads a clock.

import type { Resources } from '../../shared/resources.ts';

interface Filter {
  /** The agent's resources the framework refused. */
  readonly refused: Resources;
  /** The filter applies while nowMs < expiresAtMs. */
  readonly expiresAtMs: number;
}

export class OfferFilters {
  private readonly byAgent = new Map<string, Filter[]>();

  /**
   * Filters made at nowMs until expiresAtMs. Expired filters on the same agent are dropped
   * here too, so a framework that keeps declining an agent it is rarely offered does not
   * pile them up.
   */
  add(agentId: string, refused: Resources, nowMs: number, expiresAtMs: number): void {
    const list = this.byAgent.get(agentId);
    if (list === undefined) {
      this.byAgent.set(agentId, [{ refused, expiresAtMs }]);
      return;
    }
    let live = 0;
    for (let i = 0; i < list.length; i++) if (nowMs < list[i].expiresAtMs) list[live++] = list[i];
    list.length = live;
    list.push({ refused, expiresAtMs });
  }

  /**
   * Whether an offer of `available` on the agent is filtered at nowMs. A filter only holds
   * while what is on offer is no more than what was refused: once more becomes available
   * (a task ended, say) the framework may want it after all. Expired filters are dropped here.
   */
  filtered(agentId: string, available: Resources, nowMs: number): boolean {
    const list = this.byAgent.get(agentId);
    if (list === undefined) return false;
    let hit = false;
    let live = 0;
    for (let i = 0; i < list.length; i++) {
      const f = list[i];
      if (nowMs >= f.expiresAtMs) continue;
      list[live++] = f;
      if (!hit && f.refused.contains(available)) hit = true;
    }
    if (live === 0) this.byAgent.delete(agentId);
    else list.length = live;
    return hit;
  }

  /** Forgets the filters on one agent (the agent left the cluster). */
  clearAgent(agentId: string): void {
    this.byAgent.delete(agentId);
  }

  clear(): void {
    this.byAgent.clear();
  }

  get size(): number {
    let n = 0;
    for (const list of this.byAgent.values()) n += list.length;
    return n;
  }
}
