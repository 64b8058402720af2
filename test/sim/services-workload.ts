// What the whole-cluster simulation asks of the services framework: a few apps created
// through Marathon's own app parser, then scaled, restarted (a rolling replacement) and some
// deleted, at times drawn from the seed over the fault phase. Each change is written as the
// REST API writes it (app-changes.ts): the app, its version and its deployment in one write,
// replacing a deployment still running (a forced change). Upgrade strategies and unreachable
// strategies vary per app, so every rolling rule and the replacement of lost instances are
// exercised; sizes follow the number of agents (2 cpus each, cluster.sim.ts).

import type { SeededRandom } from '../../shared/random.ts';
import type { AppDefinition, StoredApp } from '../../master/frameworks/services/app-model.ts';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { appKey, deploymentKey, ServicesRecords, versionKey, type DeploymentAction, type DeploymentRecord } from '../../master/frameworks/services/records.ts';
import type { StorePut } from '../../master/registry/commands.ts';
import type { SimServices } from './cluster-services.ts';

const STRATEGIES = [
  { minimumHealthCapacity: 1, maximumOverCapacity: 1 },
  { minimumHealthCapacity: 0.5, maximumOverCapacity: 0 },
  { minimumHealthCapacity: 0.5, maximumOverCapacity: 0.5 },
  { minimumHealthCapacity: 0, maximumOverCapacity: 0 },
];

export interface ServicesChange {
  atMs: number;
  what: string;
  apply: (s: SimServices) => void;
}

/** The change as AppChanges.commit writes it, with its deployment (cancelling the app's running ones). */
function commit(s: SimServices, appId: string, action: DeploymentAction, stored: StoredApp | null, version: string, id: string): void {
  const previous = s.records.app(appId) ?? null;
  const cancelled = s.records.deployments().filter((d) => d.appId === appId).map((d) => d.id);
  const deployment: DeploymentRecord = { id, appId, version, action, previous, target: stored };
  const puts: StorePut[] = stored
    ? ServicesRecords.appChange(stored, deployment, cancelled)
    : [
        { key: appKey(appId), value: null },
        ...s.records.versions(appId).map((v) => ({ key: versionKey(appId, v), value: null })),
        ...cancelled.map((c) => ({ key: deploymentKey(c), value: null })),
        ServicesRecords.put(deploymentKey(id), deployment),
      ];
  s.change(puts);
}

export function servicesWorkload(rng: SeededRandom, agentCount: number, safetyMs: number): ServicesChange[] {
  const changes: ServicesChange[] = [];
  const appCount = rng.range(2, 4);
  // Versions are ISO times, strictly increasing (as AppChanges makes them).
  let versionMs = Date.UTC(2026, 0, 1);
  const nextVersion = () => new Date((versionMs += 1_000)).toISOString();
  let deploymentSeq = 0;
  const maxInstances = Math.max(2, Math.floor(agentCount * 1.5));
  for (let a = 0; a < appCount; a++) {
    const appId = `/svc/app-${a}`;
    const strategy = rng.pick(STRATEGIES);
    const inactiveAfterSeconds = rng.pick([0, 0, 3]);
    const definition: AppDefinition = parseApp({
      id: appId, cmd: 'serve', cpus: 0.25, mem: 64, instances: rng.range(1, maxInstances),
      portDefinitions: rng.chance(0.5) ? [{ port: 0 }] : [],
      upgradeStrategy: strategy,
      backoffSeconds: 0.5, backoffFactor: 1.15, maxLaunchDelaySeconds: 5,
      unreachableStrategy: { inactiveAfterSeconds, expungeAfterSeconds: 600 },
    }).app;
    let atMs = rng.range(0, safetyMs / 3);
    const at = (ms: number, what: string, apply: (s: SimServices) => void) => changes.push({ atMs: ms, what: `${appId} ${what}`, apply });
    at(atMs, 'create', (s) => {
      const v = nextVersion();
      commit(s, appId, 'StartApplication', { app: definition, version: v, configVersion: v }, v, `d${++deploymentSeq}`);
    });
    const steps = rng.range(1, 4);
    for (let i = 0; i < steps; i++) {
      atMs += rng.range(1_000, safetyMs / 3);
      const kind = rng.pick(['scale', 'scale', 'restart', 'restart', 'delete'] as const);
      if (kind === 'delete') {
        at(atMs, 'delete', (s) => {
          if (s.records.app(appId)) commit(s, appId, 'StopApplication', null, nextVersion(), `d${++deploymentSeq}`);
        });
        break;
      }
      if (kind === 'scale') {
        const instances = rng.range(0, maxInstances);
        at(atMs, `scale to ${instances}`, (s) => {
          const existing = s.records.app(appId);
          if (!existing) return;
          const v = nextVersion();
          commit(s, appId, 'ScaleApplication', { app: { ...existing.app, instances }, version: v, configVersion: existing.configVersion }, v, `d${++deploymentSeq}`);
        });
      } else {
        at(atMs, 'restart', (s) => {
          const existing = s.records.app(appId);
          if (!existing) return;
          const v = nextVersion();
          commit(s, appId, 'RestartApplication', { app: existing.app, version: v, configVersion: v }, v, `d${++deploymentSeq}`);
        });
      }
    }
  }
  return changes.sort((x, y) => x.atMs - y.atMs);
}
