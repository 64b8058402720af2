// Whom to preempt so that a pending gang of a higher priority class can run. A gang is a set
// of task shapes that must all be placed together or not at all. Pure: the leader passes in
// what it knows (agents, running tasks, how much each role may still lose before it drops
// below its guarantee) and gets back where each member would go and which tasks to kill for
// it. No clock, no randomness: the same state, in any order, gives the same plan.
//
// Only a task that is preemptible, of a strictly lower class, of another framework, on an
// active agent, accepted by the caller's veto and affordable within its role's guarantee
// budgets may be taken. As few as possible, youngest first (the least work lost), and never
// one more than needed. The fewest victims for a gang is a bin-packing problem, so this is a
// greedy: free capacity alone is tried first, packed tightly so big holes stay whole; failing
// that, members largest first, each on the agent where it needs the fewest more victims.
// Victims a greedy step took that the placements turn out not to need are given back.
//
// Ports are not considered: the scalars decide whether a member fits. The work is done on
// plain arrays of thousandths, since a plan over ten thousand tasks must take milliseconds,
// not allocate a Resources per step.

import type { Resources, ScalarName } from '../../shared/resources.ts';

/** An agent as the planner sees it. */
export interface AgentView {
  agentId: string;
  total: Resources;
  /** Scalars held by running tasks; what is free is total − used. */
  used: Resources;
  /** Inactive (draining, unreachable) agents are never placed on, nor taken from. */
  active: boolean;
}

/** A running task, a possible victim. */
export interface RunningTaskView {
  taskId: string;
  agentId: string;
  frameworkId: string;
  role: string;
  /** Its priority class; higher is more important. */
  classRank: number;
  preemptible: boolean;
  /** When it started, so that the youngest (least work lost) are taken first. */
  startedAtMs: number;
  resources: Resources;
}

/** A pending gang: every member placed, or none. */
export interface Demand {
  frameworkId: string;
  role: string;
  classRank: number;
  /** Each member's scalar needs. */
  members: Resources[];
}

/**
 * How much may be taken from each budget key before a role drops below its guarantee. A
 * task counts against every key keysOf(task.role) returns; a key absent from `left` is
 * unlimited.
 */
export interface GuaranteeBudgets {
  keysOf(role: string): readonly string[];
  left: ReadonlyMap<string, Resources>;
}

export interface PlanOptions {
  /** An extra per-task veto, e.g. a reclaim that may only take from roles over their guarantee. */
  eligible?: (t: RunningTaskView) => boolean;
  budgets?: GuaranteeBudgets;
  /** Tasks already being killed for this demand: their resources count as free. */
  alreadyPreempting?: ReadonlySet<string>;
}

/** Where one member of the demand goes (its index in demand.members). */
export interface Placement {
  member: number;
  agentId: string;
}

export type Plan =
  /** It fits in free capacity; no victim needed. Placements are in member order. */
  | { kind: 'fits'; placements: Placement[] }
  /**
   * It fits once the victims (task ids, in the order chosen) are gone. victimAgentIds[i] is
   * the agent victims[i] ran on, so that a recheck can tell a task that moved.
   */
  | { kind: 'preempt'; placements: Placement[]; victims: string[]; victimAgentIds: string[] }
  /** Even with every eligible victim taken it cannot be placed. */
  | { kind: 'impossible'; why: string };

/** Scalars in thousandths, indexed like NAMES. */
type Vec = number[];

const NAMES = ['cpus', 'mem', 'disk', 'gpus'] as const satisfies readonly ScalarName[];
const CPUS = 0;
const MEM = 1;
const DISK = 2;
const GPUS = 3;
const DIMS = NAMES.length;
const ZERO: Vec = Object.freeze([0, 0, 0, 0]) as Vec;
const NO_KEYS: readonly string[] = Object.freeze([]);

function vec(r: Resources): Vec {
  return [r.getMilli('cpus'), r.getMilli('mem'), r.getMilli('disk'), r.getMilli('gpus')];
}

function covers(have: Vec, need: Vec): boolean {
  for (let d = 0; d < DIMS; d++) if (have[d] < need[d]) return false;
  return true;
}

function sameVec(a: Vec, b: Vec): boolean {
  for (let d = 0; d < DIMS; d++) if (a[d] !== b[d]) return false;
  return true;
}

/** Largest first: GPUs are the scarcest, then cpus, then memory, then disk. */
function largestFirst(a: Vec, b: Vec): number {
  return b[GPUS] - a[GPUS] || b[CPUS] - a[CPUS] || b[MEM] - a[MEM] || b[DISK] - a[DISK];
}

function byString(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Youngest first; the task id settles a tie so that the order never depends on the input's. */
function youngestFirst(a: RunningTaskView, b: RunningTaskView): number {
  return b.startedAtMs - a.startedAtMs || byString(a.taskId, b.taskId);
}

/** Why t may not be taken for the demand, or undefined when it may (budgets aside). */
function whyNotVictim(t: RunningTaskView, demand: Demand, agent: AgentView | undefined, eligible: PlanOptions['eligible']): string | undefined {
  if (!t.preemptible) return 'it is not preemptible';
  if (t.classRank >= demand.classRank) return `its class rank ${t.classRank} is not below the demand's ${demand.classRank}`;
  if (t.frameworkId === demand.frameworkId) return `it belongs to the demand's own framework ${demand.frameworkId}`;
  if (agent === undefined) return `its agent ${t.agentId} is unknown`;
  if (!agent.active) return `its agent ${t.agentId} is not active`;
  if (eligible && !eligible(t)) return 'the eligibility check refuses it';
  return undefined;
}

/** The budget keys of a role that are limited, asked once per role. */
function limitedKeys(budgets: GuaranteeBudgets | undefined): (role: string) => readonly string[] {
  const memo = new Map<string, readonly string[]>();
  return (role) => {
    if (!budgets || budgets.left.size === 0) return NO_KEYS;
    let keys = memo.get(role);
    if (keys === undefined) {
      keys = [...new Set(budgets.keysOf(role))].filter((k) => budgets.left.has(k));
      memo.set(role, keys);
    }
    return keys;
  };
}

interface Candidate {
  readonly task: RunningTaskView;
  readonly size: Vec;
  /** startedAtMs less the earliest candidate's, so that sums of many stay exact. */
  readonly youth: number;
  /** The limited budget keys it counts against. */
  readonly keys: readonly string[];
}

/** An active agent being planned on. */
interface Site {
  readonly id: string;
  /** Its position in agent id order: the last tie-break. */
  readonly rank: number;
  readonly startFree: Vec;
  /** Possible victims here, youngest first. */
  readonly candidates: readonly Candidate[];
  /**
   * prefix[(at + j) * DIMS + d]: dimension d summed over the first j candidates, and
   * youthPrefix[at + j] their youth. One array serves every site, so that a call allocates
   * two, not two per agent.
   */
  readonly prefix: Float64Array;
  readonly youthPrefix: Float64Array;
  readonly at: number;
  /** Some candidate here counts against a limited budget, so the prefix sums do not apply. */
  readonly limited: boolean;
  free: Vec;
  /** Candidates before this are taken, or were passed over for want of budget. */
  next: number;
}

/** One way to place a member on a site. */
interface Choice {
  readonly site: Site;
  /** How many more victims it needs. */
  readonly count: number;
  /** Candidate indices to take; undefined means every one in [site.next, end). */
  readonly taken: readonly number[] | undefined;
  readonly end: number;
  readonly freed: Vec;
  readonly youth: number;
  /** What stays free on the site once the member is placed. */
  readonly left: Vec;
}

/** Fewest victims, then least evicted (GPUs, then cpus), then youngest, then tightest fit, then agent id. */
function betterChoice(a: Choice, b: Choice): number {
  return (
    a.count - b.count ||
    a.freed[GPUS] - b.freed[GPUS] ||
    a.freed[CPUS] - b.freed[CPUS] ||
    b.youth - a.youth ||
    largestFirst(b.left, a.left) ||
    a.site.rank - b.site.rank
  );
}

class ChoiceHeap {
  private items: Choice[] = [];

  reset(items: Choice[]): void {
    this.items = items;
    for (let i = (items.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  drain(): Choice[] {
    const all = this.items;
    this.items = [];
    return all;
  }

  push(c: Choice): void {
    const a = this.items;
    a.push(c);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (betterChoice(a[i], a[p]) >= 0) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }

  pop(): Choice | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      this.down(0);
    }
    return top;
  }

  private down(i: number): void {
    const a = this.items;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < a.length && betterChoice(a[l], a[best]) < 0) best = l;
      if (r < a.length && betterChoice(a[r], a[best]) < 0) best = r;
      if (best === i) return;
      [a[i], a[best]] = [a[best], a[i]];
      i = best;
    }
  }
}

interface Taken {
  readonly cand: Candidate;
  readonly site: Site;
}

/** The cluster indexed once per call: active agents in id order, possible victims on each. */
function indexCluster(demand: Demand, agents: readonly AgentView[], tasks: readonly RunningTaskView[], opts: PlanOptions): Site[] {
  const keysOf = limitedKeys(opts.budgets);
  const preempting = opts.alreadyPreempting;
  const active = agents.filter((a) => a.active).sort((a, b) => byString(a.agentId, b.agentId));
  const byId = new Map<string, { view: AgentView; free: Vec; tasks: RunningTaskView[] }>();
  for (const a of active) {
    const total = vec(a.total);
    const used = vec(a.used);
    for (let d = 0; d < DIMS; d++) total[d] -= used[d];
    byId.set(a.agentId, { view: a, free: total, tasks: [] });
  }
  let earliest = Infinity;
  for (const t of tasks) {
    const a = byId.get(t.agentId);
    if (!a) continue;
    if (preempting?.has(t.taskId)) {
      const size = vec(t.resources);
      for (let d = 0; d < DIMS; d++) a.free[d] += size[d];
    } else if (whyNotVictim(t, demand, a.view, opts.eligible) === undefined) {
      a.tasks.push(t);
      if (t.startedAtMs < earliest) earliest = t.startedAtMs;
    }
  }
  let rows = 0;
  for (const a of active) rows += byId.get(a.agentId)!.tasks.length + 1;
  const prefix = new Float64Array(rows * DIMS);
  const youthPrefix = new Float64Array(rows);
  const sites: Site[] = [];
  let at = 0;
  for (let rank = 0; rank < active.length; rank++) {
    const a = byId.get(active[rank].agentId)!;
    a.tasks.sort(youngestFirst);
    const n = a.tasks.length;
    const candidates: Candidate[] = new Array(n);
    let limited = false;
    for (let i = 0; i < n; i++) {
      const task = a.tasks[i];
      const c: Candidate = { task, size: vec(task.resources), youth: task.startedAtMs - earliest, keys: keysOf(task.role) };
      candidates[i] = c;
      const row = (at + i) * DIMS;
      for (let d = 0; d < DIMS; d++) prefix[row + DIMS + d] = prefix[row + d] + c.size[d];
      youthPrefix[at + i + 1] = youthPrefix[at + i] + c.youth;
      if (c.keys.length > 0) limited = true;
    }
    sites.push({ id: a.view.agentId, rank, startFree: a.free, candidates, prefix, youthPrefix, at, limited, free: a.free.slice(), next: 0 });
    at += n + 1;
  }
  return sites;
}

function fitsBudget(cand: Candidate, budget: ReadonlyMap<string, Vec>, spent: ReadonlyMap<string, Vec>): boolean {
  for (const key of cand.keys) {
    const left = budget.get(key)!;
    const s = spent.get(key);
    for (let d = 0; d < DIMS; d++) if (left[d] - (s ? s[d] : 0) - cand.size[d] < 0) return false;
  }
  return true;
}

/** The cheapest way to place a member of size `need` on the site as it stands, if any. */
function choose(site: Site, need: Vec, budget: ReadonlyMap<string, Vec>, withVictims: boolean): Choice | undefined {
  const free = site.free;
  const next = site.next;
  if (covers(free, need)) {
    return { site, count: 0, taken: undefined, end: next, freed: ZERO, youth: 0, left: free.map((v, d) => v - need[d]) };
  }
  const n = site.candidates.length;
  if (!withVictims || next === n) return undefined;
  if (site.limited) return chooseWithinBudget(site, need, budget);

  // Victims here are a prefix of the candidates: per dimension, binary-search the shortest
  // prefix that frees enough, and take the longest of those.
  const p = site.prefix;
  const at = site.at;
  let end = next;
  for (let d = 0; d < DIMS; d++) {
    const target = need[d] - free[d] + p[(at + next) * DIMS + d];
    if (p[(at + n) * DIMS + d] < target) return undefined;
    if (p[(at + end) * DIMS + d] >= target) continue;
    let lo = end + 1;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (p[(at + mid) * DIMS + d] >= target) hi = mid;
      else lo = mid + 1;
    }
    end = lo;
  }
  const freed: Vec = [0, 0, 0, 0];
  const left: Vec = [0, 0, 0, 0];
  for (let d = 0; d < DIMS; d++) {
    freed[d] = p[(at + end) * DIMS + d] - p[(at + next) * DIMS + d];
    left[d] = free[d] + freed[d] - need[d];
  }
  const youth = site.youthPrefix[at + end] - site.youthPrefix[at + next];
  return { site, count: end - next, taken: undefined, end, freed, youth, left };
}

/** Youngest first, passing over any the budgets (as this choice would leave them) cannot afford. */
function chooseWithinBudget(site: Site, need: Vec, budget: ReadonlyMap<string, Vec>): Choice | undefined {
  const spent = new Map<string, Vec>();
  const taken: number[] = [];
  const freed = ZERO.slice();
  const have = site.free.slice();
  let youth = 0;
  for (let i = site.next; i < site.candidates.length; i++) {
    const cand = site.candidates[i];
    if (!fitsBudget(cand, budget, spent)) continue;
    for (const key of cand.keys) {
      const s = spent.get(key) ?? ZERO.slice();
      for (let d = 0; d < DIMS; d++) s[d] += cand.size[d];
      spent.set(key, s);
    }
    taken.push(i);
    youth += cand.youth;
    for (let d = 0; d < DIMS; d++) {
      freed[d] += cand.size[d];
      have[d] += cand.size[d];
    }
    if (covers(have, need)) {
      return { site, count: taken.length, taken, end: i + 1, freed, youth, left: have.map((v, d) => v - need[d]) };
    }
  }
  return undefined;
}

/** Takes the choice's victims and places the member; true when it charged a budget. */
function commit(c: Choice, budget: Map<string, Vec>, victims: Taken[]): boolean {
  const site = c.site;
  let charged = false;
  const take = (i: number): void => {
    const cand = site.candidates[i];
    victims.push({ cand, site });
    for (const key of cand.keys) {
      const left = budget.get(key)!;
      for (let d = 0; d < DIMS; d++) left[d] -= cand.size[d];
      charged = true;
    }
  };
  if (c.taken) c.taken.forEach(take);
  else for (let i = site.next; i < c.end; i++) take(i);
  // Passed-over candidates stay unaffordable: budgets only shrink while planning.
  site.next = c.end;
  site.free = c.left;
  return charged;
}

type Outcome =
  | { placements: Placement[]; victims: Taken[] }
  | { failed: number; placedBefore: number };

/**
 * Places the members in `order`, each on its best choice. Members of the same size share
 * one heap of choices: placing one changes only the site it went to, unless it charged a
 * budget, which every limited site shares.
 */
function placeAll(sites: readonly Site[], order: readonly number[], needs: readonly Vec[], budgetLeft: ReadonlyMap<string, Vec>, withVictims: boolean): Outcome {
  for (const s of sites) {
    s.free = s.startFree.slice();
    s.next = 0;
  }
  const budget = new Map([...budgetLeft].map(([k, v]) => [k, v.slice()]));
  const placements: Placement[] = [];
  const victims: Taken[] = [];
  const heap = new ChoiceHeap();
  const limitedSites = sites.filter((s) => s.limited);
  for (let g = 0; g < order.length; ) {
    const need = needs[order[g]];
    let end = g + 1;
    while (end < order.length && sameVec(needs[order[end]], need)) end++;
    heap.reset(sites.map((s) => choose(s, need, budget, withVictims)).filter((c): c is Choice => c !== undefined));
    for (let i = g; i < end; i++) {
      const best = heap.pop();
      if (!best) return { failed: order[i], placedBefore: i };
      const charged = commit(best, budget, victims);
      placements.push({ member: order[i], agentId: best.site.id });
      if (charged) {
        // Only a limited site's victims charge a budget, so best.site is among those renewed.
        const kept = heap.drain().filter((c) => !c.site.limited);
        for (const s of limitedSites) {
          const c = choose(s, need, budget, withVictims);
          if (c) kept.push(c);
        }
        heap.reset(kept);
      } else {
        const c = choose(best.site, need, budget, withVictims);
        if (c) heap.push(c);
      }
    }
    g = end;
  }
  return { placements, victims };
}

/**
 * Gives back every victim the placements do not need, oldest first so the youngest stay.
 * Dropping one only makes the rest more needed, so one pass leaves none removable alone.
 */
function prune(victims: readonly Taken[]): Taken[] {
  const oldestFirst = victims.map((_, i) => i).sort((a, b) => youngestFirst(victims[b].cand.task, victims[a].cand.task));
  const dropped = new Set<number>();
  for (const i of oldestFirst) {
    const { cand, site } = victims[i];
    if (covers(site.free, cand.size)) {
      site.free = site.free.map((v, d) => v - cand.size[d]);
      dropped.add(i);
    }
  }
  return victims.filter((_, i) => !dropped.has(i));
}

function describe(r: Resources): string {
  return r.toString() || 'nothing';
}

/**
 * Where each member of the demand goes and which running tasks to kill for it: free capacity
 * alone when that suffices ('fits'), else as few eligible victims as the greedy finds, youngest
 * first ('preempt'), else 'impossible' with the member that could not be placed.
 */
export function planPreemption(demand: Demand, agents: readonly AgentView[], tasks: readonly RunningTaskView[], opts: PlanOptions = {}): Plan {
  const needs = demand.members.map(vec);
  const order = needs.map((_, i) => i).sort((a, b) => largestFirst(needs[a], needs[b]) || a - b);
  const sites = indexCluster(demand, agents, tasks, opts);
  const budgetLeft = new Map([...(opts.budgets?.left ?? [])].map(([k, r]) => [k, vec(r)]));
  const byMember = (a: Placement, b: Placement) => a.member - b.member;

  const free = placeAll(sites, order, needs, budgetLeft, false);
  if ('placements' in free) return { kind: 'fits', placements: free.placements.sort(byMember) };

  const taken = placeAll(sites, order, needs, budgetLeft, true);
  if ('failed' in taken) {
    const m = taken.failed;
    const member = `member ${m} (${describe(demand.members[m])})`;
    if (sites.length === 0) return { kind: 'impossible', why: `no agent is active to place ${member} on` };
    const after = taken.placedBefore > 0 ? `, once the ${taken.placedBefore} members no smaller than it are placed` : '';
    return { kind: 'impossible', why: `${member} fits on no active agent even with every eligible task preempted${after}` };
  }
  const victims = prune(taken.victims);
  const placements = taken.placements.sort(byMember);
  if (victims.length === 0) return { kind: 'fits', placements };
  return { kind: 'preempt', placements, victims: victims.map((v) => v.cand.task.taskId), victimAgentIds: victims.map((v) => v.site.id) };
}

/**
 * Re-checks a plan against the latest state (the leader calls this just before committing
 * it): undefined when it still holds, else why not. It holds when every victim still runs on
 * the agent the plan assumed, is still eligible (same rules as planPreemption), the budgets
 * still allow taking them all, and every member still fits at its placement once the
 * victims' resources are freed.
 */
export function recheckPlan(
  plan: Plan & { kind: 'preempt' | 'fits' },
  demand: Demand,
  agents: readonly AgentView[],
  tasks: readonly RunningTaskView[],
  opts: PlanOptions = {},
): string | undefined {
  const victims = plan.kind === 'preempt' ? plan.victims : [];
  const victimAgentIds = plan.kind === 'preempt' ? plan.victimAgentIds : [];
  const agentById = new Map(agents.map((a) => [a.agentId, a]));
  const taskById = new Map(tasks.map((t) => [t.taskId, t]));

  const memberAt = new Map<number, string>();
  for (const p of plan.placements) {
    if (!Number.isInteger(p.member) || p.member < 0 || p.member >= demand.members.length) return `the plan places member ${p.member}, which the demand does not have`;
    if (memberAt.has(p.member)) return `the plan places member ${p.member} twice`;
    memberAt.set(p.member, p.agentId);
    const agent = agentById.get(p.agentId);
    if (!agent) return `agent ${p.agentId} (for member ${p.member}) is gone`;
    if (!agent.active) return `agent ${p.agentId} (for member ${p.member}) is no longer active`;
  }
  if (memberAt.size !== demand.members.length) return `the plan places ${memberAt.size} of the demand's ${demand.members.length} members`;

  const keysOf = limitedKeys(opts.budgets);
  const spent = new Map<string, Vec>();
  const freedOn = new Map<string, Vec>();
  const free = (agentId: string, size: Vec): void => {
    const f = freedOn.get(agentId) ?? ZERO.slice();
    for (let d = 0; d < DIMS; d++) f[d] += size[d];
    freedOn.set(agentId, f);
  };
  const seen = new Set<string>();
  for (let i = 0; i < victims.length; i++) {
    const id = victims[i];
    if (seen.has(id)) return `the plan lists victim ${id} twice`;
    seen.add(id);
    const t = taskById.get(id);
    if (!t) return `victim ${id} no longer runs`;
    if (t.agentId !== victimAgentIds[i]) return `victim ${id} moved from agent ${victimAgentIds[i]} to ${t.agentId}`;
    const why = whyNotVictim(t, demand, agentById.get(t.agentId), opts.eligible);
    if (why) return `victim ${id} may no longer be taken: ${why}`;
    const size = vec(t.resources);
    for (const key of keysOf(t.role)) {
      const left = vec(opts.budgets!.left.get(key)!);
      const s = spent.get(key) ?? ZERO.slice();
      for (let d = 0; d < DIMS; d++) {
        s[d] += size[d];
        if (s[d] > left[d]) return `taking victim ${id} would take ${NAMES[d]} below the guarantee of '${key}'`;
      }
      spent.set(key, s);
    }
    free(t.agentId, size);
  }
  for (const id of opts.alreadyPreempting ?? []) {
    const t = taskById.get(id);
    if (t && !seen.has(id)) free(t.agentId, vec(t.resources));
  }

  const needs = demand.members.map(vec);
  const order = needs.map((_, i) => i).sort((a, b) => largestFirst(needs[a], needs[b]) || a - b);
  const left = new Map<string, Vec>();
  for (const m of order) {
    const agentId = memberAt.get(m)!;
    let have = left.get(agentId);
    if (!have) {
      const a = agentById.get(agentId)!;
      const total = vec(a.total);
      const used = vec(a.used);
      const freed = freedOn.get(agentId) ?? ZERO;
      have = total.map((v, d) => v - used[d] + freed[d]);
      left.set(agentId, have);
    }
    if (!covers(have, needs[m])) return `member ${m} (${describe(demand.members[m])}) no longer fits on agent ${agentId}`;
    for (let d = 0; d < DIMS; d++) have[d] -= needs[m][d];
  }
  return undefined;
}
