// An offer as the built-in frameworks hold it while they decide: its agent, its resources
// parsed once, and the role its resources carry (what a launch from it is charged to).

import type { OfferJson } from '../mesos-v1.ts';
import { Resources } from '../resources.ts';
import { offerRole } from '../placement/offer-role.ts';

export interface HeldOffer {
  id: string;
  agentId: string;
  hostname: string;
  ip: string;
  resources: Resources;
  /** The offer's role, written on the resources taken from it. */
  role: string;
  /** The subscription it came through (jobs/model.ts laneOf), when not its role alone: jobs draw only on their own. */
  lane?: string;
}

export function heldOffer(o: OfferJson): HeldOffer {
  return {
    id: o.id.value,
    agentId: o.agent_id.value,
    hostname: o.hostname,
    ip: o.url?.address?.ip ?? o.hostname,
    resources: Resources.fromMesos(o.resources),
    role: offerRole(o.resources),
  };
}
