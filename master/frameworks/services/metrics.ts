// What the services framework adds to the master's /metrics: apps, and the instances its
// launch queue still wants to start (how many, and how long the app waiting longest has had
// instances waiting). The queue lives with the running instance on the leader: another
// master shows none. How long an app has waited is seen at each scrape, so it is as exact as
// the scrape interval.

import type { FrameworkMetrics } from '../../../shared/framework-host/contract.ts';
import type { FrameworkStore } from '../../../shared/framework-host/store.ts';
import { promFamily } from '../../../shared/prometheus.ts';
import type { ServicesRuntime } from './runtime.ts';

export function servicesMetrics(store: FrameworkStore, instance: () => ServicesRuntime | undefined): FrameworkMetrics {
  /** Apps with instances waiting at the last scrape, and since when they have been seen waiting. */
  const waitingSince = new Map<string, number>();
  return {
    families: (nowMs) => {
      const queue = instance()?.queue() ?? new Map();
      let queued = 0;
      const seen = new Set<string>();
      for (const [appId, facts] of queue) {
        if (facts.waiting <= 0) continue;
        queued += facts.waiting;
        seen.add(appId);
        if (!waitingSince.has(appId)) waitingSince.set(appId, nowMs);
      }
      for (const appId of [...waitingSince.keys()]) if (!seen.has(appId)) waitingSince.delete(appId);
      const oldest = Math.min(nowMs, ...waitingSince.values());
      return [
        promFamily('cairn_apps', 'gauge', 'Apps the services framework holds.', [{ value: store.entries('app/').length }]),
        promFamily('cairn_app_instances_queued', 'gauge', "App instances the services framework's launch queue still wants to start (on the leader).", [{ value: queued }]),
        promFamily('cairn_app_instances_queued_oldest_wait_seconds', 'gauge', 'How long the app waiting longest has had instances waiting, as seen at scrapes; 0 when none waits.', [{ value: (nowMs - oldest) / 1000 }]),
      ];
    },
  };
}
