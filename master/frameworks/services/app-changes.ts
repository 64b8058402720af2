// Changes to apps from the REST API, on the leader: one at a time (a lock check and its
// write never interleave with another's), each one write of the app, its version and its
// deployment — durable before the answer, so an acknowledged change survives the leader.
// One deployment per app: a change while one runs is a 409 naming it, unless forced (the
// running one is then dropped and the new one starts from where things stand).

import { randomUUID } from 'node:crypto';
import type { FrameworkStore } from '../../../shared/framework-host/store.ts';
import type { StorePut } from '../../../shared/framework-host/store.ts';
import type { ParsedApp } from './app-parse.ts';
import type { AppDefinition, StoredApp } from './app-model.ts';
import { lockedBy, MarathonError, unknownApp } from './app-errors.ts';
import { appToJson } from './app-json.ts';
import type { EventBus } from './event-bus.ts';
import {
  appKey, deploymentKey, failureKey, instanceKey, ServicesRecords, versionKey,
  type DeploymentAction, type DeploymentRecord, type InstanceRecord,
} from './records.ts';
import { deploymentPlanJson } from './views.ts';
import { marathonApp } from './marathon-shape.ts';

/**
 * Marathon's `--max_versions` default: an app keeps its 50 latest versions (and the one its
 * config dates from); each is a whole copy of the definition, and a scale writes one too.
 */
export const MAX_APP_VERSIONS = 50;

export interface DeploymentStarted {
  deploymentId: string;
  version: string;
  stored: StoredApp | null;
}

/** What changes need of the service they belong to. */
export interface ChangeHost {
  readonly records: ServicesRecords;
  readonly store: FrameworkStore;
  readonly bus: EventBus;
  /** The leader's working copy of the instance records. */
  readonly instances: Map<string, InstanceRecord>;
  /** Launches of the app wait no longer (a new config, a restart, a delete). */
  resetBackoff(appId: string): void;
  /** Something changed: subscribe if not yet, and run a round. */
  changed(): void;
}

export class AppChanges {
  private apiChain: Promise<unknown> = Promise.resolve();
  private lastVersionMs = 0;

  constructor(private readonly host: ChangeHost) {
    // Events go to the streams of those who may view the app: the bus reads owners here.
    host.bus.readOwnersFrom((appId) => host.records.app(appId)?.owner);
  }

  /** Runs API changes one after another. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.apiChain.then(fn, fn);
    this.apiChain = next.catch(() => {});
    return next;
  }

  private nextVersion(): string {
    // Versions order an app's history: strictly increasing even within one millisecond.
    const ms = Math.max(Date.now(), this.lastVersionMs + 1);
    this.lastVersionMs = ms;
    return new Date(ms).toISOString();
  }

  private deploymentsOf(appId: string): DeploymentRecord[] {
    return this.host.records.deployments().filter((d) => d.appId === appId);
  }

  private checkLock(appId: string, force: boolean): string[] {
    const held = this.deploymentsOf(appId).map((d) => d.id);
    if (held.length > 0 && !force) throw lockedBy(appId, held);
    return held;
  }

  private async commit(stored: StoredApp | null, appId: string, action: DeploymentAction, previous: StoredApp | null, cancelled: string[], extra: StorePut[] = []): Promise<DeploymentStarted> {
    const version = stored?.version ?? this.nextVersion();
    const cancelledRecords = cancelled.map((id) => this.host.records.deployment(id)).filter((d): d is DeploymentRecord => d !== undefined);
    const deployment: DeploymentRecord = { id: randomUUID(), appId, version, action, previous, target: stored };
    const puts: StorePut[] = stored
      ? [...ServicesRecords.appChange(stored, deployment, cancelled), ...this.oldVersions(stored)]
      : [
          { key: appKey(appId), value: null },
          { key: failureKey(appId), value: null },
          ...this.host.records.versions(appId).map((v) => ({ key: versionKey(appId, v), value: null })),
          ...cancelled.map((id) => ({ key: deploymentKey(id), value: null })),
          ServicesRecords.put(deploymentKey(deployment.id), deployment),
        ];
    this.host.bus.knowOwner(appId, (stored ?? previous)?.owner);
    await this.host.store.write([...puts, ...extra]);
    for (const d of cancelledRecords) this.host.bus.publish('deployment_failed', { id: d.id, plan: deploymentPlanJson(d), reason: 'replaced by a forced change' });
    const plan = deploymentPlanJson(deployment);
    this.host.bus.publish('deployment_info', { plan, currentStep: plan.steps[0] });
    this.host.changed();
    return { deploymentId: deployment.id, version, stored };
  }

  /** Removals of the versions past MAX_APP_VERSIONS once `stored`'s is written, oldest first. */
  private oldVersions(stored: StoredApp): StorePut[] {
    const kept = this.host.records.versions(stored.app.id).filter((v) => v !== stored.version && v !== stored.configVersion);
    const over = kept.length + 1 + (stored.configVersion !== stored.version ? 1 : 0) - MAX_APP_VERSIONS;
    return kept.slice(0, Math.max(0, over)).map((v) => ({ key: versionKey(stored.app.id, v), value: null }));
  }

  /** `owner`: the creating principal ('' on a master that authenticates no one: none kept). */
  createApp(parsed: ParsedApp, force: boolean, clientIp: string, uri: string, owner = ''): Promise<DeploymentStarted> {
    return this.serial(async () => {
      const id = parsed.app.id;
      if (this.host.records.app(id)) throw new MarathonError(409, `An app with id [${id}] already exists.`);
      const cancelled = this.checkLock(id, force);
      const version = this.nextVersion();
      const stored: StoredApp = { app: parsed.app, version, configVersion: version, ...ownedBy(owner) };
      this.host.resetBackoff(id);
      this.host.bus.publish('api_post_event', { clientIp, uri, appDefinition: marathonApp({ ...appToJson(parsed.app), version }) });
      return this.commit(stored, id, 'StartApplication', null, cancelled);
    });
  }

  /**
   * Replaces an app (creating it when missing); `changed` tells whether it was created.
   * `authorize` throws when the caller may not change the app as it now is (or create it).
   */
  putApp(parsed: ParsedApp, force: boolean, clientIp: string, uri: string, owner = '', authorize?: (existing: StoredApp | undefined) => void): Promise<DeploymentStarted & { created: boolean }> {
    return this.serial(async () => {
      const id = parsed.app.id;
      const existing = this.host.records.app(id);
      // Checked again in turn: the app may have been created or deleted since the caller looked.
      authorize?.(existing);
      const cancelled = this.checkLock(id, force);
      const version = this.nextVersion();
      this.host.bus.publish('api_post_event', { clientIp, uri, appDefinition: marathonApp({ ...appToJson(parsed.app), version }) });
      if (!existing) {
        const r = await this.commit({ app: parsed.app, version, configVersion: version, ...ownedBy(owner) }, id, 'StartApplication', null, cancelled);
        return { ...r, created: true };
      }
      const configChanged = !sameConfig(existing.app, parsed.app);
      if (configChanged) this.host.resetBackoff(id);
      // A change keeps the app's owner: changing an app does not take it over.
      const stored: StoredApp = { app: parsed.app, version, configVersion: configChanged ? version : existing.configVersion, ...ownedBy(existing.owner) };
      const r = await this.commit(stored, id, configChanged ? 'RestartApplication' : 'ScaleApplication', existing, cancelled);
      return { ...r, created: false };
    });
  }

  restartApp(appId: string, force: boolean): Promise<DeploymentStarted> {
    return this.serial(async () => {
      const existing = this.host.records.app(appId);
      if (!existing) throw unknownApp(appId);
      const cancelled = this.checkLock(appId, force);
      const version = this.nextVersion();
      this.host.resetBackoff(appId);
      return this.commit({ app: existing.app, version, configVersion: version, ...ownedBy(existing.owner) }, appId, 'RestartApplication', existing, cancelled);
    });
  }

  deleteApp(appId: string, force: boolean): Promise<DeploymentStarted> {
    return this.serial(async () => {
      const existing = this.host.records.app(appId);
      if (!existing) throw unknownApp(appId);
      const cancelled = this.checkLock(appId, force);
      this.host.resetBackoff(appId);
      return this.commit(null, appId, 'StopApplication', existing, cancelled);
    });
  }

  /**
   * Kills tasks of an app. Without `scale` they are replaced; with it the app's instance
   * count drops by as many (a scaling deployment). Returns the killed tasks' records.
   */
  killTasks(appId: string, taskIds: string[] | 'all', scale: boolean, force: boolean, host?: string): Promise<{ killed: InstanceRecord[]; deployment?: DeploymentStarted }> {
    return this.serial(async () => {
      const existing = this.host.records.app(appId);
      if (!existing) throw unknownApp(appId);
      const mine = [...this.host.instances.values()].filter((r) => r.appId === appId && !r.killRequested && (host === undefined || r.hostname === host));
      const chosen = taskIds === 'all' ? mine : mine.filter((r) => taskIds.includes(r.taskId));
      if (taskIds !== 'all' && chosen.length === 0) throw new MarathonError(404, `Task '${taskIds.join(', ')}' does not exist`);
      // A locked app refuses a scaling kill before anything is marked: a 409 changes nothing.
      const cancelled = scale ? this.checkLock(appId, force) : [];
      const marked = chosen.map((r) => ({ ...r, killRequested: true }));
      for (const r of marked) this.host.instances.set(r.taskId, r);
      const markPuts = marked.map((r) => ServicesRecords.put(instanceKey(r.taskId), r));
      let deployment: DeploymentStarted | undefined;
      if (scale) {
        const app: AppDefinition = { ...existing.app, instances: Math.max(0, existing.app.instances - marked.length) };
        deployment = await this.commit({ app, version: this.nextVersion(), configVersion: existing.configVersion, ...ownedBy(existing.owner) }, appId, 'ScaleApplication', existing, cancelled, markPuts);
      } else {
        await this.host.store.write(markPuts);
        this.host.changed();
      }
      return { killed: marked, ...(deployment ? { deployment } : {}) };
    });
  }

  /** Rolls a deployment back (a new deployment to the app as it was), or with `force` just drops it. */
  deleteDeployment(id: string, force: boolean): Promise<DeploymentStarted | undefined> {
    return this.serial(async () => {
      const d = this.host.records.deployment(id);
      if (!d) throw new MarathonError(404, `DeploymentPlan ${id} does not exist`);
      if (force) {
        await this.host.store.write([{ key: deploymentKey(id), value: null }]);
        this.host.bus.publish('deployment_failed', { id, plan: deploymentPlanJson(d), reason: 'cancelled' });
        this.host.changed();
        return undefined;
      }
      this.host.bus.publish('deployment_failed', { id, plan: deploymentPlanJson(d), reason: 'rolled back' });
      if (d.previous === null) return this.commit(null, d.appId, 'StopApplication', d.target, [id]);
      const version = this.nextVersion();
      return this.commit({ app: d.previous.app, version, configVersion: d.previous.configVersion, ...ownedBy(d.previous.owner) }, d.appId, d.action === 'ScaleApplication' ? 'ScaleApplication' : 'RestartApplication', this.host.records.app(d.appId) ?? null, [id]);
    });
  }
}

/** The owner field of a stored app: left out when there is none (plain JSON has no undefined). */
function ownedBy(owner: string | undefined): { owner?: string } {
  return owner ? { owner } : {};
}

/** Whether two definitions differ only in their instance count (a scale, not a restart). */
export function sameConfig(a: AppDefinition, b: AppDefinition): boolean {
  return JSON.stringify({ ...appToJson(a), instances: 0 }) === JSON.stringify({ ...appToJson(b), instances: 0 });
}
