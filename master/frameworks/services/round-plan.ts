// One round of the services framework, up to the write: what it observes of each instance,
// the core's decisions, and the instance records those decisions change (launched, marked for
// killing, forgotten, adopted). No I/O: the shell (runtime.ts, or the whole-cluster simulator)
// passes the registry it reads, the time and the task ids, writes `puts` durably, and only
// then sends the accepts and kills this plan lists.

import { isTerminal } from '../../../shared/agent-messages.ts';
import type { OfferJson } from '../../../shared/mesos-v1.ts';
import { offerRole } from '../../../shared/sdk/offer-fit.ts';
import { Resources } from '../../../shared/resources.ts';
import type { ClusterAgent, ClusterTask } from '../../../shared/framework-host/contract.ts';
import type { StorePut } from '../../../shared/framework-host/store.ts';
import type { StoredApp } from './app-model.ts';
import { decide, type BackoffState, type CoreOutput, type InstanceState, type InstanceView, type LaunchDecision } from './core.ts';
import { deploymentKey, instanceKey, ServicesRecords, type DeploymentRecord, type InstanceRecord } from './records.ts';
import { delayPuts } from './launch-delays.ts';
import { APP_LABEL, appIdOfTaskId, buildTaskInfo, CONFIG_VERSION_LABEL, marathonTaskId, type MarathonTaskInfo } from './task-info.ts';

/** The registry as the leader holds it (only what a round reads). */
export interface RegistryView {
  readonly tasks: ReadonlyMap<string, ClusterTask>;
  readonly agents: ReadonlyMap<string, ClusterAgent>;
}

export interface RoundInput {
  nowMs: number;
  frameworkId: string;
  registry: RegistryView;
  apps: readonly StoredApp[];
  deployments: readonly DeploymentRecord[];
  offers: readonly OfferJson[];
  /** Each app's launch delay as the store holds it (launch-delays.ts). */
  backoff: ReadonlyMap<string, BackoffState>;
  /** The working copy of the instance records: changed in place as the round decides. */
  instances: Map<string, InstanceRecord>;
  /** When each kill was last sent: read for retries, cleared for forgotten instances. */
  killSentAt: Map<string, number>;
  /** Look for tasks of this framework that no record names. */
  adopt: boolean;
  /** Records an earlier leader left whose tasks were missing at the start: dropped if still missing. */
  inheritedPending: ReadonlySet<string> | undefined;
  /** A fresh uuid for each launched task. */
  newUuid: () => string;
  pendingTimeoutMs: number;
  killRetryMs: number;
}

export interface RoundPlan {
  out: CoreOutput;
  /** Written (atomically, durably) before any call below is made. */
  puts: StorePut[];
  /** Instances to kill (their records say so once `puts` is written). */
  kills: InstanceRecord[];
  /** Tasks with no record to kill (adopted nowhere, or of apps gone). */
  killNow: { taskId: string; agentId: string }[];
  launches: { l: LaunchDecision; rec: InstanceRecord; info: MarathonTaskInfo }[];
  finished: DeploymentRecord[];
}

export function observeInstance(rec: InstanceRecord, task: ClusterTask | undefined): InstanceView {
  let state: InstanceState;
  let unreachableSinceMs: number | undefined;
  if (!task) state = 'pending';
  else if (isTerminal(task.state)) state = 'terminal';
  else if (task.state === 'TASK_RUNNING') state = 'running';
  else if (task.state === 'TASK_KILLING') state = 'killing';
  else if (task.state === 'TASK_UNREACHABLE' || task.state === 'TASK_UNKNOWN') {
    state = 'unreachable';
    unreachableSinceMs = task.updatedAtMs;
  } else state = 'staging';
  const healthy = task?.healthy;
  return {
    taskId: rec.taskId, appId: rec.appId, configVersion: rec.configVersion, agentId: rec.agentId, hostname: rec.hostname,
    attributes: rec.attributes, launchedAtMs: rec.launchedAtMs, state, killRequested: rec.killRequested === true,
    ...(unreachableSinceMs !== undefined ? { unreachableSinceMs } : {}),
    ...(healthy !== undefined ? { healthy } : {}),
  };
}

/** Tasks of this framework the records do not know (launched by a leader that died before its write was read back here). */
function adoptOrphans(input: RoundInput, puts: StorePut[], killNow: { taskId: string; agentId: string }[]): void {
  const apps = new Set(input.apps.map((s) => s.app.id));
  for (const task of input.registry.tasks.values()) {
    if (task.frameworkId !== input.frameworkId || isTerminal(task.state) || input.instances.has(task.id)) continue;
    const appId = task.labels.find((l) => l.name === APP_LABEL)?.value ?? appIdOfTaskId(task.id);
    const configVersion = task.labels.find((l) => l.name === CONFIG_VERSION_LABEL)?.value ?? '';
    const agent = input.registry.agents.get(task.agentId);
    if (!appId || !apps.has(appId) || !agent) {
      killNow.push({ taskId: task.id, agentId: task.agentId });
      continue;
    }
    const rec: InstanceRecord = {
      taskId: task.id, appId, version: configVersion, configVersion, agentId: task.agentId, hostname: agent.hostname,
      attributes: { ...agent.attributes }, ports: Resources.parse(task.resources).portList(), launchedAtMs: task.launchedAtMs,
    };
    input.instances.set(rec.taskId, rec);
    puts.push(ServicesRecords.put(instanceKey(rec.taskId), rec));
  }
}

/**
 * The stored delays as this leadership's clock reads them. A delay is written with the time of
 * its last failure on the clock of the leadership that counted it; each leadership's steady
 * clock is anchored on its host's wall clock when it starts, so a leader whose wall clock was
 * stepped back reads that time as hours ahead and would hold the app for hours. A failure
 * ahead of now counts as now (the delay runs its full length from here, and is written so).
 */
function onThisClock(backoff: ReadonlyMap<string, BackoffState>, nowMs: number): ReadonlyMap<string, BackoffState> {
  if (![...backoff.values()].some((b) => b.lastFailureAtMs > nowMs)) return backoff;
  return new Map([...backoff].map(([appId, b]) => [appId, b.lastFailureAtMs > nowMs ? { ...b, lastFailureAtMs: nowMs } : b]));
}

export function planRound(input: RoundInput): RoundPlan {
  const { nowMs, registry, instances } = input;
  const puts: StorePut[] = [];
  const killNow: { taskId: string; agentId: string }[] = [];
  if (input.adopt) adoptOrphans(input, puts, killNow);
  if (input.inheritedPending) {
    for (const id of input.inheritedPending) {
      if (registry.tasks.has(id) || !instances.has(id)) continue;
      instances.delete(id);
      puts.push({ key: instanceKey(id), value: null });
    }
  }

  const out = decide({
    nowMs,
    role: '*',
    apps: input.apps,
    deployments: input.deployments.map((d) => ({ id: d.id, appId: d.appId })),
    instances: [...instances.values()].map((r) => observeInstance(r, registry.tasks.get(r.taskId))),
    offers: input.offers.map((o) => ({
      id: o.id.value, agentId: o.agent_id.value, hostname: o.hostname,
      attributes: Object.fromEntries(o.attributes.map((a) => [a.name, a.text.value])),
      resources: Resources.fromMesos(o.resources, 'offer.resources'), role: offerRole(o.resources),
    })),
    backoff: onThisClock(input.backoff, nowMs),
    agents: [...registry.agents.values()].filter((a) => a.reachable).map((a) => ({ hostname: a.hostname, attributes: a.attributes })),
    pendingTimeoutMs: input.pendingTimeoutMs,
  });
  const storedById = new Map(input.apps.map((s) => [s.app.id, s]));
  // A delay of an app gone, of an older config, or overdue (no failure for maxLaunchDelaySeconds)
  // delays nothing any more: its record goes, as Marathon forgets it.
  for (const [appId, b] of out.backoff) {
    const s = storedById.get(appId);
    if (!s || s.configVersion !== b.configVersion || nowMs - b.lastFailureAtMs > s.app.maxLaunchDelaySeconds * 1000) out.backoff.delete(appId);
  }
  puts.push(...delayPuts(input.backoff, out.backoff));

  for (const id of out.forget) {
    instances.delete(id);
    input.killSentAt.delete(id);
    puts.push({ key: instanceKey(id), value: null });
  }
  const kills: InstanceRecord[] = [];
  for (const k of out.kills) {
    const rec = instances.get(k.taskId);
    if (!rec) {
      const task = registry.tasks.get(k.taskId);
      if (task) killNow.push({ taskId: task.id, agentId: task.agentId });
      continue;
    }
    if (rec.killRequested) continue;
    const next = { ...rec, killRequested: true };
    instances.set(rec.taskId, next);
    puts.push(ServicesRecords.put(instanceKey(rec.taskId), next));
    kills.push(next);
  }
  // Kills asked for earlier whose task still runs: sent again (the earlier one may have died with a leader).
  for (const rec of instances.values()) {
    if (!rec.killRequested || kills.includes(rec)) continue;
    const task = registry.tasks.get(rec.taskId);
    if (!task || isTerminal(task.state)) continue;
    if (nowMs - (input.killSentAt.get(rec.taskId) ?? 0) >= input.killRetryMs) kills.push(rec);
  }
  const launches = out.launches.map((l) => {
    const stored = storedById.get(l.appId)!;
    const taskId = marathonTaskId(l.appId, input.newUuid());
    const rec: InstanceRecord = {
      taskId, appId: l.appId, version: stored.version, configVersion: l.configVersion, agentId: l.agentId, hostname: l.hostname,
      attributes: { ...l.attributes }, ports: l.ports, launchedAtMs: nowMs,
    };
    instances.set(taskId, rec);
    puts.push(ServicesRecords.put(instanceKey(taskId), rec));
    return { l, rec, info: buildTaskInfo(stored, l, taskId) };
  });
  const finished = out.finishedDeployments.map((id) => input.deployments.find((d) => d.id === id)!).filter((d) => d !== undefined);
  for (const d of finished) puts.push({ key: deploymentKey(d.id), value: null });
  return { out, puts, kills, killNow, launches, finished };
}
