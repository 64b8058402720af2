// The hierarchical DRF allocator: who is offered what, when, and the invariants that must hold
// whatever the sequence of events. Expected shares are written beside expected offers.

import { describe, expect, it } from 'vitest';
import { Allocator, type Offer } from '../../master/allocator/allocator.ts';
import { Resources, SCALAR_NAMES } from '../../shared/resources.ts';
import { mulberry32 } from '../harness/mulberry32.ts';

const R = (text: string) => Resources.parse(text);

/** Who got which agent, as 'framework@agent', in offer order. */
const who = (offers: Offer[]) => offers.map((o) => `${o.frameworkId}@${o.agentId}`);

/** Gives every offer back whole, with no filter. */
function recoverAll(a: Allocator, offers: Offer[], nowMs = 0): void {
  for (const o of offers) a.recoverResources(o.frameworkId, o.agentId, o.resources, 0, nowMs);
}

function expectCode(fn: () => unknown, code: string, field?: string): void {
  expect(fn).toThrowError(expect.objectContaining(field === undefined ? { code } : { code, field }));
}

describe('Allocator: the DRF paper example', () => {
  it('A <1 cpu, 4 GB> and B <3 cpus, 1 GB> on 9 cpus / 18 GB: A runs 3 tasks, B runs 2', () => {
    const a = new Allocator();
    a.addAgent('agent', R('cpus:9;mem:18432'));
    a.addFramework('A', 'roleA');
    a.addFramework('B', 'roleB');
    const task: Record<string, Resources> = { A: R('cpus:1;mem:4096'), B: R('cpus:3;mem:1024') };
    const tasks: Record<string, number> = { A: 0, B: 0 };
    const picks: string[] = [];

    // Each framework launches one task from an offer when it fits and gives the rest back.
    for (let cycle = 0; cycle < 20; cycle++) {
      const offers = a.allocate(cycle);
      let launched = false;
      for (const o of offers) {
        const t = task[o.frameworkId];
        picks.push(o.frameworkId);
        if (o.resources.contains(t)) {
          tasks[o.frameworkId]++;
          launched = true;
          a.recoverResources(o.frameworkId, o.agentId, o.resources.subtract(t), 0, cycle);
        } else {
          a.recoverResources(o.frameworkId, o.agentId, o.resources, 0, cycle);
        }
      }
      if (!launched) break;
    }

    // Shares before each offer (the whole agent is one offer per cycle):
    //   A = 0,   B = 0    → A (tie, by name); A launches, A = 2/9 (mem 4/18)
    //   A = 2/9, B = 0    → B;                B launches, B = 1/3 (cpus 3/9)
    //   A = 2/9, B = 1/3  → A;                A = 4/9
    //   A = 4/9, B = 1/3  → B;                B = 2/3
    //   A = 4/9, B = 2/3  → A;                A = 2/3
    //   A = 2/3, B = 2/3  → A (tie, by name); only <0 cpus, 4 GB> left: nothing fits, stop.
    expect(picks).toEqual(['A', 'B', 'A', 'B', 'A', 'A']);
    expect(tasks).toEqual({ A: 3, B: 2 });
    expect(a.frameworkShare('A')).toBeCloseTo(2 / 3, 12); // 3 cpus, 12 GB of 9, 18
    expect(a.frameworkShare('B')).toBeCloseTo(2 / 3, 12); // 6 cpus, 2 GB of 9, 18
    expect(a.available('agent').equals(R('cpus:0;mem:4096'))).toBe(true);
  });
});

describe('Allocator: offers', () => {
  it('offers all of an agent, once per cycle, and counts it as allocated until given back', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:4;mem:1024;ports:[31000-31010]'));
    a.addFramework('f1', 'r');
    const offers = a.allocate(0);
    expect(offers).toHaveLength(1);
    expect(offers[0].resources.equals(R('cpus:4;mem:1024;ports:[31000-31010]'))).toBe(true);
    expect(a.available('a1').isEmpty()).toBe(true);
    expect(a.allocated('a1').equals(R('cpus:4;mem:1024;ports:[31000-31010]'))).toBe(true);
    expect(a.frameworkShare('f1')).toBe(1);
    expect(a.roleShare('r')).toBe(1);
    expect(a.allocate(1)).toEqual([]);

    // Part given back is offered again next cycle, alone.
    a.recoverResources('f1', 'a1', R('cpus:1;mem:512;ports:[31005-31010]'), 0, 1);
    const again = a.allocate(2);
    expect(again).toHaveLength(1);
    expect(again[0].resources.equals(R('cpus:1;mem:512;ports:[31005-31010]'))).toBe(true);
  });

  it('spreads agents across frameworks by share within a cycle', () => {
    const a = new Allocator();
    for (const id of ['a1', 'a2', 'a3', 'a4']) a.addAgent(id, R('cpus:2;mem:2048'));
    a.addFramework('f1', 'r');
    a.addFramework('f2', 'r');
    // f1 = 0, f2 = 0 → f1; f1 = .25, f2 = 0 → f2; f1 = .25, f2 = .25 → f1; f1 = .5, f2 = .25 → f2
    expect(who(a.allocate(0))).toEqual(['f1@a1', 'f2@a2', 'f1@a3', 'f2@a4']);
    expect(a.frameworkShare('f1')).toBe(0.5);
    expect(a.roleShare('r')).toBe(1);
  });

  it('starts each cycle one agent further along', () => {
    const a = new Allocator();
    for (const id of ['a1', 'a2', 'a3']) a.addAgent(id, R('cpus:1;mem:128'));
    a.addFramework('f', 'r');
    const firsts: string[] = [];
    for (let c = 0; c < 4; c++) {
      const offers = a.allocate(c);
      expect(offers).toHaveLength(3);
      firsts.push(offers[0].agentId);
      recoverAll(a, offers, c);
    }
    expect(firsts).toEqual(['a1', 'a2', 'a3', 'a1']);
  });

  it('does not offer less than 0.01 cpus and 32 MiB, nor ports or disk alone', () => {
    const a = new Allocator();
    a.addAgent('tiny', R('cpus:0.009;mem:31;disk:1000;ports:[1-10]'));
    a.addAgent('cpuOnly', R('cpus:0.01'));
    a.addAgent('memOnly', R('mem:32'));
    a.addFramework('f', 'r');
    expect(who(a.allocate(0)).sort()).toEqual(['f@cpuOnly', 'f@memOnly']);
  });

  it('offers nothing without frameworks, and keeps nothing allocated', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:128'));
    expect(a.allocate(0)).toEqual([]);
    expect(a.allocated('a1').isEmpty()).toBe(true);
    expect(new Allocator().allocate(0)).toEqual([]);
  });
});

describe('Allocator: roles', () => {
  it('orders roles first, then frameworks within the role', () => {
    const a = new Allocator();
    for (const id of ['a1', 'a2', 'a3']) a.addAgent(id, R('cpus:1;mem:1024'));
    a.addFramework('x1', 'x');
    a.addFramework('x2', 'x');
    a.addFramework('y1', 'y');
    // x = 0, y = 0 → x, x1 (names); x = 1/3, y = 0 → y1; x = 1/3, y = 1/3 → x, x2 (x1 = 1/3, x2 = 0)
    expect(who(a.allocate(0))).toEqual(['x1@a1', 'y1@a2', 'x2@a3']);
  });

  it('gives a role of weight 2 about twice the dominant share of a role of weight 1', () => {
    const a = new Allocator({ roleWeights: { heavy: 2 } });
    for (let i = 0; i < 30; i++) a.addAgent(`a${String(i).padStart(2, '0')}`, R('cpus:4;mem:8192'));
    a.addFramework('h1', 'heavy');
    a.addFramework('h2', 'heavy');
    a.addFramework('l1', 'light');
    a.allocate(0); // frameworks keep everything
    // Each agent goes to the lowest weighted share: heavy/2 vs light, so 20 agents to 10.
    expect(a.roleShare('heavy')).toBeCloseTo(2 / 3, 12); // weighted 1/3
    expect(a.roleShare('light')).toBeCloseTo(1 / 3, 12);
    expect(a.frameworkShare('h1')).toBeCloseTo(1 / 3, 12); // h1 and h2 split heavy's agents
    expect(a.frameworkShare('h2')).toBeCloseTo(1 / 3, 12);
  });

  it('applies a weight set later, and rejects weights that are not > 0', () => {
    const a = new Allocator();
    a.addFramework('h', 'heavy');
    a.addFramework('l', 'light');
    a.setRoleWeight('heavy', 3);
    for (let i = 0; i < 8; i++) a.addAgent(`a${i}`, R('cpus:1;mem:1024'));
    a.allocate(0);
    expect(a.roleShare('heavy')).toBeCloseTo(6 / 8, 12); // weighted 2/8
    expect(a.roleShare('light')).toBeCloseTo(2 / 8, 12);
    expectCode(() => a.setRoleWeight('heavy', 0), 'CAIRN_BAD_REQUEST', 'weight');
    expectCode(() => a.setRoleWeight('heavy', -1), 'CAIRN_BAD_REQUEST', 'weight');
    expectCode(() => new Allocator({ roleWeights: { x: NaN } }), 'CAIRN_BAD_REQUEST', 'weight');
    expect(a.roleShare('nobody')).toBe(0);
  });

  it('skips a role whose frameworks cannot take the agent', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:1024'));
    a.addAgent('a2', R('cpus:1;mem:1024'));
    a.addFramework('low', 'aaa');
    a.addFramework('high', 'bbb');
    a.suppress('low');
    // Role aaa has no framework to offer to, so bbb takes both despite its growing share.
    expect(who(a.allocate(0))).toEqual(['high@a1', 'high@a2']);
  });
});

describe('Allocator: filters', () => {
  it('does not re-offer a declined agent to the framework before refuseMs, offers it to another meanwhile, and again after', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:2;mem:2048'));
    a.addFramework('x', 'r');
    a.addFramework('y', 'r');
    const [first] = a.allocate(0); // x = 0, y = 0 → x (name)
    expect(first.frameworkId).toBe('x');
    a.recoverResources('x', 'a1', first.resources, 1000, 0); // decline, refuse for 1 s

    const [second] = a.allocate(10); // x filtered → y
    expect(second.frameworkId).toBe('y');
    a.recoverResources('y', 'a1', second.resources, 0, 10);
    expect(who(a.allocate(999))).toEqual(['y@a1']); // x still filtered
    a.recoverResources('y', 'a1', a.allocated('a1'), 0, 999);

    expect(who(a.allocate(1000))).toEqual(['x@a1']); // expired: x = 0, y = 0 → x (name)
  });

  it('offers nothing while the only framework has filtered the agent', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:2;mem:2048'));
    a.addAgent('a2', R('cpus:2;mem:2048'));
    a.addFramework('x', 'r');
    const offers = a.allocate(0);
    a.recoverResources('x', 'a1', offers.find((o) => o.agentId === 'a1')!.resources, 5000, 0);
    a.recoverResources('x', 'a2', offers.find((o) => o.agentId === 'a2')!.resources, 0, 0);
    expect(who(a.allocate(4999))).toEqual(['x@a2']);
    a.recoverResources('x', 'a2', a.allocated('a2'), 0, 4999);
    expect(who(a.allocate(5000)).sort()).toEqual(['x@a1', 'x@a2']);
  });

  it('stops filtering once more is available than was refused', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:4;mem:4096'));
    a.addFramework('x', 'r');
    const [offer] = a.allocate(0);
    const taskRes = R('cpus:2;mem:1024');
    // Launches a task, declines the rest for a long time.
    a.recoverResources('x', 'a1', offer.resources.subtract(taskRes), 60_000, 0);
    expect(a.allocate(1)).toEqual([]);
    // The task ends: the whole agent is free, more than the refused part.
    a.recoverResources('x', 'a1', taskRes, 0, 2);
    const [again] = a.allocate(3);
    expect(again.frameworkId).toBe('x');
    expect(again.resources.equals(R('cpus:4;mem:4096'))).toBe(true);
  });

  it('refuses negative or NaN refuseMs', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:128'));
    a.addFramework('x', 'r');
    expectCode(() => a.recoverResources('x', 'a1', Resources.EMPTY, -1, 0), 'CAIRN_BAD_REQUEST', 'refuseMs');
    expectCode(() => a.recoverResources('x', 'a1', Resources.EMPTY, NaN, 0), 'CAIRN_BAD_REQUEST', 'refuseMs');
  });
});

describe('Allocator: suppress and revive', () => {
  it('offers a suppressed framework nothing, and revive clears its filters', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:1024'));
    a.addAgent('a2', R('cpus:1;mem:1024'));
    a.addFramework('x', 'r1');
    a.addFramework('y', 'r2');
    a.suppress('x');
    expect(who(a.allocate(0))).toEqual(['y@a1', 'y@a2']);
    a.recoverResources('y', 'a1', R('cpus:1;mem:1024'), 0, 0);
    a.recoverResources('y', 'a2', R('cpus:1;mem:1024'), 0, 0);
    a.suppress('y');
    expect(a.allocate(1)).toEqual([]);

    a.revive('x');
    const offers = a.allocate(2);
    expect(who(offers)).toEqual(['x@a1', 'x@a2']); // third cycle on two agents: starts at a1 again
    for (const o of offers) a.recoverResources('x', o.agentId, o.resources, 1_000_000, 2);
    expect(a.allocate(3)).toEqual([]);
    a.revive('x'); // filters gone
    expect(a.allocate(4)).toHaveLength(2);
  });
});

describe('Allocator: inactive agents and frameworks', () => {
  it('never offers an inactive agent, and leaves it out of the cluster total', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:1024'));
    a.addAgent('a2', R('cpus:3;mem:3072'));
    a.addFramework('f', 'r');
    a.setAgentActive('a2', false);
    expect(who(a.allocate(0))).toEqual(['f@a1']);
    expect(a.frameworkShare('f')).toBe(1); // 1 of 1 cpu
    a.setAgentActive('a2', true);
    expect(a.frameworkShare('f')).toBe(0.25); // 1 of 4 cpus
    expect(who(a.allocate(1))).toEqual(['f@a2']);
    a.setAgentActive('a2', false); // what was offered stays allocated
    expect(a.allocated('a2').equals(R('cpus:3;mem:3072'))).toBe(true);
  });

  it('offers an inactive framework nothing but keeps its allocation and share', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:1024'));
    a.addAgent('a2', R('cpus:1;mem:1024'));
    a.addFramework('x', 'r');
    a.addFramework('y', 'r');
    a.allocate(0); // x@a1, y@a2
    a.setFrameworkActive('x', false);
    a.recoverResources('y', 'a2', R('cpus:1;mem:1024'), 0, 0);
    expect(who(a.allocate(1))).toEqual(['y@a2']); // x = .5 but inactive; y = 0 → y
    expect(a.frameworkShare('x')).toBe(0.5);
    a.recoverResources('y', 'a2', R('cpus:1;mem:1024'), 0, 1);
    a.setFrameworkActive('x', true);
    // x = .5, y = 0 → y, still, by share; x gets offers once it is the lowest.
    expect(who(a.allocate(2))).toEqual(['y@a2']);
  });
});

describe('Allocator: agents and frameworks coming and going', () => {
  it('counts resources used at addAgent, attributed ones in shares', () => {
    const a = new Allocator();
    a.addFramework('x', 'r');
    a.addFramework('y', 'r');
    a.addAgent('a1', R('cpus:4;mem:4096'), R('cpus:3;mem:1024'), [{ frameworkId: 'x', resources: R('cpus:2;mem:512') }]);
    expect(a.available('a1').equals(R('cpus:1;mem:3072'))).toBe(true);
    expect(a.frameworkShare('x')).toBe(0.5); // 2 of 4 cpus
    expect(who(a.allocate(0))).toEqual(['y@a1']); // x = .5, y = 0
    // The unowned cpu comes back under whatever id the master knew it by.
    a.recoverResources('gone', 'a1', R('cpus:1;mem:512'), 0, 0);
    a.recoverResources('x', 'a1', R('cpus:2;mem:512'), 0, 0);
    expect(a.frameworkShare('x')).toBe(0);
    expect(a.available('a1').equals(R('cpus:3;mem:1024'))).toBe(true); // y still holds its offer
  });

  it('rejects used beyond the total, usedBy beyond used, and unknown frameworks in usedBy', () => {
    const a = new Allocator();
    a.addFramework('x', 'r');
    expectCode(() => a.addAgent('a1', R('cpus:1'), R('cpus:2')), 'CAIRN_BAD_REQUEST', 'used');
    expectCode(() => a.addAgent('a1', R('cpus:2'), R('cpus:1'), [{ frameworkId: 'x', resources: R('cpus:2') }]), 'CAIRN_BAD_REQUEST', 'usedBy');
    expectCode(() => a.addAgent('a1', R('cpus:2'), undefined, [{ frameworkId: 'nope', resources: R('cpus:1') }]), 'CAIRN_UNKNOWN_FRAMEWORK');
    // Nothing of the failed calls was kept.
    a.addAgent('a1', R('cpus:2;mem:256'));
    expect(a.available('a1').equals(R('cpus:2;mem:256'))).toBe(true);
  });

  it('keeps what a removed framework held until it is given back', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:2;mem:2048'));
    a.addFramework('x', 'r');
    a.addFramework('y', 'r2');
    a.allocate(0); // x@a1
    a.removeFramework('x');
    expect(a.allocate(1)).toEqual([]); // still held: tasks may be running
    expectCode(() => a.frameworkShare('x'), 'CAIRN_UNKNOWN_FRAMEWORK');
    expect(a.roleShare('r')).toBe(0);
    a.recoverResources('x', 'a1', R('cpus:2;mem:2048'), 0, 1);
    expect(who(a.allocate(2))).toEqual(['y@a1']);
    expectCode(() => a.recoverResources('x', 'a1', R('cpus:1'), 0, 2), 'CAIRN_UNKNOWN_FRAMEWORK');
  });

  it('forgets what was held on a removed agent and the filters on it', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1;mem:1024'));
    a.addAgent('a2', R('cpus:1;mem:1024'));
    a.addFramework('x', 'r');
    const offers = a.allocate(0);
    expect(a.frameworkShare('x')).toBe(1);
    a.removeAgent('a1');
    expect(a.frameworkShare('x')).toBe(1); // 1 of the 1 cpu left
    a.recoverResources('x', 'a2', offers.find((o) => o.agentId === 'a2')!.resources, 1_000_000, 0);
    expect(a.frameworkShare('x')).toBe(0);
    a.removeAgent('a2');
    a.addAgent('a2', R('cpus:1;mem:1024')); // a new agent under the old id: no filter
    expect(who(a.allocate(1))).toEqual(['x@a2']);
  });

  it('throws stable codes for unknown and duplicate ids', () => {
    const a = new Allocator();
    a.addAgent('a1', R('cpus:1'));
    a.addFramework('x', 'r');
    expectCode(() => a.addAgent('a1', R('cpus:1')), 'CAIRN_BAD_REQUEST', 'agentId');
    expectCode(() => a.addFramework('x', 'r'), 'CAIRN_BAD_REQUEST', 'frameworkId');
    expectCode(() => a.addFramework('z', ''), 'CAIRN_BAD_REQUEST', 'role');
    expectCode(() => a.removeAgent('nope'), 'CAIRN_UNKNOWN_AGENT');
    expectCode(() => a.setAgentActive('nope', true), 'CAIRN_UNKNOWN_AGENT');
    expectCode(() => a.available('nope'), 'CAIRN_UNKNOWN_AGENT');
    expectCode(() => a.allocated('nope'), 'CAIRN_UNKNOWN_AGENT');
    expectCode(() => a.recoverResources('x', 'nope', R('cpus:1'), 0, 0), 'CAIRN_UNKNOWN_AGENT');
    expectCode(() => a.removeFramework('nope'), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.setFrameworkActive('nope', true), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.suppress('nope'), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.revive('nope'), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.frameworkShare('nope'), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.recoverResources('nope', 'a1', R('cpus:1'), 0, 0), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.recoverResources('nope', 'a1', Resources.EMPTY, 0, 0), 'CAIRN_UNKNOWN_FRAMEWORK');
    expectCode(() => a.recoverResources('x', 'a1', R('cpus:1'), 0, 0), 'CAIRN_INSUFFICIENT_RESOURCES');
  });
});

// ---- randomized: a reference model checked at every step ----

/** Tiny seeded PRNG, so a failure replays with its seed. */
describe('Allocator: GPU agents', () => {
  it('offers an agent with GPUs only to frameworks that opted in', () => {
    const a = new Allocator();
    a.addAgent('gpu', R('cpus:8;mem:8192;gpus:2'));
    a.addAgent('cpu', R('cpus:8;mem:8192'));
    a.addFramework('plain', '*');
    a.addFramework('trainer', '*', { gpuAware: true });
    // Both frameworks start at share 0; whatever the order, the GPU agent goes to the trainer.
    const offers = a.allocate(0);
    expect(offers.find((o) => o.agentId === 'gpu')?.frameworkId).toBe('trainer');
    recoverAll(a, offers);
    a.removeFramework('trainer');
    // With no GPU-aware framework left, the GPU agent is not offered at all.
    expect(who(a.allocate(1))).toEqual(['plain@cpu']);
  });
});

interface ModelAgent {
  total: Resources;
  active: boolean;
  /** What each framework holds here. */
  held: Map<string, Resources>;
  unowned: Resources;
}
interface ModelFramework {
  role: string;
  active: boolean;
  suppressed: boolean;
  filters: { agentId: string; refused: Resources; expiresAtMs: number }[];
}

/** Just enough of the allocator's rules, written plainly, to judge each offer it makes. */
class Model {
  agents = new Map<string, ModelAgent>();
  frameworks = new Map<string, ModelFramework>();
  weights = new Map<string, number>();

  heldOn(agent: ModelAgent): Resources {
    let sum = agent.unowned;
    for (const r of agent.held.values()) sum = sum.add(r);
    return sum;
  }

  clusterTotal(): number[] {
    const t = [0, 0, 0, 0];
    for (const a of this.agents.values()) if (a.active) SCALAR_NAMES.forEach((n, k) => (t[k] += a.total.getMilli(n)));
    return t;
  }

  /** Dominant shares of every framework and every role (unweighted), over the active total. */
  shares(): { framework: Map<string, number>; role: Map<string, number> } {
    const fAlloc = new Map<string, number[]>();
    const rAlloc = new Map<string, number[]>();
    for (const [id, f] of this.frameworks) {
      fAlloc.set(id, [0, 0, 0, 0]);
      if (!rAlloc.has(f.role)) rAlloc.set(f.role, [0, 0, 0, 0]);
    }
    for (const a of this.agents.values()) {
      for (const [f, r] of a.held) {
        const fa = fAlloc.get(f)!;
        const ra = rAlloc.get(this.frameworks.get(f)!.role)!;
        SCALAR_NAMES.forEach((n, k) => {
          fa[k] += r.getMilli(n);
          ra[k] += r.getMilli(n);
        });
      }
    }
    const total = this.clusterTotal();
    const dominant = (alloc: number[]) => {
      let d = 0;
      total.forEach((t, k) => {
        if (t > 0) d = Math.max(d, alloc[k] / t);
      });
      return d;
    };
    const framework = new Map([...fAlloc].map(([id, al]) => [id, dominant(al)]));
    const role = new Map([...rAlloc].map(([id, al]) => [id, dominant(al)]));
    return { framework, role };
  }

  eligible(frameworkId: string, agentId: string, available: Resources, nowMs: number): boolean {
    const f = this.frameworks.get(frameworkId)!;
    if (!f.active || f.suppressed) return false;
    return !f.filters.some((x) => x.agentId === agentId && nowMs < x.expiresAtMs && x.refused.contains(available));
  }

  available(agentId: string): Resources {
    const a = this.agents.get(agentId)!;
    return a.total.subtract(this.heldOn(a));
  }
}

const worthOffering = (r: Resources) => r.getMilli('cpus') >= 10 || r.getMilli('mem') >= 32_000;

/** Ports in a and b do not overlap. */
function disjointPorts(a: Resources, b: Resources): boolean {
  return a.add(b).portCount() === a.portCount() + b.portCount();
}

/** A random part of r (possibly all of it). */
function partOf(r: Resources, rand: () => number): Resources {
  if (rand() < 0.4) return r;
  const frac = rand();
  const init: Record<string, number> = {};
  for (const n of SCALAR_NAMES) init[n] = Math.floor(r.getMilli(n) * frac) / 1000;
  const ports = r.takePorts(Math.floor(r.portCount() * frac)) ?? Resources.EMPTY;
  return Resources.of({ ...init, ports: ports.ports });
}

/** A plain assertion: vitest's expect is too slow to call a million times. */
function check(cond: boolean, why: string): void {
  if (!cond) throw new Error(why);
}

function runRandomized(seed: number, steps: number): void {
  const rand = mulberry32(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const a = new Allocator();
  const m = new Model();
  let now = 0;
  let nextAgent = 0;
  let nextFramework = 0;
  const roles = ['r0', 'r1', 'r2', 'r3'];
  const ctx = (step: number, what: string) => `seed ${seed} step ${step}: ${what}`;

  const randomTotal = () =>
    Resources.of({
      cpus: 1 + Math.floor(rand() * 16),
      mem: 256 * (1 + Math.floor(rand() * 32)),
      disk: rand() < 0.5 ? 0 : 1000 * Math.floor(rand() * 10),
      gpus: rand() < 0.8 ? 0 : 1 + Math.floor(rand() * 4),
      ports: [{ begin: 31000, end: 31000 + Math.floor(rand() * 100) }],
    });

  const checkOffers = (offers: Offer[], step: number) => {
    const offered = new Set<string>();
    for (const o of offers) {
      const why = ctx(step, `offer ${o.frameworkId}@${o.agentId}`);
      check(!(offered.has(o.agentId)), why);
      offered.add(o.agentId);
      const agent = m.agents.get(o.agentId)!;
      check(agent.active, why);
      // Nothing already held on the agent is in the offer, and the offer is all that is free.
      const held = m.heldOn(agent);
      check(disjointPorts(held, o.resources), why);
      check(agent.total.contains(held.add(o.resources)), why);
      check(o.resources.equals(m.available(o.agentId)), why);
      check(worthOffering(o.resources), why);

      // It went to the lowest-share role with an eligible framework, and that role's
      // lowest-share eligible framework.
      const eligible = [...m.frameworks.keys()].filter((f) => m.eligible(f, o.agentId, o.resources, now));
      check(eligible.includes(o.frameworkId), `${why}: not eligible; eligible were ${eligible.join(', ')}`);
      const shares = m.shares();
      const role = m.frameworks.get(o.frameworkId)!.role;
      const weighted = (r: string) => shares.role.get(r)! / (m.weights.get(r) ?? 1);
      const minRole = Math.min(...eligible.map((f) => weighted(m.frameworks.get(f)!.role)));
      check(weighted(role) <= minRole + 1e-12, `${why}: role ${role} at ${weighted(role)}, lowest eligible ${minRole}`);
      const fshare = (f: string) => shares.framework.get(f)!;
      const minFw = Math.min(...eligible.filter((f) => m.frameworks.get(f)!.role === role).map(fshare));
      check(fshare(o.frameworkId) <= minFw + 1e-12, `${why}: share ${fshare(o.frameworkId)}, lowest eligible ${minFw}`);

      agent.held.set(o.frameworkId, (agent.held.get(o.frameworkId) ?? Resources.EMPTY).add(o.resources));
    }
    // Every agent left out had nothing worth offering or no framework that could take it.
    for (const [id, agent] of m.agents) {
      if (offered.has(id) || !agent.active) continue;
      const avail = m.available(id);
      if (!worthOffering(avail)) continue;
      const takers = [...m.frameworks.keys()].filter((f) => m.eligible(f, id, avail, now));
      check(takers.length === 0, ctx(step, `agent ${id} left out though ${takers.join(', ')} could take it`));
    }
  };

  const checkInvariants = (step: number) => {
    for (const [id, agent] of m.agents) {
      const why = ctx(step, `agent ${id}`);
      const allocated = a.allocated(id);
      check(agent.total.contains(allocated), why); // allocated ≤ total
      check(allocated.equals(m.heldOn(agent)), why);
      check(a.available(id).equals(agent.total.subtract(allocated)), why);
      // No resource is held twice on one agent.
      const pieces = [agent.unowned, ...agent.held.values()];
      let union = Resources.EMPTY;
      for (const p of pieces) {
        check(disjointPorts(union, p), why);
        union = union.add(p);
      }
    }
    const shares = m.shares();
    for (const [f, share] of shares.framework) check(Math.abs(a.frameworkShare(f) - share) < 1e-9, ctx(step, `share of ${f}: ${a.frameworkShare(f)}, model ${share}`));
    for (const [r, share] of shares.role) check(Math.abs(a.roleShare(r) - share) < 1e-9, ctx(step, `share of ${r}: ${a.roleShare(r)}, model ${share}`));
  };

  for (let step = 0; step < steps; step++) {
    const op = rand();
    const agentIds = [...m.agents.keys()];
    const frameworkIds = [...m.frameworks.keys()];
    if (op < 0.08 || agentIds.length === 0) {
      const id = `a${nextAgent++}`;
      const total = randomTotal();
      const owners = frameworkIds.length > 0 && rand() < 0.3 ? [pick(frameworkIds)] : [];
      const usedBy = owners.map((f) => ({ frameworkId: f, resources: partOf(total, rand) }));
      const attributed = usedBy[0]?.resources ?? Resources.EMPTY;
      // Sometimes part of what is used belongs to no framework the allocator knows.
      const unowned = rand() < 0.5 ? Resources.EMPTY : partOf(total.subtract(attributed), rand);
      const used = unowned.isEmpty() && rand() < 0.5 ? undefined : attributed.add(unowned);
      a.addAgent(id, total, used, usedBy);
      const held = new Map<string, Resources>();
      for (const u of usedBy) if (!u.resources.isEmpty()) held.set(u.frameworkId, u.resources);
      m.agents.set(id, { total, active: true, held, unowned });
    } else if (op < 0.14 || frameworkIds.length === 0) {
      const id = `f${nextFramework++}`;
      const role = pick(roles);
      a.addFramework(id, role, { gpuAware: true }); // the model does not restrict GPU agents
      m.frameworks.set(id, { role, active: true, suppressed: false, filters: [] });
    } else if (op < 0.16) {
      const id = pick(agentIds);
      a.removeAgent(id);
      m.agents.delete(id);
      for (const f of m.frameworks.values()) f.filters = f.filters.filter((x) => x.agentId !== id);
    } else if (op < 0.2) {
      const id = pick(agentIds);
      const active = rand() < 0.6;
      a.setAgentActive(id, active);
      m.agents.get(id)!.active = active;
    } else if (op < 0.22) {
      const id = pick(frameworkIds);
      a.removeFramework(id);
      m.frameworks.delete(id);
      for (const agent of m.agents.values()) {
        const held = agent.held.get(id);
        if (held !== undefined) {
          agent.unowned = agent.unowned.add(held);
          agent.held.delete(id);
        }
      }
    } else if (op < 0.26) {
      const id = pick(frameworkIds);
      const active = rand() < 0.6;
      a.setFrameworkActive(id, active);
      m.frameworks.get(id)!.active = active;
    } else if (op < 0.29) {
      const id = pick(frameworkIds);
      a.suppress(id);
      m.frameworks.get(id)!.suppressed = true;
    } else if (op < 0.33) {
      const id = pick(frameworkIds);
      a.revive(id);
      m.frameworks.get(id)!.suppressed = false;
      m.frameworks.get(id)!.filters = [];
    } else if (op < 0.35) {
      const role = pick(roles);
      const weight = pick([0.5, 1, 2, 3]);
      a.setRoleWeight(role, weight);
      m.weights.set(role, weight);
    } else if (op < 0.6) {
      // Give back (part of) something held, sometimes with a filter.
      const holdings: [string, string, Resources][] = [];
      for (const [agentId, agent] of m.agents) {
        for (const [f, r] of agent.held) holdings.push([f, agentId, r]);
        if (!agent.unowned.isEmpty()) holdings.push(['', agentId, agent.unowned]);
      }
      if (holdings.length > 0) {
        const [f, agentId, r] = pick(holdings);
        const part = partOf(r, rand);
        const refuseMs = rand() < 0.5 ? 0 : Math.floor(rand() * 5000);
        const agent = m.agents.get(agentId)!;
        if (f === '') {
          const anyId = frameworkIds.length > 0 && rand() < 0.5 ? pick(frameworkIds) : 'gone';
          // A known framework's own holding is used first, so only use it if it holds none.
          const id = anyId !== 'gone' && agent.held.has(anyId) ? 'gone' : anyId;
          a.recoverResources(id, agentId, part, refuseMs, now);
          agent.unowned = agent.unowned.subtract(part);
          if (refuseMs > 0 && id !== 'gone') m.frameworks.get(id)!.filters.push({ agentId, refused: part, expiresAtMs: now + refuseMs });
        } else {
          a.recoverResources(f, agentId, part, refuseMs, now);
          const left = r.subtract(part);
          if (left.isEmpty()) agent.held.delete(f);
          else agent.held.set(f, left);
          if (refuseMs > 0) m.frameworks.get(f)!.filters.push({ agentId, refused: part, expiresAtMs: now + refuseMs });
        }
      }
    } else if (op < 0.7) {
      now += Math.floor(rand() * 2000);
    } else {
      checkOffers(a.allocate(now), step);
    }
    checkInvariants(step);
  }
}

describe('Allocator: randomized against a reference model', () => {
  for (const seed of [1, 2, 3, 42, 2024]) {
    it(`holds its invariants and picks the lowest-share eligible framework (seed ${seed})`, () => {
      runRandomized(seed, 1500);
    });
  }
});
