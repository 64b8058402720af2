// Allocation: the allocator's offers turned into outstanding offers and OFFERS events, and
// offers taken back (timed out, rescinded, or their framework or agent gone).

import type { OfferJson } from '../../shared/mesos-v1.ts';
import { Resources } from '../../shared/resources.ts';
import type { OutstandingOffer } from '../offers.ts';
import type { LeaderState } from './leader-state.ts';
import { refreshHeldElsewhere } from './quotas.ts';
import { offerJson } from './scheduler-events.ts';

const MIN_OFFER = Resources.of({ cpus: 0.01 });
const MIN_OFFER_MEM = Resources.of({ mem: 32 });
/** How many rescinded offer ids are remembered, to tell a late ACCEPT why it failed. */
const RESCINDED_MEMORY = 10_000;

export function allocate(leader: LeaderState): void {
  const now = leader.nowMs;
  const state = leader.registry();
  recoverOffers(leader, (o) => now - o.createdAtMs >= leader.config.offerTimeoutMs, true);
  refreshHeldElsewhere(leader);
  const made = leader.allocator.allocate(now);
  const byFramework = new Map<string, OfferJson[]>();
  for (const m of made) {
    const session = leader.sessions.get(m.frameworkId);
    const agent = state.agents.get(m.agentId);
    if (!session || !agent || (!m.resources.contains(MIN_OFFER) && !m.resources.contains(MIN_OFFER_MEM))) {
      leader.allocator.recoverResources(m.frameworkId, m.agentId, m.resources, 0, now);
      continue;
    }
    const offer = leader.offers.create(m.frameworkId, m.agentId, m.resources, now);
    const role = state.frameworks.get(m.frameworkId)?.role ?? '*';
    const list = byFramework.get(m.frameworkId) ?? [];
    list.push(offerJson(offer.id, m.frameworkId, role, agent, m.resources));
    byFramework.set(m.frameworkId, list);
  }
  for (const [frameworkId, offers] of byFramework) {
    leader.metrics.offersMade += offers.length;
    leader.toFramework(frameworkId, { type: 'OFFERS', offers: { offers } });
  }
}

/** Takes offers back; with `rescind` the framework is told (RESCIND), else it is gone. */
export function recoverOffers(leader: LeaderState, pred: (o: OutstandingOffer) => boolean, rescind: boolean): void {
  for (const o of leader.offers.removeWhere(pred)) {
    if (rescind) {
      leader.metrics.offersRescinded++;
      leader.rescinded.add(o.id);
      if (leader.rescinded.size > RESCINDED_MEMORY) leader.rescinded.delete(leader.rescinded.values().next().value as string);
      leader.toFramework(o.frameworkId, { type: 'RESCIND', rescind: { offer_id: { value: o.id } } });
    }
    if (leader.allocator.hasAgent(o.agentId) && leader.allocator.hasFramework(o.frameworkId)) {
      leader.allocator.recoverResources(o.frameworkId, o.agentId, o.resources, 0, leader.nowMs);
    }
  }
}
