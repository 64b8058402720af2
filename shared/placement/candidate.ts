// Where a demand may go: an offer, or an agent's offers pooled (a gang spreads over agents),
// or an agent's total (asking whether something could ever fit). `left` is the working copy
// the pipeline takes from as it places, so a caller sees what each candidate has left.

import type { Resources } from '../resources.ts';
import type { HeldOffer } from '../sdk/held-offer.ts';

export interface Candidate {
  /** Its key in the reasons a placement gives: an offer's id, or an agent's. */
  id: string;
  agentId: string;
  hostname: string;
  ip?: string;
  attributes: Readonly<Record<string, string>>;
  /** The role its resources carry (`*` when unreserved). */
  role: string;
  offerIds: string[];
  /** What is still free on it. */
  left: Resources;
  /** Set when the agent cannot take tasks now (node filters in checks.ts read it). */
  unreachable?: boolean;
  draining?: boolean;
}

/** The offers held, one candidate per agent with what they hold together, in first-offer order. */
export function poolByAgent(offers: readonly HeldOffer[]): Candidate[] {
  const pools = new Map<string, Candidate>();
  for (const o of offers) {
    const p = pools.get(o.agentId);
    if (p) {
      p.offerIds.push(o.id);
      p.left = p.left.add(o.resources);
    } else {
      pools.set(o.agentId, { id: o.agentId, agentId: o.agentId, hostname: o.hostname, ip: o.ip, attributes: {}, role: o.role, offerIds: [o.id], left: o.resources });
    }
  }
  return [...pools.values()];
}

/**
 * An agent as a candidate with no offer behind it: its total (could this ever fit there?) or
 * what it has free (does it fit now?), for the explanations of a wait.
 */
export function agentCandidate(
  agent: { id: string; hostname: string; attributes?: Readonly<Record<string, string>> },
  left: Resources,
  condition: Pick<Candidate, 'unreachable' | 'draining'> = {},
): Candidate {
  return { id: agent.id, agentId: agent.id, hostname: agent.hostname, attributes: agent.attributes ?? {}, role: '*', offerIds: [], left, ...condition };
}
