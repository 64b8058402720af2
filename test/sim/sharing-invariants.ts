// What must hold while frameworks of several priority classes share the cluster under
// quotas. Pure: each check reads the registry's state (or the preemptions recorded so far)
// and returns the violations it found, in words naming the role, task or gang at fault.
// The class order checked against is the one the workload means, not the leader's setting,
// so a leader configured with the classes in the wrong order is caught too.

import { isTerminal } from '../../shared/agent-messages.ts';
import { Resources } from '../../shared/resources.ts';
import type { PreemptionRecord, TaskRecord } from '../../master/registry/commands.ts';
import type { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import { compileQuotas, type CompiledQuotas } from '../../master/sharing/quota-policy.ts';
import { PREEMPTIBLE_LABEL, type PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { planPreemption, type AgentView, type Plan, type RunningTaskView } from '../../master/sharing/victims.ts';
import { parseOnce } from './cluster-invariants.ts';

function scalars(r: Resources): Resources {
  return Resources.of({ cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus });
}

/** A task that holds its resources: not ended, and not on an agent the master has lost sight of. */
function holds(t: TaskRecord): boolean {
  return !isTerminal(t.state) && t.state !== 'TASK_UNREACHABLE';
}

function classOf(state: RegistryStateMachine, frameworkId: string, classes: PriorityClasses): string {
  const c = state.frameworks.get(frameworkId)?.priorityClass;
  return c !== undefined && classes.has(c) ? c : classes.defaultClass;
}

let compiled: { key: string; quotas: CompiledQuotas } | undefined;

/** The registry's quotas as a policy, compiled again only when they change (checks run ten times a simulated second). */
function quotasOf(state: RegistryStateMachine): CompiledQuotas | undefined {
  if (state.quotas.size === 0) return undefined;
  const records = [...state.quotas.values()];
  const key = JSON.stringify(records);
  if (compiled?.key !== key) compiled = { key, quotas: compileQuotas(records) };
  return compiled.quotas;
}

/** What each role's running tasks hold, from the registry. */
export function runningByRole(state: RegistryStateMachine): Map<string, Resources> {
  const out = new Map<string, Resources>();
  for (const t of state.tasks.values()) {
    if (!holds(t)) continue;
    const role = state.frameworks.get(t.frameworkId)?.role ?? '*';
    out.set(role, (out.get(role) ?? Resources.EMPTY).add(scalars(parseOnce(t.resources))));
  }
  return out;
}

/** 1. No role's subtree holds more than its limit, counting every running task in the registry. */
export function quotaViolations(state: RegistryStateMachine): string[] {
  const quotas = quotasOf(state);
  if (!quotas) return [];
  return quotas.table.violations(runningByRole(state)).map((v) => `quota: role '${v.role}' holds ${v.allocated} ${v.scalar} with its subtree's running tasks, over its limit of ${v.limit}`);
}

/**
 * 2. No preemption cycle, over every preemption recorded in the run: a priority preemption
 * only takes tasks of a strictly lower class and of another framework; no two frameworks
 * preempt each other for priority; no task is a victim twice; no task labelled
 * non-preemptible is ever a victim (guarantee reclaims included).
 */
export function preemptionViolations(records: readonly PreemptionRecord[], classes: PriorityClasses, nonPreemptible: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const victimOf = new Map<string, string>();
  const takes = new Map<string, string>();
  for (const r of records) {
    const p = r.preemptor;
    for (const v of r.victims) {
      const before = victimOf.get(v.taskId);
      if (before !== undefined) out.push(`preemption ${r.id}: task ${v.taskId} was already a victim of preemption ${before}`);
      victimOf.set(v.taskId, r.id);
      if (nonPreemptible.has(v.taskId)) out.push(`preemption ${r.id}: task ${v.taskId} is labelled ${PREEMPTIBLE_LABEL}=false but was taken for ${p.name}`);
      if (r.cause !== 'priority') continue;
      if (v.frameworkId === p.frameworkId) out.push(`preemption ${r.id}: ${p.name} preempted its own task ${v.taskId}`);
      if (!classes.has(v.priorityClass) || !classes.has(p.priorityClass) || classes.rank(v.priorityClass) >= classes.rank(p.priorityClass)) {
        out.push(`preemption ${r.id}: task ${v.taskId} of class ${v.priorityClass} was taken for ${p.name} of class ${p.priorityClass}, which is not higher`);
      }
      const pair = `${p.frameworkId} -> ${v.frameworkId}`;
      const back = `${v.frameworkId} -> ${p.frameworkId}`;
      if (takes.has(back) && !takes.has(pair)) out.push(`preemption cycle: ${p.name} (${p.frameworkId}) preempted task ${v.taskId} of ${v.frameworkId}, which had preempted ${p.name} in preemption ${takes.get(back)}`);
      takes.set(pair, r.id);
    }
  }
  return out;
}

/** A gang that waits: whose it is and what it needs. */
export interface WaitingGang {
  name: string;
  frameworkId: string;
  members: Resources[];
}

export type StarvationVerdict =
  /** Preempting lower-class tasks would make room for it now: it should not still be waiting. */
  | { kind: 'starved'; victims: string[] }
  /** Nothing to blame: its class is the lowest, its role is at a limit, it fits in free room, or no victims would do. */
  | { kind: 'fine'; why: string };

/**
 * 3. Whether a gang that has waited too long could have room made for it by preempting
 * tasks of lower classes, on the registry's state as it is: with the guarantee budgets and
 * the limits of the roles' quotas, tasks already claimed by another framework's preemption
 * left alone, and those claimed for this framework's counted as free (they are on their way out).
 */
export function starvation(state: RegistryStateMachine, classes: PriorityClasses, gang: WaitingGang, claims: ReadonlyMap<string, string>): StarvationVerdict {
  const fw = state.frameworks.get(gang.frameworkId);
  if (!fw) return { kind: 'fine', why: 'its framework is not registered' };
  const rank = classes.rank(classOf(state, fw.id, classes));
  if (rank === 0) return { kind: 'fine', why: 'its class is the lowest' };
  const agents: AgentView[] = [];
  const tasks: RunningTaskView[] = [];
  for (const a of state.agents.values()) {
    let used = Resources.EMPTY;
    for (const t of state.activeTasksOn(a.id)) {
      if (!holds(t)) continue;
      const resources = scalars(parseOnce(t.resources));
      used = used.add(resources);
      const owner = state.frameworks.get(t.frameworkId);
      tasks.push({
        taskId: t.id,
        agentId: t.agentId,
        frameworkId: t.frameworkId,
        role: owner?.role ?? '*',
        classRank: classes.rank(classOf(state, t.frameworkId, classes)),
        preemptible: !t.labels.some((l) => l.name === PREEMPTIBLE_LABEL && l.value === 'false'),
        startedAtMs: t.launchedAtMs,
        resources,
      });
    }
    agents.push({ agentId: a.id, total: scalars(parseOnce(a.resources)), used, active: a.reachable && a.drain === undefined });
  }
  const allocated = runningByRole(state);
  const need = gang.members.reduce((acc, m) => acc.add(m), Resources.EMPTY);
  const quotas = quotasOf(state);
  if (quotas && !quotas.withinLimits(fw.role, need, allocated)) return { kind: 'fine', why: `role '${fw.role}' is at its limit` };
  const mine = new Set<string>();
  for (const [taskId, by] of claims) if (by === fw.id) mine.add(taskId);
  const plan: Plan = planPreemption({ frameworkId: fw.id, role: fw.role, classRank: rank, members: gang.members }, agents, tasks, {
    eligible: (t) => !claims.has(t.taskId),
    alreadyPreempting: mine,
    ...(quotas ? { budgets: { keysOf: (role: string) => quotas.guaranteeKeys(role), left: quotas.guaranteeBudgets(allocated) } } : {}),
  });
  if (plan.kind === 'preempt') return { kind: 'starved', victims: plan.victims };
  return { kind: 'fine', why: plan.kind === 'fits' ? 'it fits in free room' : plan.why };
}
