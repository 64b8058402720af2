// The leader's side of preemption: from a framework's REQUEST (a gang it cannot place) and the
// registry's state to a decision — nothing to do, room that is already free, or the tasks to
// preempt and why. The victims themselves are chosen by the pure planner (sharing/victims.ts);
// this builds its views of the cluster, picks the cause (a higher class, or a role taking back
// its guarantee) and re-checks the plan against the latest state, launches not yet committed
// and other preemptions in flight included, before the leader commits it (Nomad's plan check).

import { isTerminal } from '../../shared/agent-messages.ts';
import { Resources } from '../../shared/resources.ts';
import type { FrameworkRecord, TaskRecord } from '../registry/commands.ts';
import type { RegistryStateMachine } from '../registry/state-machine.ts';
import { PREEMPTIBLE_LABEL, PRIORITY_CLASS_LABEL, type PriorityClasses } from '../sharing/priority-classes.ts';
import { planPreemption, recheckPlan, type AgentView, type Demand, type PlanOptions, type RunningTaskView } from '../sharing/victims.ts';

/** What preemption needs of the roles' quotas. */
export interface QuotaView {
  guaranteeKeys(role: string): string[];
  guaranteeBudgets(allocated: ReadonlyMap<string, Resources>): Map<string, Resources>;
  unmetGuarantee(role: string, allocated: ReadonlyMap<string, Resources>): Resources;
  withinLimits(role: string, extra: Resources, allocated: ReadonlyMap<string, Resources>): boolean;
  mayReclaim(role: string, need: Resources, allocated: ReadonlyMap<string, Resources>): boolean;
}

export interface PreemptionInputs {
  state: RegistryStateMachine;
  classes: PriorityClasses;
  quotas: QuotaView | undefined;
  /** Whether the leader may place work on the agent (connected, reachable, not draining). */
  agentUsable: (agentId: string) => boolean;
  /** Launches proposed and not yet in the registry: they hold their resources already. */
  launching: Iterable<{ agentId: string; frameworkId: string; resources: Resources }>;
  /** Tasks already being preempted for someone: never chosen twice. */
  claimed: ReadonlySet<string>;
}

export type PreemptionDecision =
  | { kind: 'none'; why: string }
  | { kind: 'fits'; agentIds: string[] }
  | { kind: 'preempt'; cause: 'priority' | 'guarantee'; victims: TaskRecord[]; agentIds: string[] };

/** Guarantee reclaims outrank every class: a guarantee is a promise, a class only an order. */
const RECLAIM_RANK = Number.MAX_SAFE_INTEGER;

export function classOf(fw: FrameworkRecord | undefined, classes: PriorityClasses): string {
  const c = fw?.priorityClass;
  return c !== undefined && classes.has(c) ? c : classes.defaultClass;
}

/** The decision for a framework's gang of `members` (scalars each). */
export function decidePreemption(inp: PreemptionInputs, frameworkId: string, members: readonly Resources[]): PreemptionDecision {
  const { state, classes } = inp;
  const fw = state.frameworks.get(frameworkId);
  if (!fw || fw.removedAtMs !== undefined) return { kind: 'none', why: 'the framework is gone' };
  const views = clusterViews(inp, false);
  const allocated = roleAllocations(views.tasks);
  const need = members.reduce((acc, m) => acc.add(m), Resources.EMPTY);
  if (inp.quotas && !inp.quotas.withinLimits(fw.role, need, allocated)) {
    return { kind: 'none', why: `role '${fw.role}' would go past its quota's limit` };
  }
  const rank = classes.rank(classOf(fw, classes));
  const budgets = inp.quotas ? { keysOf: (role: string) => inp.quotas!.guaranteeKeys(role), left: inp.quotas.guaranteeBudgets(allocated) } : undefined;
  const notClaimed = (t: RunningTaskView) => !inp.claimed.has(t.taskId);
  const tries: { cause: 'priority' | 'guarantee'; demand: Demand; opts: PlanOptions }[] = [];
  if (rank > 0) {
    tries.push({ cause: 'priority', demand: { frameworkId, role: fw.role, classRank: rank, members: [...members] }, opts: { eligible: notClaimed, ...(budgets ? { budgets } : {}) } });
  }
  // A role takes back no more than it lacks of its guarantee, and only from roles over theirs.
  if (inp.quotas?.mayReclaim(fw.role, need, allocated)) {
    // Taken from other teams only: a role of the same tree (`team/bob` for `team/alice`)
    // counts toward the same guarantee, and taking from it would give nothing back.
    const tree = (role: string) => role.split('/')[0];
    tries.push({
      cause: 'guarantee',
      demand: { frameworkId, role: fw.role, classRank: RECLAIM_RANK, members: [...members] },
      opts: { eligible: (t) => notClaimed(t) && tree(t.role) !== tree(fw.role), budgets: budgets ?? { keysOf: () => [], left: new Map() } },
    });
  }
  if (tries.length === 0) return { kind: 'none', why: `class '${classOf(fw, classes)}' is the lowest and role '${fw.role}' is not below a guarantee` };
  let why = '';
  for (const t of tries) {
    const plan = planPreemption(t.demand, views.agents, views.tasks, t.opts);
    if (plan.kind === 'impossible') {
      why = plan.why;
      continue;
    }
    const agentIds = [...new Set(plan.placements.map((p) => p.agentId))].sort();
    if (plan.kind === 'fits') return { kind: 'fits', agentIds };
    // The plan was made on the committed state; it must still hold with what is in flight.
    const latest = clusterViews(inp, true);
    const stale = recheckPlan(plan, t.demand, latest.agents, latest.tasks, t.opts);
    if (stale !== undefined) return { kind: 'none', why: `the plan no longer holds: ${stale}` };
    const victims = plan.victims.map((id) => state.tasks.get(id)!);
    return { kind: 'preempt', cause: t.cause, victims, agentIds };
  }
  return { kind: 'none', why };
}

/** The registry's agents and running tasks as the planner sees them; with `inFlight`, launches not yet committed too. */
function clusterViews(inp: PreemptionInputs, inFlight: boolean): { agents: AgentView[]; tasks: RunningTaskView[] } {
  const { state, classes } = inp;
  const agents: AgentView[] = [];
  const tasks: RunningTaskView[] = [];
  const used = new Map<string, Resources>();
  for (const a of state.agents.values()) {
    let total: Resources;
    try {
      total = scalars(Resources.parse(a.resources));
    } catch {
      continue;
    }
    let held = Resources.EMPTY;
    for (const t of state.activeTasksOn(a.id)) {
      const view = taskView(t, state, classes);
      if (!view) continue;
      held = held.add(view.resources);
      tasks.push(view);
    }
    used.set(a.id, held);
    agents.push({ agentId: a.id, total, used: held, active: a.reachable && !a.drain && inp.agentUsable(a.id) });
  }
  if (inFlight) {
    for (const l of inp.launching) {
      const u = used.get(l.agentId);
      if (u !== undefined) used.set(l.agentId, u.add(scalars(l.resources)));
    }
    for (const a of agents) a.used = used.get(a.agentId)!;
  }
  return { agents, tasks };
}

function taskView(t: TaskRecord, state: RegistryStateMachine, classes: PriorityClasses): RunningTaskView | undefined {
  if (isTerminal(t.state) || t.state === 'TASK_UNREACHABLE') return undefined;
  let resources: Resources;
  try {
    resources = scalars(Resources.parse(t.resources));
  } catch {
    return undefined;
  }
  const fw = state.frameworks.get(t.frameworkId);
  // A task may rank above its framework: a service's app names its class on its tasks.
  const own = t.labels.find((l) => l.name === PRIORITY_CLASS_LABEL)?.value;
  const rank = Math.max(classes.rank(classOf(fw, classes)), own !== undefined && classes.has(own) ? classes.rank(own) : 0);
  return {
    taskId: t.id,
    agentId: t.agentId,
    frameworkId: t.frameworkId,
    role: fw?.role ?? '*',
    classRank: rank,
    preemptible: !t.labels.some((l) => l.name === PREEMPTIBLE_LABEL && l.value === 'false'),
    startedAtMs: t.launchedAtMs,
    resources,
  };
}

/** What each role's running tasks hold. */
export function roleAllocations(tasks: readonly RunningTaskView[]): Map<string, Resources> {
  const out = new Map<string, Resources>();
  for (const t of tasks) out.set(t.role, (out.get(t.role) ?? Resources.EMPTY).add(t.resources));
  return out;
}

function scalars(r: Resources): Resources {
  return Resources.of({ cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus });
}
