// Choosing victims for a gang of a higher class: who may be taken, how few, which ones, where
// the members go, and whether a plan still holds when the leader is about to commit it. A
// seeded property test checks every plan against a plain re-computation with Resources.

import { describe, expect, it } from 'vitest';
import {
  planPreemption,
  recheckPlan,
  type AgentView,
  type Demand,
  type GuaranteeBudgets,
  type Plan,
  type PlanOptions,
  type RunningTaskView,
} from '../../master/sharing/victims.ts';
import { Resources } from '../../shared/resources.ts';
import { mulberry32 } from '../harness/mulberry32.ts';

function shuffled<T>(items: readonly T[], rand: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A GPU machine's slice: gpus, with 8 cpus and 64000 MiB per GPU unless told. */
function gpus(n: number, cpus = 8 * n, mem = 64_000 * n): Resources {
  return Resources.of({ gpus: n, cpus, mem });
}

type TaskSpec = Partial<RunningTaskView> & { taskId: string; resources: Resources };
interface AgentSpec {
  id: string;
  total?: Resources;
  active?: boolean;
  tasks?: TaskSpec[];
}

/** Agents and their running tasks; each agent's `used` is the sum of its tasks. */
function cluster(...specs: AgentSpec[]): { agents: AgentView[]; tasks: RunningTaskView[] } {
  const agents: AgentView[] = [];
  const tasks: RunningTaskView[] = [];
  for (const s of specs) {
    let used = Resources.EMPTY;
    for (const t of s.tasks ?? []) {
      tasks.push({ agentId: s.id, frameworkId: 'research-fw', role: 'research', classRank: 1, preemptible: true, startedAtMs: 0, ...t });
      used = used.add(t.resources);
    }
    agents.push({ agentId: s.id, total: s.total ?? gpus(8), used, active: s.active ?? true });
  }
  return { agents, tasks };
}

/** An agent of 8 GPUs full of 1-GPU tasks named `${id}-0` … `${id}-7`, started at start + j. */
function fullAgent(id: string, start: number, extra: Partial<RunningTaskView> = {}): AgentSpec {
  return { id, tasks: Array.from({ length: 8 }, (_, j) => ({ taskId: `${id}-${j}`, resources: gpus(1), startedAtMs: start + j, ...extra })) };
}

function gang(size: Resources, count: number, extra: Partial<Demand> = {}): Demand {
  return { frameworkId: 'prod-fw', role: 'prod', classRank: 2, members: Array.from({ length: count }, () => size), ...extra };
}

function expectKind<K extends Plan['kind']>(plan: Plan, kind: K): Extract<Plan, { kind: K }> {
  expect(plan.kind, plan.kind === 'impossible' ? plan.why : JSON.stringify(plan)).toBe(kind);
  return plan as Extract<Plan, { kind: K }>;
}

describe('planPreemption: free capacity', () => {
  it('places a gang that fits in free capacity without victims, packing tightly', () => {
    const { agents, tasks } = cluster(
      { id: 'big' },
      { id: 'small', tasks: [{ taskId: 't1', resources: gpus(6) }] },
    );
    const plan = expectKind(planPreemption(gang(gpus(2), 1), agents, tasks), 'fits');
    // 'small' has just the 2 GPUs asked; 'big' keeps its 8 whole for a later gang.
    expect(plan.placements).toEqual([{ member: 0, agentId: 'small' }]);

    const two = expectKind(planPreemption(gang(gpus(2), 2), agents, tasks), 'fits');
    expect(two.placements).toEqual([{ member: 0, agentId: 'small' }, { member: 1, agentId: 'big' }]);
  });

  it('counts tasks already being killed for the demand as free', () => {
    const { agents, tasks } = cluster(fullAgent('a', 0));
    const plan = planPreemption(gang(gpus(2), 1), agents, tasks, { alreadyPreempting: new Set(['a-0', 'a-1']) });
    expect(expectKind(plan, 'fits').placements).toEqual([{ member: 0, agentId: 'a' }]);
  });
});

describe('planPreemption: victims', () => {
  it('takes exactly enough: 8 one-GPU victims for a 4×2-GPU gang, the youngest, on one agent', () => {
    const { agents, tasks } = cluster(fullAgent('a', 1000), fullAgent('b', 2000), fullAgent('c', 3000), fullAgent('d', 4000));
    const plan = expectKind(planPreemption(gang(gpus(2), 4), agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['d-7', 'd-6', 'd-5', 'd-4', 'd-3', 'd-2', 'd-1', 'd-0']);
    expect(plan.victimAgentIds).toEqual(Array(8).fill('d'));
    expect(plan.placements).toEqual([0, 1, 2, 3].map((member) => ({ member, agentId: 'd' })));
  });

  it('spreads over agents when the youngest tasks do, taking each agent youngest first', () => {
    // Task j of agent i started at 10·j + i: each agent's two youngest are the youngest left.
    const specs = ['a', 'b', 'c', 'd'].map((id, i) => ({
      id,
      tasks: Array.from({ length: 8 }, (_, j) => ({ taskId: `${id}-${j}`, resources: gpus(1), startedAtMs: 10 * j + i })),
    }));
    const { agents, tasks } = cluster(...specs);
    const plan = expectKind(planPreemption(gang(gpus(2), 4), agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['d-7', 'd-6', 'c-7', 'c-6', 'b-7', 'b-6', 'a-7', 'a-6']);
  });

  it('reuses capacity freed for an earlier member on the same agent', () => {
    const { agents, tasks } = cluster(
      {
        id: 'a',
        tasks: [
          { taskId: 'big', resources: gpus(4), startedAtMs: 50 },
          ...[0, 1, 2, 3].map((j) => ({ taskId: `a-${j}`, resources: gpus(1), startedAtMs: j })),
        ],
      },
      fullAgent('b', 100),
    );
    // Member 0 needs one victim on a (the 4-GPU task) or two on b; member 1 then fits in
    // the 2 GPUs left over on a, with no victim of its own.
    const plan = expectKind(planPreemption(gang(gpus(2), 2), agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['big']);
    expect(plan.placements).toEqual([{ member: 0, agentId: 'a' }, { member: 1, agentId: 'a' }]);
  });

  it('never takes a task of an equal or higher class', () => {
    const equal = fullAgent('a', 900, { classRank: 2 });
    const higher = fullAgent('b', 800, { classRank: 3 });
    const lower = fullAgent('c', 0, { classRank: 1 });
    const { agents, tasks } = cluster(equal, higher, lower);
    const plan = expectKind(planPreemption(gang(gpus(1), 1), agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['c-7']);

    const without = cluster(equal, higher);
    expectKind(planPreemption(gang(gpus(1), 1), without.agents, without.tasks), 'impossible');
  });

  it('never takes a non-preemptible task', () => {
    const { agents, tasks } = cluster(fullAgent('a', 900, { preemptible: false }), fullAgent('b', 0));
    expect(expectKind(planPreemption(gang(gpus(1), 1), agents, tasks), 'preempt').victims).toEqual(['b-7']);
  });

  it("never takes a task of the demand's own framework", () => {
    const { agents, tasks } = cluster(fullAgent('a', 900, { frameworkId: 'prod-fw', classRank: 0 }), fullAgent('b', 0));
    expect(expectKind(planPreemption(gang(gpus(1), 1), agents, tasks), 'preempt').victims).toEqual(['b-7']);
  });

  it('honours the eligible veto', () => {
    const { agents, tasks } = cluster(fullAgent('a', 900), fullAgent('b', 0));
    const plan = planPreemption(gang(gpus(1), 1), agents, tasks, { eligible: (t) => t.agentId !== 'a' && t.taskId !== 'b-7' });
    expect(expectKind(plan, 'preempt').victims).toEqual(['b-6']);
  });

  it('neither places on nor takes from an inactive agent', () => {
    const { agents, tasks } = cluster(
      { id: 'draining', active: false },
      { ...fullAgent('gone', 900), active: false },
      fullAgent('live', 0),
    );
    const plan = expectKind(planPreemption(gang(gpus(1), 1), agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['live-7']);
    expect(plan.placements).toEqual([{ member: 0, agentId: 'live' }]);

    const none = cluster({ id: 'draining', active: false });
    expectKind(planPreemption(gang(gpus(1), 1), none.agents, none.tasks), 'impossible');
  });

  it('keeps every guarantee budget non-negative, cumulatively across agents', () => {
    // research/a and research/b share the 'research' budget: 2 GPUs in all may be taken.
    const { agents, tasks } = cluster(
      { id: 'a1', total: gpus(2), tasks: [{ taskId: 'ra', resources: gpus(2), role: 'research/a', startedAtMs: 300 }] },
      { id: 'a2', total: gpus(2), tasks: [{ taskId: 'rb', resources: gpus(2), role: 'research/b', startedAtMs: 200 }] },
      { id: 'a3', total: gpus(2), tasks: [{ taskId: 'batch', resources: gpus(2), role: 'batch', startedAtMs: 100 }] },
    );
    const budgets: GuaranteeBudgets = {
      keysOf: (role) => (role.startsWith('research/') ? ['research', role] : [role]),
      left: new Map([['research', gpus(2)]]),
    };
    const demand = gang(gpus(2), 2);
    const unlimited = expectKind(planPreemption(demand, agents, tasks), 'preempt');
    expect(unlimited.victims).toEqual(['ra', 'rb']);

    const plan = expectKind(planPreemption(demand, agents, tasks, { budgets }), 'preempt');
    expect(plan.victims).toEqual(['ra', 'batch']);

    const noBatch = cluster(
      { id: 'a1', total: gpus(2), tasks: [{ taskId: 'ra', resources: gpus(2), role: 'research/a' }] },
      { id: 'a2', total: gpus(2), tasks: [{ taskId: 'rb', resources: gpus(2), role: 'research/b' }] },
    );
    expectKind(planPreemption(demand, noBatch.agents, noBatch.tasks, { budgets }), 'impossible');
  });

  it('passes over a task its budget cannot afford and takes an older one it can', () => {
    const { agents, tasks } = cluster({
      id: 'a',
      tasks: [
        { taskId: 'young-research', resources: gpus(4), role: 'research', startedAtMs: 9 },
        { taskId: 'old-batch', resources: gpus(4), role: 'batch', startedAtMs: 1 },
      ],
    });
    const budgets: GuaranteeBudgets = { keysOf: (role) => [role], left: new Map([['research', gpus(2)]]) };
    const plan = expectKind(planPreemption(gang(gpus(4), 1), agents, tasks, { budgets }), 'preempt');
    expect(plan.victims).toEqual(['old-batch']);
  });

  it("is 'impossible', naming the member and its size, when not enough is eligible", () => {
    const { agents, tasks } = cluster({
      id: 'a',
      tasks: [
        { taskId: 'keep', resources: gpus(7), preemptible: false },
        { taskId: 'x', resources: gpus(1) },
      ],
    });
    const plan = expectKind(planPreemption(gang(gpus(2, 16, 128_000), 1), agents, tasks), 'impossible');
    expect(plan.why).toContain('member 0');
    expect(plan.why).toContain('gpus:2');
  });

  it('never takes more than needed: drops a young victim a greedy step over-took', () => {
    // Youngest first takes 'young' (1 GPU, not enough), then 'old' (4 GPUs), which alone suffices.
    const { agents, tasks } = cluster({
      id: 'a',
      tasks: [
        { taskId: 'young', resources: gpus(1), startedAtMs: 30 },
        { taskId: 'old', resources: gpus(4), startedAtMs: 20 },
        { taskId: 'pinned', resources: gpus(3), preemptible: false, startedAtMs: 10 },
      ],
    });
    const plan = expectKind(planPreemption(gang(gpus(4), 1), agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['old']);
  });

  it('gives the same plan for the same state in any input order', () => {
    const rand = mulberry32(7);
    const specs: AgentSpec[] = [];
    for (let i = 0; i < 20; i++) {
      specs.push({
        id: `agent-${i}`,
        tasks: Array.from({ length: 8 }, (_, j) => ({
          taskId: `t-${i}-${j}`,
          resources: gpus(1),
          // Few distinct start times, so ties are settled by task id.
          startedAtMs: Math.floor(rand() * 4),
          classRank: Math.floor(rand() * 3),
        })),
      });
    }
    const { agents, tasks } = cluster(...specs);
    const demand: Demand = { ...gang(gpus(2), 3), members: [gpus(2), gpus(1), gpus(3)] };
    const first = planPreemption(demand, agents, tasks);
    expectKind(first, 'preempt');
    for (let i = 0; i < 10; i++) {
      expect(planPreemption(demand, shuffled(agents, rand), shuffled(tasks, rand))).toEqual(first);
    }
  });
});

describe('recheckPlan', () => {
  const setup = () => {
    const { agents, tasks } = cluster(
      { id: 'a', tasks: [{ taskId: 'v', resources: gpus(1), startedAtMs: 5 }, { taskId: 'pinned', resources: gpus(6), preemptible: false }] },
      fullAgent('b', 0),
    );
    const demand = gang(gpus(2), 1);
    const plan = expectKind(planPreemption(demand, agents, tasks), 'preempt');
    expect(plan.victims).toEqual(['v']);
    return { agents, tasks, demand, plan };
  };

  it('holds on unchanged state', () => {
    const { agents, tasks, demand, plan } = setup();
    expect(recheckPlan(plan, demand, agents, tasks)).toBeUndefined();
  });

  it('fails when a victim has ended', () => {
    const { agents, tasks, demand, plan } = setup();
    const left = tasks.filter((t) => t.taskId !== 'v');
    expect(recheckPlan(plan, demand, agents, left)).toMatch(/victim v no longer runs/);
  });

  it('fails when a victim runs on another agent', () => {
    const { agents, tasks, demand, plan } = setup();
    const moved = tasks.map((t) => (t.taskId === 'v' ? { ...t, agentId: 'b' } : t));
    expect(recheckPlan(plan, demand, agents, moved)).toMatch(/victim v moved from agent a to b/);
  });

  it("fails when a victim's class is no longer below the demand's", () => {
    const { agents, tasks, demand, plan } = setup();
    const promoted = tasks.map((t) => (t.taskId === 'v' ? { ...t, classRank: 2 } : t));
    expect(recheckPlan(plan, demand, agents, promoted)).toMatch(/victim v .*class rank 2/);
  });

  it('fails when something else took the capacity', () => {
    const { agents, tasks, demand, plan } = setup();
    const taken = agents.map((a) => (a.agentId === 'a' ? { ...a, used: a.used.add(gpus(1)) } : a));
    const why = recheckPlan(plan, demand, taken, [...tasks, { ...tasks[0], taskId: 'newcomer', classRank: 9 }]);
    expect(why).toMatch(/member 0 \(.*gpus:2.*\) no longer fits on agent a/);
  });

  it('fails when the budgets no longer allow the victims, or the veto refuses one', () => {
    const { agents, tasks, demand, plan } = setup();
    const budgets: GuaranteeBudgets = { keysOf: (role) => [role], left: new Map([['research', Resources.of({ gpus: 0.5 })]]) };
    expect(recheckPlan(plan, demand, agents, tasks, { budgets })).toMatch(/below the guarantee of 'research'/);
    expect(recheckPlan(plan, demand, agents, tasks, { eligible: (t) => t.taskId !== 'v' })).toMatch(/eligibility/);
  });

  it("fails for a 'fits' plan whose agent went inactive", () => {
    const { agents, tasks } = cluster({ id: 'a' });
    const demand = gang(gpus(1), 1);
    const plan = expectKind(planPreemption(demand, agents, tasks), 'fits');
    expect(recheckPlan(plan, demand, agents, tasks)).toBeUndefined();
    expect(recheckPlan(plan, demand, [{ ...agents[0], active: false }], tasks)).toMatch(/agent a .*no longer active/);
  });
});

describe('planPreemption at scale', () => {
  it('plans a 400-member gang over 10,000 tasks on 1,250 agents in milliseconds', () => {
    const agents: AgentView[] = [];
    const tasks: RunningTaskView[] = [];
    const total = Resources.of({ gpus: 8, cpus: 64, mem: 512_000 });
    const size = Resources.of({ gpus: 1, cpus: 8, mem: 64_000 });
    let n = 0;
    for (let i = 0; i < 1250; i++) {
      const agentId = `agent-${String(i).padStart(4, '0')}`;
      agents.push({ agentId, total, used: total, active: true });
      for (let j = 0; j < 8; j++) {
        tasks.push({
          taskId: `task-${n}`,
          agentId,
          frameworkId: `research-${n % 7}`,
          role: 'research',
          classRank: 1,
          preemptible: true,
          startedAtMs: 1_700_000_000_000 + ((n * 7919) % 10_000) * 1000,
          resources: size,
        });
        n++;
      }
    }
    const demand: Demand = { frameworkId: 'prod', role: 'prod', classRank: 2, members: Array.from({ length: 400 }, () => size) };

    let plan: Plan = planPreemption(demand, agents, tasks);
    for (let i = 0; i < 20; i++) plan = planPreemption(demand, agents, tasks);
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      plan = planPreemption(demand, agents, tasks);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const median = (times[9] + times[10]) / 2;
    console.log(`planPreemption, 10,000 tasks on 1,250 agents, 400-member gang: median ${median.toFixed(2)} ms`);

    const p = expectKind(plan, 'preempt');
    expect(p.victims).toHaveLength(400);
    // One victim per member, and they are the 400 youngest tasks of the cluster.
    const youngest = [...tasks].sort((a, b) => b.startedAtMs - a.startedAtMs || (a.taskId < b.taskId ? -1 : 1)).slice(0, 400);
    expect(new Set(p.victims)).toEqual(new Set(youngest.map((t) => t.taskId)));
    expect(median).toBeLessThan(50);
  });
});

// ---------------------------------------------------------------------------------------------
// Property test: random small clusters, each plan checked with plain Resources arithmetic.

const FRAMEWORKS = ['fa', 'fb', 'fc'];
const ROLES = ['research/a', 'research/b', 'batch'];

function keysOf(role: string): string[] {
  return role.startsWith('research/') ? ['research', role] : [role];
}

function randomCase(rand: () => number): { demand: Demand; agents: AgentView[]; tasks: RunningTaskView[]; opts: PlanOptions } {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const shape = () => Resources.of({ gpus: int(0, 2), cpus: int(1, 16), mem: int(1, 16) * 8000 });
  const agents: AgentView[] = [];
  const tasks: RunningTaskView[] = [];
  const nAgents = int(1, 5);
  for (let i = 0; i < nAgents; i++) {
    const agentId = `ag${i}`;
    const total = Resources.of({ gpus: pick([0, 2, 4, 8]), cpus: int(1, 8) * 8, mem: int(1, 8) * 64_000 });
    let used = Resources.EMPTY;
    for (let tries = 0; tries < 10; tries++) {
      const r = shape();
      if (!total.contains(used.add(r))) continue;
      used = used.add(r);
      tasks.push({
        taskId: `t${tasks.length}`,
        agentId,
        frameworkId: pick(FRAMEWORKS),
        role: pick(ROLES),
        classRank: int(0, 3),
        preemptible: rand() < 0.8,
        startedAtMs: int(0, 20),
        resources: r,
      });
    }
    agents.push({ agentId, total, used, active: rand() < 0.9 });
  }
  const demand: Demand = { frameworkId: pick(FRAMEWORKS), role: 'prod', classRank: int(1, 3), members: Array.from({ length: int(1, 4) }, shape) };
  const opts: PlanOptions = {};
  if (rand() < 0.5) {
    const left = new Map<string, Resources>();
    for (const key of ['research', 'research/a', 'research/b', 'batch']) {
      if (rand() < 0.5) left.set(key, Resources.of({ gpus: int(0, 4), cpus: int(0, 48), mem: int(0, 6) * 64_000 }));
    }
    opts.budgets = { keysOf, left };
  }
  if (rand() < 0.3) opts.eligible = (t) => Number(t.taskId.slice(1)) % 3 !== 0;
  if (rand() < 0.2 && tasks.length > 0) opts.alreadyPreempting = new Set([pick(tasks).taskId]);
  return { demand, agents, tasks, opts };
}

/** What is wrong with a feasible plan, checked without the planner's own arithmetic. */
function problems(plan: Plan & { kind: 'fits' | 'preempt' }, demand: Demand, agents: readonly AgentView[], tasks: readonly RunningTaskView[], opts: PlanOptions): string[] {
  const out: string[] = [];
  const agentById = new Map(agents.map((a) => [a.agentId, a]));
  const taskById = new Map(tasks.map((t) => [t.taskId, t]));
  const victims = plan.kind === 'preempt' ? plan.victims : [];
  if (new Set(plan.placements.map((p) => p.member)).size !== demand.members.length || plan.placements.length !== demand.members.length) {
    out.push('placements do not cover each member once');
  }
  if (new Set(victims).size !== victims.length) out.push('a victim twice');
  for (const id of victims) {
    const t = taskById.get(id)!;
    const a = agentById.get(t.agentId)!;
    const ok = t.preemptible && t.classRank < demand.classRank && t.frameworkId !== demand.frameworkId && a.active &&
      (opts.eligible?.(t) ?? true) && !opts.alreadyPreempting?.has(id);
    if (!ok) out.push(`victim ${id} is not eligible`);
  }
  if (opts.budgets) {
    for (const [key, left] of opts.budgets.left) {
      let spent = Resources.EMPTY;
      for (const id of victims) {
        const t = taskById.get(id)!;
        if (opts.budgets.keysOf(t.role).includes(key)) spent = spent.add(t.resources);
      }
      if (!left.contains(spent)) out.push(`budget ${key} overdrawn: ${spent.toString()} of ${left.toString()}`);
    }
  }
  /** Whether each agent's placed members fit once the given victims are freed. */
  const fitsWith = (victimSet: ReadonlySet<string>): string | undefined => {
    for (const a of agents) {
      const placed = plan.placements.filter((p) => p.agentId === a.agentId);
      if (placed.length === 0) continue;
      if (!a.active) return `placed on inactive ${a.agentId}`;
      let have = a.total.subtract(a.used);
      for (const t of tasks) {
        if (t.agentId === a.agentId && (victimSet.has(t.taskId) || opts.alreadyPreempting?.has(t.taskId))) have = have.add(t.resources);
      }
      const need = placed.reduce((r, p) => r.add(demand.members[p.member]), Resources.EMPTY);
      if (!have.contains(need)) return `members do not fit on ${a.agentId}`;
    }
    return undefined;
  };
  const fit = fitsWith(new Set(victims));
  if (fit) out.push(fit);
  for (const id of victims) {
    if (fitsWith(new Set(victims.filter((v) => v !== id))) === undefined) out.push(`victim ${id} is not needed`);
  }
  return out;
}

describe('planPreemption: seeded property test', () => {
  it('gives valid, single-removal-minimal plans on 200 random clusters', () => {
    const rand = mulberry32(20240611);
    const kinds: Record<Plan['kind'], number> = { fits: 0, preempt: 0, impossible: 0 };
    for (let i = 0; i < 200; i++) {
      const { demand, agents, tasks, opts } = randomCase(rand);
      const plan = planPreemption(demand, agents, tasks, opts);
      kinds[plan.kind]++;
      if (plan.kind === 'impossible') {
        expect(plan.why).toMatch(/member \d+|no agent is active/);
        continue;
      }
      expect(problems(plan, demand, agents, tasks, opts), `case ${i}: ${JSON.stringify(plan)}`).toEqual([]);
      expect(recheckPlan(plan, demand, agents, tasks, opts), `case ${i}`).toBeUndefined();
      expect(planPreemption(demand, shuffled(agents, rand), shuffled(tasks, rand), opts), `case ${i}`).toEqual(plan);
    }
    // Every kind turns up, so none of the checks above passed for want of cases.
    expect(kinds.fits).toBeGreaterThan(10);
    expect(kinds.preempt).toBeGreaterThan(10);
    expect(kinds.impossible).toBeGreaterThan(10);
  });
});
