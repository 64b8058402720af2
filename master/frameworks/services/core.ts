// The services framework's decisions, as a pure function of what it knows:
//   (apps, deployments, instances with their observed state and health, offers, now)
//     → (launches, kills, instances to forget, deployments finished, backoff, queue facts).
// Level-triggered like a controller: the same input gives the same answer, so a new leader
// re-deriving it from the replicated store carries on where the old one stopped. No I/O, no
// clock, no randomness: the shell passes time in and gives launched instances their ids.
//
// The rolling rule (Marathon's TaskReplaceActor): with N wanted, never fewer than
// ceil(N × minimumHealthCapacity) ready instances, never more than
// floor(N × (1 + maximumOverCapacity)) alive ones; an instance is ready when running and,
// with health checks, healthy. When neither an old instance may stop nor a new one start,
// one more may start (as Marathon does), or the upgrade would never move.

import { Resources } from '../../../shared/resources.ts';
import { backoffDelayMs as delayAfter } from '../../../shared/sdk/restart-backoff.ts';
import { requiredPorts, type AppDefinition, type StoredApp } from './app-model.ts';
import type { Candidate } from '../../../shared/placement/candidate.ts';
import { constraintCheck, RESOURCE_CHECKS, roleCheck, type Check, type Reason } from '../../../shared/placement/checks.ts';
import { ConstraintTracker, fieldValue, type AgentFacts } from '../../../shared/placement/constraints.ts';
import { repeatDemand, type Demand } from '../../../shared/placement/demand.ts';
import { place } from '../../../shared/placement/pipeline.ts';

export type InstanceState = 'pending' | 'staging' | 'running' | 'killing' | 'unreachable' | 'terminal';

export interface InstanceView {
  taskId: string;
  appId: string;
  configVersion: string;
  agentId: string;
  hostname: string;
  attributes: Readonly<Record<string, string>>;
  launchedAtMs: number;
  state: InstanceState;
  /** When it became unreachable (state `unreachable`). */
  unreachableSinceMs?: number;
  /** The agent's last health result; undefined before the first. */
  healthy?: boolean;
  /** This framework asked for it to be killed (not a failure when it ends). */
  killRequested: boolean;
}

export interface DeploymentView {
  id: string;
  appId: string;
}

export interface OfferView {
  id: string;
  agentId: string;
  hostname: string;
  attributes: Readonly<Record<string, string>>;
  resources: Resources;
  /** The role of the offer's resources (`*` when unreserved). */
  role: string;
}

/**
 * An app's launch delay, as Marathon's RateLimiter keeps it: per app and config version (a new
 * config, a restart or a new app starts with none), grown by each failure, forgotten once
 * `maxLaunchDelaySeconds` passed without one. Replicated (launch-delays.ts), so a new leader
 * keeps delaying where the old one did.
 */
export interface BackoffState {
  /** The config version the failures were of; a delay of another version is no delay. */
  configVersion: string;
  /** Failures since the last reset. */
  failures: number;
  lastFailureAtMs: number;
}

export interface CoreInput {
  nowMs: number;
  /** The framework's role: offers reserved for another role are refused for it. */
  role: string;
  apps: readonly StoredApp[];
  deployments: readonly DeploymentView[];
  instances: readonly InstanceView[];
  offers: readonly OfferView[];
  backoff: ReadonlyMap<string, BackoffState>;
  /** Every agent's facts (GROUP_BY spreads over all values, not only those offered now). */
  agents: readonly AgentFacts[];
  /** How long an instance may stay `pending` (no task in the registry) before it is forgotten. */
  pendingTimeoutMs: number;
}

export interface LaunchDecision {
  appId: string;
  configVersion: string;
  offerId: string;
  agentId: string;
  hostname: string;
  attributes: Readonly<Record<string, string>>;
  resources: Resources;
  /** Host ports, PORT0 first. */
  ports: number[];
}

export type KillReason = 'scale' | 'upgrade' | 'deleted' | 'expunged' | 'overCapacity';

export const REJECT_REASONS = ['UnfulfilledRole', 'UnfulfilledConstraint', 'InsufficientCpus', 'InsufficientMemory', 'InsufficientDisk', 'InsufficientGpus', 'InsufficientPorts'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export interface AppQueueFacts {
  /** Instances it still wants to start. */
  waiting: number;
  /** Launches wait for the backoff until then (absent: not delayed). */
  delayUntilMs?: number;
  /** Offers looked at for it this round, and why each one was declined (first reason). */
  processed: number;
  declined: Partial<Record<RejectReason, number>>;
  launched: number;
}

export interface CoreOutput {
  launches: LaunchDecision[];
  kills: { taskId: string; reason: KillReason }[];
  /** Offers nothing was taken from. */
  declines: string[];
  /** Instances that are gone for good: their records can go. */
  forget: string[];
  /** Instances that ended without being asked to: each counts toward the app's backoff. */
  failed: { taskId: string; appId: string }[];
  finishedDeployments: string[];
  backoff: Map<string, BackoffState>;
  queue: Map<string, AppQueueFacts>;
}

/** The launch delay after `failures` failures (0: none): backoffSeconds × backoffFactor^(failures-1), at most maxLaunchDelaySeconds. */
export function backoffDelayMs(app: AppDefinition, failures: number): number {
  return delayAfter({ initialMs: app.backoffSeconds * 1000, factor: app.backoffFactor, maxMs: app.maxLaunchDelaySeconds * 1000 }, failures);
}

/** The app's delay, if it is of its current config version. */
function currentDelay(stored: StoredApp, b: BackoffState | undefined): BackoffState | undefined {
  return b && b.configVersion === stored.configVersion ? b : undefined;
}

/**
 * One more failure; a failure after a quiet spell longer than the longest delay starts the
 * count over (Marathon drops a delay once `maxLaunchDelaySeconds` has passed since it was set).
 */
export function recordFailure(stored: StoredApp, prev: BackoffState | undefined, nowMs: number): BackoffState {
  const cur = currentDelay(stored, prev);
  const configVersion = stored.configVersion;
  if (!cur || nowMs - cur.lastFailureAtMs > stored.app.maxLaunchDelaySeconds * 1000) return { configVersion, failures: 1, lastFailureAtMs: nowMs };
  return { configVersion, failures: cur.failures + 1, lastFailureAtMs: nowMs };
}

export function isReady(app: AppDefinition, i: InstanceView): boolean {
  return i.state === 'running' && (app.healthChecks.length === 0 || i.healthy === true);
}

/** Whether the instance still holds its place (alive and not given up on). */
function counts(app: AppDefinition, i: InstanceView, nowMs: number): boolean {
  if (i.state === 'terminal' || i.killRequested) return false;
  if (i.state === 'unreachable') return nowMs - (i.unreachableSinceMs ?? nowMs) < app.unreachableStrategy.inactiveAfterSeconds * 1000;
  return true;
}

/** Kill order among instances of one app: not yet ready first, then by killSelection. */
function killOrder(app: AppDefinition, list: InstanceView[]): InstanceView[] {
  const youngest = app.killSelection === 'YOUNGEST_FIRST';
  return [...list].sort((a, b) => {
    const ra = isReady(app, a) ? 1 : 0;
    const rb = isReady(app, b) ? 1 : 0;
    if (ra !== rb) return ra - rb;
    if (a.launchedAtMs !== b.launchedAtMs) return youngest ? b.launchedAtMs - a.launchedAtMs : a.launchedAtMs - b.launchedAtMs;
    return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
  });
}

interface AppPlan {
  stored: StoredApp;
  /** How many new instances to start this round. */
  toLaunch: number;
  /** One instance's resources and ports (a fixed number, or 0 for any). */
  demand: Omit<Demand, 'key'>;
  /** The framework's role, then the app's constraints, then resources: the first failure is the offer's reason. */
  checks: readonly Check[];
}

/** Marathon's names for the placement pipeline's reasons (its queue's offer statistics). */
const REJECT_OF: Partial<Record<Reason, RejectReason>> = {
  role: 'UnfulfilledRole', constraint: 'UnfulfilledConstraint', cpus: 'InsufficientCpus', mem: 'InsufficientMemory',
  disk: 'InsufficientDisk', gpus: 'InsufficientGpus', ports: 'InsufficientPorts',
};

export function decide(input: CoreInput): CoreOutput {
  const { nowMs } = input;
  const out: CoreOutput = {
    launches: [], kills: [], declines: [], forget: [], failed: [], finishedDeployments: [],
    backoff: new Map(input.backoff), queue: new Map(),
  };
  const apps = new Map(input.apps.map((a) => [a.app.id, a]));
  const byApp = new Map<string, InstanceView[]>();
  for (const i of input.instances) {
    const list = byApp.get(i.appId);
    if (list) list.push(i);
    else byApp.set(i.appId, [i]);
  }
  const deploymentOf = new Map<string, DeploymentView>();
  for (const d of input.deployments) deploymentOf.set(d.appId, d);

  // Instances that have ended, timed out before reaching the registry, or belong to no app.
  for (const [appId, list] of byApp) {
    const stored = apps.get(appId);
    const live: InstanceView[] = [];
    for (const i of list) {
      if (i.state === 'terminal' || (i.state === 'pending' && nowMs - i.launchedAtMs > input.pendingTimeoutMs)) {
        out.forget.push(i.taskId);
        if (!i.killRequested && stored) {
          out.failed.push({ taskId: i.taskId, appId });
          out.backoff.set(appId, recordFailure(stored, out.backoff.get(appId), nowMs));
        }
        continue;
      }
      if (stored && i.state === 'unreachable' && nowMs - (i.unreachableSinceMs ?? nowMs) >= stored.app.unreachableStrategy.expungeAfterSeconds * 1000) {
        out.forget.push(i.taskId);
        out.kills.push({ taskId: i.taskId, reason: 'expunged' });
        continue;
      }
      live.push(i);
    }
    if (!stored) {
      for (const i of live) if (!i.killRequested && i.state !== 'pending') out.kills.push({ taskId: i.taskId, reason: 'deleted' });
      // Pending ones are killed once they show up in the registry (a kill before that finds nothing).
    }
    byApp.set(appId, live);
  }
  for (const d of input.deployments) {
    if (!apps.has(d.appId) && (byApp.get(d.appId)?.length ?? 0) === 0) out.finishedDeployments.push(d.id);
  }

  const plans: AppPlan[] = [];
  const knownValues = new Map<string, Set<string>>();
  const sortedApps = [...apps.values()].sort((a, b) => (a.app.id < b.app.id ? -1 : 1));
  for (const stored of sortedApps) {
    const app = stored.app;
    const live = byApp.get(app.id) ?? [];
    const N = app.instances;
    const deployment = deploymentOf.get(app.id);
    const counted = live.filter((i) => counts(app, i, nowMs));
    // Outside a deployment every instance is current: only a deployment replaces old ones.
    const isNew = (i: InstanceView) => !deployment || i.configVersion === stored.configVersion;
    const fresh = counted.filter(isNew);
    const old = counted.filter((i) => !isNew(i));
    const occupying = live.filter((i) => i.state !== 'unreachable' || counts(app, i, nowMs)).length;
    const kills = new Set<string>();

    // Old instances: those not ready go at once; ready ones as long as enough stay ready.
    const minReady = Math.ceil(N * app.upgradeStrategy.minimumHealthCapacity - 1e-9);
    let ready = counted.filter((i) => isReady(app, i)).length;
    const freshReady = fresh.filter((f) => isReady(app, f)).length;
    for (const i of killOrder(app, old)) {
      if (!isReady(app, i)) kills.add(i.taskId);
      else if (ready - 1 >= minReady || freshReady >= N) {
        kills.add(i.taskId);
        ready--;
      }
    }
    // More current instances than wanted (scaled down).
    if (fresh.length > N) for (const i of killOrder(app, fresh).slice(0, fresh.length - N)) kills.add(i.taskId);
    const oldIds = new Set(old.map((o) => o.taskId));
    let oldKilled = 0;
    for (const id of kills) {
      const upgrade = oldIds.has(id);
      if (upgrade) oldKilled++;
      out.kills.push({ taskId: id, reason: upgrade ? 'upgrade' : 'scale' });
    }
    // Old instances out of reach (no longer counted) are asked to stop too: one that comes
    // back after the deployment would otherwise run the old config as if it were current.
    const oldAway = deployment ? live.filter((i) => i.state === 'unreachable' && !i.killRequested && !isNew(i) && !counts(app, i, nowMs)) : [];
    for (const i of oldAway) out.kills.push({ taskId: i.taskId, reason: 'upgrade' });

    let maxAlive = Math.floor(N * (1 + app.upgradeStrategy.maximumOverCapacity) + 1e-9);
    const oldLeft = old.length - oldKilled;
    // Only when nothing is under way: no kill in flight and every new instance already ready.
    const stuck = kills.size === 0 && oldLeft > 0 && occupying >= maxAlive && live.every((i) => !i.killRequested) && fresh.every((i) => isReady(app, i));
    if (deployment && old.length > 0 && stuck) maxAlive = occupying + 1;
    // Old instances asked to stop hold their places until they are gone: with every old one
    // killed but some still dying, new ones start only within the ceiling too.
    const oldDying = live.some((i) => i.killRequested && !isNew(i) && i.state !== 'unreachable');
    const room = deployment && (old.length > 0 || oldDying) ? Math.max(0, maxAlive - occupying) : Infinity;
    const missing = Math.max(0, N - fresh.length);
    let toLaunch = Math.min(missing, room);

    const bo = currentDelay(stored, out.backoff.get(app.id));
    const delayUntilMs = bo ? bo.lastFailureAtMs + backoffDelayMs(app, bo.failures) : 0;
    const facts: AppQueueFacts = { waiting: missing, processed: 0, declined: {}, launched: 0 };
    if (delayUntilMs > nowMs) {
      facts.delayUntilMs = delayUntilMs;
      toLaunch = 0;
    }
    out.queue.set(app.id, facts);

    if (deployment) {
      // An instance out of reach that was asked to stop holds nothing up: its kill is sent again when it is back.
      const done = old.length === 0 && oldAway.length === 0 && fresh.length === N && fresh.every((i) => isReady(app, i)) && kills.size === 0 &&
        live.every((i) => !i.killRequested || i.state === 'terminal' || i.state === 'unreachable');
      if (done) out.finishedDeployments.push(deployment.id);
    }

    for (const c of app.constraints) if (!knownValues.has(c.field)) knownValues.set(c.field, new Set());
    const tracker = new ConstraintTracker(app.constraints, knownValues);
    for (const i of counted) if (!kills.has(i.taskId)) tracker.add(i);
    if (toLaunch > 0) {
      plans.push({
        stored, toLaunch,
        demand: { scalars: Resources.of({ cpus: app.cpus, mem: app.mem, disk: app.disk, gpus: app.gpus }), ports: requiredPorts(app) },
        checks: [roleCheck(input.role), constraintCheck(tracker), ...RESOURCE_CHECKS],
      });
    }
  }
  for (const [field, set] of knownValues) {
    for (const a of input.agents) {
      const v = fieldValue(a, field);
      if (v !== undefined) set.add(v);
    }
  }

  const offers = [...input.offers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const offer of offers) {
    const candidate: Candidate = { id: offer.id, agentId: offer.agentId, hostname: offer.hostname, attributes: offer.attributes, role: offer.role, offerIds: [offer.id], left: offer.resources };
    let used = false;
    for (const plan of plans) {
      if (plan.toLaunch === 0) continue;
      const facts = out.queue.get(plan.stored.app.id)!;
      facts.processed++;
      // As many instances as this offer takes, until the first that does not fit.
      const r = place({ demands: repeatDemand(plan.demand, plan.toLaunch), candidates: [candidate], checks: plan.checks, stopAtFirstMiss: true });
      for (const p of r.placed) {
        plan.toLaunch--;
        facts.launched++;
        out.launches.push({
          appId: plan.stored.app.id, configVersion: plan.stored.configVersion, offerId: offer.id, agentId: offer.agentId,
          hostname: offer.hostname, attributes: offer.attributes, resources: p.taken, ports: p.ports,
        });
      }
      if (r.placed.length > 0) used = true;
      else {
        const why = r.unplaced[0]?.reasons.get(candidate.id);
        const reason = why === undefined ? undefined : REJECT_OF[why];
        if (reason) facts.declined[reason] = (facts.declined[reason] ?? 0) + 1;
      }
    }
    if (!used) out.declines.push(offer.id);
  }
  return out;
}
