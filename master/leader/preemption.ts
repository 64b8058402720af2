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
import type { CompiledQuotas } from '../sharing/quota-policy.ts';
import { PREEMPTIBLE_LABEL, PRIORITY_CLASS_LABEL, type PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { planPreemption, recheckPlan, type AgentView, type Demand, type PlanOptions, type RunningTaskView } from '../sharing/victims.ts';

/** What preemption needs of the roles' quotas. */
export type QuotaView = Pick<CompiledQuotas, 'guaranteeKeys' | 'guaranteeBudgets' | 'withinLimits' | 'mayReclaim'>;

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
  return classes.orDefault(c);
}

/** The decision for a framework's gang of `members` (scalars each). */
export function decidePreemption(inp: PreemptionInputs, frameworkId: string, members: readonly Resources[]): PreemptionDecision {
  const { state, classes } = inp;
  const fw = state.frameworks.get(frameworkId);
  if (!fw || fw.removedAtMs !== undefined) return { kind: 'none', why: 'the framework is gone' };
  const views = clusterViews(inp);
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
    const latest = withLaunching(views, inp.launching);
    const stale = recheckPlan(plan, t.demand, latest.agents, latest.tasks, t.opts);
    if (stale !== undefined) return { kind: 'none', why: `the plan no longer holds: ${stale}` };
    const victims = plan.victims.map((id) => state.tasks.get(id)!);
    return { kind: 'preempt', cause: t.cause, victims, agentIds };
  }
  return { kind: 'none', why };
}

/** The registry's agents and running tasks as the planner sees them. */
function clusterViews(inp: PreemptionInputs): { agents: AgentView[]; tasks: RunningTaskView[] } {
  const { state, classes } = inp;
  const agents: AgentView[] = [];
  const tasks: RunningTaskView[] = [];
  // A task's role and class are its framework's: looked up once per framework, not per task.
  const frameworks = new Map<string, { role: string; rank: number }>();
  const frameworkOf = (id: string) => {
    let f = frameworks.get(id);
    if (f === undefined) {
      const fw = state.frameworks.get(id);
      frameworks.set(id, (f = { role: fw?.role ?? '*', rank: classes.rank(classOf(fw, classes)) }));
    }
    return f;
  };
  for (const a of state.agents.values()) {
    let total: Resources;
    try {
      total = scalarsOf(a.resources);
    } catch {
      continue;
    }
    let held = Resources.EMPTY;
    for (const t of state.activeTasksOn(a.id)) {
      const view = taskView(t, frameworkOf(t.frameworkId), classes);
      if (!view) continue;
      held = held.add(view.resources);
      tasks.push(view);
    }
    agents.push({ agentId: a.id, total, used: held, active: a.reachable && !a.drain && inp.agentUsable(a.id) });
  }
  return { agents, tasks };
}

/** The same views with the launches proposed and not yet committed holding their resources too. */
function withLaunching(views: { agents: AgentView[]; tasks: RunningTaskView[] }, launching: PreemptionInputs['launching']): { agents: AgentView[]; tasks: RunningTaskView[] } {
  const extra = new Map<string, Resources>();
  for (const l of launching) extra.set(l.agentId, (extra.get(l.agentId) ?? Resources.EMPTY).add(scalars(l.resources)));
  if (extra.size === 0) return views;
  const agents = views.agents.map((a) => {
    const more = extra.get(a.agentId);
    return more === undefined ? a : { ...a, used: a.used.add(more) };
  });
  return { agents, tasks: views.tasks };
}

function taskView(t: TaskRecord, fw: { role: string; rank: number }, classes: PriorityClasses): RunningTaskView | undefined {
  if (isTerminal(t.state) || t.state === 'TASK_UNREACHABLE') return undefined;
  let resources: Resources;
  try {
    resources = scalarsOf(t.resources);
  } catch {
    return undefined;
  }
  // A task may rank above its framework: a service's app names its class on its tasks.
  let rank = fw.rank;
  let preemptible = true;
  for (const l of t.labels) {
    if (l.name === PRIORITY_CLASS_LABEL && classes.has(l.value)) rank = Math.max(rank, classes.rank(l.value));
    else if (l.name === PREEMPTIBLE_LABEL && l.value === 'false') preemptible = false;
  }
  return {
    taskId: t.id,
    agentId: t.agentId,
    frameworkId: t.frameworkId,
    role: fw.role,
    classRank: rank,
    preemptible,
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

/**
 * The scalars of a resources text, parsed once: a decision reads every running task's
 * resources twice (plan and re-check), 10,000 tasks of a few shapes, and parsing each anew
 * took most of its time. Bounded: a cluster of many shapes only parses more often.
 */
const parsedScalars = new Map<string, Resources>();
const MAX_PARSED = 4_096;

function scalarsOf(text: string): Resources {
  let r = parsedScalars.get(text);
  if (r === undefined) {
    r = scalars(Resources.parse(text));
    if (parsedScalars.size >= MAX_PARSED) parsedScalars.clear();
    parsedScalars.set(text, r);
  }
  return r;
}
