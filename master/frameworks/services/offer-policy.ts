// When the services framework asks for offers (the runtime's one switch, offer-interest.ts):
// it declines for long while nothing waits, so it suppresses only once an unwanted offer
// comes; while instances wait and no offer does, it revives again (a REVIVE lost as a leader
// changes would leave them waiting behind a filter — Marathon repeats its revives for this).

import type { InterestPolicy } from '../../../shared/framework-runtime/offer-interest.ts';

export const REVIVE_AGAIN_MS = 5_000;

export const SERVICES_INTEREST: InterestPolicy = { reviveAgainMs: REVIVE_AGAIN_MS, suppressOnOffer: true };
