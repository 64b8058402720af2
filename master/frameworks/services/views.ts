// Marathon's JSON answers built from the store and the registry: apps with their task
// counts and tasks, tasks, deployments and the launch queue. Pure functions of their input.

import type { ClusterTask } from '../../../shared/framework-host/contract.ts';
import { storedAppJson } from './app-json.ts';
import { cairnOnlyFields, marathonApp, marathonStoredApp, SERVICES_ROLE } from './marathon-shape.ts';
import type { StoredApp } from './app-model.ts';
import { REJECT_REASONS, type AppQueueFacts, type RejectReason } from './core.ts';
import type { DeploymentRecord, InstanceRecord, TaskFailureRecord } from './records.ts';

export interface TaskFacts {
  record: InstanceRecord;
  task: ClusterTask | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Marathon's `Task` (types/task.raml); `servicePorts` are the app's declared ports. */
export function taskJson(f: TaskFacts, withHealth: boolean, servicePorts: number[] = []): Record<string, unknown> {
  const { record: r, task } = f;
  const state = task?.state ?? 'TASK_STAGING';
  const running = task?.history?.find((h) => h.state === 'TASK_RUNNING');
  const healthy = (task as { healthy?: boolean } | undefined)?.healthy;
  return {
    id: r.taskId,
    appId: r.appId,
    host: r.hostname,
    slaveId: r.agentId,
    ports: r.ports,
    servicePorts,
    state,
    version: r.version,
    stagedAt: iso(r.launchedAtMs),
    ...(running ? { startedAt: iso(running.atMs) } : {}),
    ipAddresses: [],
    ...(withHealth && healthy !== undefined ? { healthCheckResults: [{ alive: healthy, consecutiveFailures: healthy ? 0 : 1, instanceId: r.taskId }] } : {}),
    role: SERVICES_ROLE,
  };
}

/** The app's service ports as Marathon lists them on its tasks (0: none assigned). */
export function servicePortsOf(s: StoredApp): number[] {
  const d = s.app.container?.docker;
  return d && d.network === 'BRIDGE' ? d.portMappings.map((m) => m.servicePort) : s.app.portDefinitions.map((p) => p.port);
}

/** What an app's answer shows besides its definition. */
export interface AppExtras {
  /** `?cairn=true`: Cairn's fields beside Marathon's. */
  cairn: boolean;
  waiting: number;
  lastTaskFailure?: TaskFailureRecord;
}

export function appJson(s: StoredApp, tasks: TaskFacts[], deployments: DeploymentRecord[], embedTasks: boolean, extras: AppExtras): Record<string, unknown> {
  const withHealth = s.app.healthChecks.length > 0;
  let staged = 0;
  let running = 0;
  let healthy = 0;
  let unhealthy = 0;
  for (const t of tasks) {
    const state = t.task?.state ?? 'TASK_STAGING';
    if (state === 'TASK_RUNNING') {
      running++;
      const h = (t.task as { healthy?: boolean } | undefined)?.healthy;
      if (h === true) healthy++;
      if (h === false) unhealthy++;
    } else if (state === 'TASK_STAGING' || state === 'TASK_STARTING') staged++;
  }
  const json = storedAppJson(s);
  const servicePorts = servicePortsOf(s);
  return {
    ...marathonApp(json),
    tasksStaged: staged,
    tasksRunning: running,
    tasksHealthy: healthy,
    tasksUnhealthy: unhealthy,
    deployments: deployments.map((d) => ({ id: d.id })),
    ...(embedTasks ? { tasks: tasks.map((t) => taskJson(t, withHealth, servicePorts)) } : {}),
    ...(extras.lastTaskFailure ? { lastTaskFailure: extras.lastTaskFailure } : {}),
    ...(extras.cairn ? { ...cairnOnlyFields(json), tasksWaiting: extras.waiting } : {}),
  };
}

/** Marathon's `DeploymentPlan` (types/deploymentPlan.raml): what deployment events carry. */
export function deploymentPlanJson(d: DeploymentRecord): { id: string; steps: { actions: { action: string; app: string }[] }[]; version: string } {
  return { id: d.id, steps: [{ actions: [{ action: d.action, app: d.appId }] }], version: d.version };
}

/** Marathon's `DeploymentStepInfo` (types/deploymentEventsInfo.raml): what /v2/deployments lists. */
export function deploymentJson(d: DeploymentRecord): Record<string, unknown> {
  const action = { action: d.action, app: d.appId };
  return {
    id: d.id,
    version: d.version,
    affectedApps: [d.appId],
    affectedPods: [],
    steps: [{ actions: [action] }],
    currentActions: [{ ...action, readinessCheckResults: [] }],
    currentStep: 1,
    totalSteps: 1,
  };
}

export interface QueueCounters {
  processed: number;
  unused: number;
  lastUnusedAtMs?: number;
  lastUsedAtMs?: number;
  declined: Partial<Record<RejectReason, number>>;
}

/** Marathon's funnel: each reason's `processed` is the offers that got as far as its check. */
function rejectSummary(c: QueueCounters): { reason: RejectReason; declined: number; processed: number }[] {
  let reaching = c.processed;
  return REJECT_REASONS.map((reason) => {
    const declined = c.declined[reason] ?? 0;
    const row = { reason, declined, processed: reaching };
    reaching -= declined;
    return row;
  });
}

/** Marathon's `QueueApp` (types/queue.raml); `cairn`: with Cairn's `waitingOn`. */
export function queueItemJson(s: StoredApp, facts: AppQueueFacts, counters: QueueCounters, nowMs: number, cairn = false): Record<string, unknown> {
  const delayed = facts.delayUntilMs !== undefined && facts.delayUntilMs > nowMs;
  const summary = rejectSummary(counters);
  return {
    count: facts.waiting,
    delay: { timeLeftSeconds: delayed ? Math.ceil((facts.delayUntilMs! - nowMs) / 1000) : 0, overdue: !delayed },
    since: iso(counters.lastUnusedAtMs ?? nowMs),
    app: marathonStoredApp(s),
    role: SERVICES_ROLE,
    processedOffersSummary: {
      processedOffersCount: counters.processed,
      unusedOffersCount: counters.unused,
      ...(counters.lastUnusedAtMs === undefined ? {} : { lastUnusedOfferAt: iso(counters.lastUnusedAtMs) }),
      ...(counters.lastUsedAtMs === undefined ? {} : { lastUsedOfferAt: iso(counters.lastUsedAtMs) }),
      rejectSummaryLastOffers: summary,
      rejectSummaryLaunchAttempt: summary,
    },
    // Cairn's plain answer to "why is it waiting": declines by reason, the largest first.
    ...(cairn ? { waitingOn: waitingOn(counters) } : {}),
  };
}

function waitingOn(counters: QueueCounters): { reason: string; offers: number }[] {
  return Object.entries(counters.declined).sort((a, b) => b[1]! - a[1]!).map(([reason, n]) => ({ reason, offers: n! }));
}
