// Each app's launch delay (core.ts BackoffState) in the replicated store, under
// `delay/<app id>`: written with the round that counted the failure, so a leader that takes
// over keeps delaying where the old one did, and Marathon's `/v2/queue` shows the same time
// left on any leader. Pure puts; the shell writes them.

import type { JsonValue, StorePut } from '../../../shared/framework-host/store.ts';
import type { FrameworkStore } from '../../../shared/framework-host/store.ts';
import type { BackoffState } from './core.ts';

export const DELAY_KEY_PREFIX = 'delay/';
export const delayKey = (appId: string) => `${DELAY_KEY_PREFIX}${appId}`;

/** Every app's stored delay, by app id. */
export function storedDelays(store: Pick<FrameworkStore, 'entries'>): Map<string, BackoffState> {
  return new Map(store.entries(DELAY_KEY_PREFIX).map(([k, v]) => [k.slice(DELAY_KEY_PREFIX.length), v as unknown as BackoffState]));
}

/** The puts that take the store from `before` to `after`: changed delays written, those gone removed. */
export function delayPuts(before: ReadonlyMap<string, BackoffState>, after: ReadonlyMap<string, BackoffState>): StorePut[] {
  const puts: StorePut[] = [];
  for (const [appId, b] of after) {
    const was = before.get(appId);
    if (!was || was.failures !== b.failures || was.lastFailureAtMs !== b.lastFailureAtMs || was.configVersion !== b.configVersion) {
      puts.push({ key: delayKey(appId), value: { ...b } as unknown as JsonValue });
    }
  }
  for (const appId of before.keys()) if (!after.has(appId)) puts.push({ key: delayKey(appId), value: null });
  return puts;
}
