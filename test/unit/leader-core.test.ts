// The leader's core driven by hand: inputs in, effects out, the registry committed when the
// test says so. Each test reads as a transcript of one exchange, and the last ones pin bugs
// the whole-cluster simulator found.

import { describe, expect, it } from 'vitest';
import type { MasterToAgent, Register } from '../../shared/agent-messages.ts';
import { CairnError } from '../../shared/errors.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import { SeededRandom } from '../../shared/random.ts';
import { Resources } from '../../shared/resources.ts';
import { DEFAULT_LEADER_CONFIG } from '../../master/leader/config.ts';
import { LeaderCore } from '../../master/leader/leader-core.ts';
import type { LeaderEffect, LeaderInput } from '../../master/leader/messages.ts';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { RegistryStateMachine } from '../../master/registry/state-machine.ts';

class Harness {
  readonly state = new RegistryStateMachine();
  readonly core: LeaderCore;
  nowMs = 1_000;
  /** Proposals not yet committed, in order. */
  readonly pending: { proposal: number; command: RegistryCommand }[] = [];
  /** Every effect but proposals and logs, in order. */
  readonly out: LeaderEffect[] = [];

  constructor() {
    this.core = new LeaderCore({ config: DEFAULT_LEADER_CONFIG, registry: () => this.state, random: new SeededRandom(7), nowMs: this.nowMs });
  }

  step(input: LeaderInput): LeaderEffect[] {
    const effects = this.core.step(this.nowMs, input);
    for (const e of effects) {
      if (e.type === 'propose') this.pending.push({ proposal: e.proposal, command: e.command });
      else if (e.type !== 'log') this.out.push(e);
    }
    return effects;
  }

  /** Commits the oldest `n` proposals (all by default), in order, as the log would. */
  commit(n = this.pending.length): void {
    for (const p of this.pending.splice(0, n)) {
      const events = this.state.apply(p.command);
      this.step({ type: 'committed', proposal: p.proposal, events });
    }
  }

  /** Commits until nothing is pending (answers may propose more). */
  settle(): void {
    for (let i = 0; i < 20 && this.pending.length > 0; i++) this.commit();
  }

  allocate(): SchedulerEvent[] {
    this.out.length = 0;
    this.step({ type: 'allocate' });
    return this.framework();
  }

  toAgent(conn: number): MasterToAgent[] {
    return this.out.flatMap((e) => (e.type === 'to_agent' && e.conn === conn ? [e.msg] : []));
  }

  framework(): SchedulerEvent[] {
    return this.out.flatMap((e) => (e.type === 'to_framework' ? [e.event] : []));
  }

  /** Connects and registers an agent; returns its id once committed. */
  agent(conn: number, reg: Partial<Register> = {}, principal = ''): string {
    this.step({ type: 'agent_connected', conn, remoteAddress: '10.0.0.9', principal });
    this.step({ type: 'agent_frame', conn, frame: { register: registration(reg) } });
    this.settle();
    const registered = this.toAgent(conn).find((m) => 'registered' in m);
    if (!registered || !('registered' in registered)) throw new Error('agent not registered');
    return registered.registered.agentId;
  }

  subscribe(stream = 's1'): string {
    this.step({ type: 'subscribe', request: 1, stream, spec: { name: 'fw', user: 'u', role: '*', principal: '', failoverTimeoutS: 3_600, capabilities: [] } });
    this.settle();
    const reply = this.out.find((e) => e.type === 'reply');
    if (!reply || reply.type !== 'reply' || reply.result.type !== 'subscribed') throw new Error('not subscribed');
    return reply.result.frameworkId;
  }
}

function registration(reg: Partial<Register>): Register {
  return { agentId: '', hostname: 'h1', ip: '10.0.0.9', httpPort: 5051, resources: 'cpus:2;mem:2048', attributes: [], tasks: [], version: 't', isolation: '', ...reg };
}

function offersIn(events: SchedulerEvent[]) {
  return events.flatMap((e) => (e.type === 'OFFERS' ? e.offers.offers : []));
}

function launchCall(frameworkId: string, offerId: string, agentId: string, taskId: string, resources = 'cpus:0.5;mem:128') {
  return {
    type: 'scheduler_call' as const,
    streamId: 's1',
    call: {
      type: 'ACCEPT' as const,
      frameworkId,
      offerIds: [offerId],
      refuseMs: undefined,
      tasks: [{ taskId, name: taskId, agentId, resources: Resources.parse(resources), command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 1_000 }],
    },
  };
}

describe('leader core', () => {
  it('answers an agent only once its registration is durable', () => {
    const h = new Harness();
    h.step({ type: 'agent_connected', conn: 1, remoteAddress: '10.0.0.9', principal: '' });
    const effects = h.step({ type: 'agent_frame', conn: 1, frame: { register: registration({}) } });
    expect(effects.map((e) => e.type)).toEqual(['propose']);
    expect(h.toAgent(1)).toEqual([]);
    h.commit();
    expect(h.toAgent(1).map((m) => Object.keys(m)[0])).toEqual(['registered']);
    expect(h.out.some((e) => e.type === 'allocate_soon')).toBe(true);
  });

  it('lets an agent speak only for itself: a known id under another principal is refused, the agent it names keeps its connection', () => {
    const h = new Harness();
    const agentId = h.agent(1, {}, 'agent-1');
    expect(h.state.agents.get(agentId)?.principal).toBe('agent-1');
    h.out.length = 0;
    h.step({ type: 'agent_connected', conn: 2, remoteAddress: '10.0.0.66', principal: 'agent-2' });
    h.step({ type: 'agent_frame', conn: 2, frame: { register: registration({ agentId, resources: 'cpus:64;mem:1048576' }) } });
    expect(h.pending).toEqual([]);
    expect(h.toAgent(2)).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'CAIRN_FORBIDDEN' }) })]);
    expect(h.out.some((e) => e.type === 'close_agent' && e.conn === 2)).toBe(true);
    expect(h.out.some((e) => e.type === 'close_agent' && e.conn === 1)).toBe(false);
    expect(h.state.agents.get(agentId)?.resources).toBe('cpus:2;mem:2048');
    // Nor may a new agent of another principal at its address succeed it once it is gone.
    h.step({ type: 'agent_disconnected', conn: 1 });
    h.out.length = 0;
    h.step({ type: 'agent_connected', conn: 3, remoteAddress: '10.0.0.9', principal: 'agent-2' });
    h.step({ type: 'agent_frame', conn: 3, frame: { register: registration({}) } });
    h.settle();
    expect(h.state.agents.has(agentId)).toBe(true);
    // Its own principal re-registers it.
    h.out.length = 0;
    h.step({ type: 'agent_connected', conn: 4, remoteAddress: '10.0.0.9', principal: 'agent-1' });
    h.step({ type: 'agent_frame', conn: 4, frame: { register: registration({ agentId }) } });
    h.settle();
    expect(h.toAgent(4).map((m) => Object.keys(m)[0])).toContain('registered');
  });

  it('refuses a first frame that is not a registration, closing the connection and writing nothing', () => {
    const h = new Harness();
    h.step({ type: 'agent_connected', conn: 1, remoteAddress: '10.0.0.9', principal: '' });
    const effects = h.step({ type: 'agent_frame', conn: 1, frame: { pong: { sentMs: 1 } } });
    expect(effects.filter((e) => e.type !== 'log').map((e) => e.type)).toEqual(['to_agent', 'close_agent']);
    expect(h.pending).toEqual([]);
  });

  it('acknowledges a status update to the agent only after it is committed, then forwards it', () => {
    const h = new Harness();
    const agentId = h.agent(1);
    const fw = h.subscribe();
    const offer = offersIn(h.allocate())[0];
    h.step(launchCall(fw, offer.id.value, agentId, 't1'));
    h.settle();
    h.out.length = 0;
    const uuid = new Uint8Array(16).fill(3);
    h.step({ type: 'agent_frame', conn: 1, frame: { statusUpdate: { uuid, taskId: 't1', frameworkId: fw, state: 'TASK_RUNNING', message: '', hasExitCode: false, exitCode: 0, timestampMs: 0, reason: '' } } });
    expect(h.toAgent(1)).toEqual([]);
    expect(h.framework()).toEqual([]);
    h.commit();
    expect(h.toAgent(1).map((m) => Object.keys(m)[0])).toEqual(['ack']);
    expect(h.framework().map((e) => e.type)).toEqual(['UPDATE']);
  });

  it('changes nothing on a bad ACCEPT: it throws, and the offer stays outstanding', () => {
    const h = new Harness();
    const agentId = h.agent(1);
    const fw = h.subscribe();
    const offer = offersIn(h.allocate())[0];
    h.out.length = 0;
    expect(() => h.step(launchCall(fw, offer.id.value, agentId, 't1', 'cpus:64;mem:1'))).toThrow(CairnError);
    expect(h.pending).toEqual([]);
    expect(h.out).toEqual([]);
    expect(h.core.offers.get(offer.id.value)).toBeDefined();
  });

  it('keeps what a launch in flight holds when its agent re-registers before the launch is durable', () => {
    const h = new Harness();
    const agentId = h.agent(1);
    const fw = h.subscribe();
    const offer = offersIn(h.allocate())[0];
    h.step(launchCall(fw, offer.id.value, agentId, 't1'));
    expect(h.pending.map((p) => p.command.type)).toEqual(['task_launched']);
    // The agent comes back on a new connection; its registration commits first.
    h.step({ type: 'agent_connected', conn: 2, remoteAddress: '10.0.0.9', principal: '' });
    h.step({ type: 'agent_frame', conn: 2, frame: { register: registration({ agentId }) } });
    const launch = h.pending.shift()!;
    h.commit();
    // The agent is rebuilt in the allocator: the 0.5 cpus of t1 must not be offered again.
    const again = offersIn(h.allocate());
    expect(again.map((o) => Resources.fromMesos(o.resources).cpus)).toEqual([1.5]);
    h.step({ type: 'committed', proposal: launch.proposal, events: h.state.apply(launch.command) });
    expect(h.toAgent(2).some((m) => 'launch' in m)).toBe(true);
  });

  it('reconciles a task whose launch is not yet durable as staging however long it takes, not lost, and as unknown once its write fails', () => {
    // Jobs were seen failing under a slow disk when this answered TASK_LOST. A write pending
    // at a leader settles: it commits, or it fails when the disk refuses it or this master stops
    // leading (the next leader then answers from the registry). Told TASK_LOST meanwhile, a
    // framework launches the task again under a new id while the first launch commits and
    // starts too: it runs twice (relaunched under the same id, it is refused as a duplicate).
    const h = new Harness();
    const agentId = h.agent(1);
    const fw = h.subscribe();
    const offer = offersIn(h.allocate())[0];
    h.step(launchCall(fw, offer.id.value, agentId, 't1'));
    expect(h.pending.map((p) => p.command.type)).toEqual(['task_launched']);
    const reconcile = (taskIds: string[]) => {
      h.out.length = 0;
      h.step({ type: 'scheduler_call', streamId: 's1', call: { type: 'RECONCILE', frameworkId: fw, taskIds } });
      return h.framework().flatMap((e) => (e.type === 'UPDATE' ? [[e.update.status.task_id.value, e.update.status.state]] : []));
    };
    expect(reconcile(['t1', 'nobody'])).toEqual([['t1', 'TASK_STAGING'], ['nobody', 'TASK_LOST']]);
    // Implicit reconciliation names it too, and a quorum slow for two minutes changes nothing.
    expect(reconcile([])).toEqual([['t1', 'TASK_STAGING']]);
    h.nowMs += 120_000;
    expect(reconcile(['t1'])).toEqual([['t1', 'TASK_STAGING']]);
    // Once durable, it is the registry's state that answers, and the launch goes to the agent.
    h.out.length = 0;
    h.commit();
    expect(h.toAgent(1).some((m) => 'launch' in m && m.launch.tasks.some((t) => t.taskId === 't1'))).toBe(true);
    expect(reconcile(['t1'])).toEqual([['t1', 'TASK_STAGING']]);
    expect(h.state.tasks.get('t1')?.state).toBe('TASK_STAGING');
    // A launch whose write fails was never recorded: unknown, so that the framework launches it again.
    h.step(launchCall(fw, offersIn(h.allocate())[0].id.value, agentId, 't2'));
    const write = h.pending.shift()!;
    h.step({ type: 'proposal_failed', proposal: write.proposal, message: 'this master lost leadership before the change committed' });
    expect(reconcile(['t2'])).toEqual([['t2', 'TASK_LOST']]);
  });

  it('removes an old agent, its tasks GONE, when a new agent registers at its address', () => {
    const h = new Harness();
    const oldId = h.agent(1);
    const fw = h.subscribe();
    const offer = offersIn(h.allocate())[0];
    h.step(launchCall(fw, offer.id.value, oldId, 't1'));
    h.settle();
    h.step({ type: 'agent_disconnected', conn: 1 });
    h.out.length = 0;
    const newId = h.agent(2);
    expect(newId).not.toBe(oldId);
    expect(h.state.agents.has(oldId)).toBe(false);
    expect(h.state.tasks.get('t1')!.state).toBe('TASK_GONE');
    expect(h.framework().some((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 't1' && e.update.status.state === 'TASK_GONE')).toBe(true);
  });

  it('leaves a connected agent at the same address alone (two agents cannot share an address)', () => {
    const h = new Harness();
    const first = h.agent(1);
    h.agent(2);
    expect(h.state.agents.has(first)).toBe(true);
  });

  it('sleeps until its next deadline and keeps it when time passes', () => {
    const h = new Harness();
    h.agent(1);
    const wake = h.core.nextWakeMs();
    expect(wake).toBe(1_000 + DEFAULT_LEADER_CONFIG.allocationIntervalMs);
    h.nowMs = wake;
    h.out.length = 0;
    h.step({ type: 'tick' });
    expect(h.core.nextWakeMs()).toBeGreaterThan(wake);
  });

  it('pings every interval and writes an agent off after the missed pings', () => {
    const h = new Harness();
    const agentId = h.agent(1);
    for (let i = 0; i <= DEFAULT_LEADER_CONFIG.maxMissedPings; i++) {
      h.nowMs += DEFAULT_LEADER_CONFIG.pingIntervalMs;
      h.step({ type: 'tick' });
    }
    expect(h.pending.map((p) => p.command.type)).toContain('agent_unreachable');
    h.settle();
    expect(h.state.agents.get(agentId)!.reachable).toBe(false);
    expect(h.out.some((e) => e.type === 'close_agent' && e.conn === 1)).toBe(true);
  });

  it('re-sends an earlier leader\'s unacknowledged update though that leader\'s clock ran two hours ahead (cluster seed 104)', () => {
    // The first leader's wall clock had been stepped +2 h when it began to lead.
    const h = new Harness();
    h.nowMs += 2 * 3_600_000;
    const agentId = h.agent(1);
    const fw = h.subscribe();
    const offer = offersIn(h.allocate())[0];
    h.step(launchCall(fw, offer.id.value, agentId, 't1'));
    h.settle();
    h.step({ type: 'agent_frame', conn: 1, frame: { statusUpdate: { uuid: new Uint8Array(16).fill(4), taskId: 't1', frameworkId: fw, state: 'TASK_RUNNING', message: '', hasExitCode: false, exitCode: 0, timestampMs: 0, reason: '' } } });
    h.commit();
    expect(h.state.tasks.get('t1')!.unacked?.state).toBe('TASK_RUNNING');
    // The next leader's clock reads true time: the update's recorded time lies two hours ahead.
    let now = 1_000;
    const next = new LeaderCore({ config: DEFAULT_LEADER_CONFIG, registry: () => h.state, random: new SeededRandom(8), nowMs: now });
    for (const e of next.step(now, { type: 'subscribe', request: 2, stream: 's2', spec: { id: fw, name: 'fw', user: 'u', role: '*', principal: '', failoverTimeoutS: 3_600, capabilities: [] } })) {
      if (e.type === 'propose') next.step(now, { type: 'committed', proposal: e.proposal, events: h.state.apply(e.command) });
    }
    // Unacknowledged still (the framework missed it again): re-sent a retry period later, not two hours later.
    now += DEFAULT_LEADER_CONFIG.updateRetryMs + 1;
    const resent = next.step(now, { type: 'tick' }).filter((e) => e.type === 'to_framework' && e.event.type === 'UPDATE');
    expect(resent.length).toBe(1);
  });
});
