// The framework runtime (shared/framework-runtime/) driven by hand: a fake transport that
// records every call and is told when to answer, a fake clock, and an in-memory store.

import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { CairnError } from '../../shared/errors.ts';
import type { OfferJson, TaskStatusJson } from '../../shared/mesos-v1.ts';
import { FakeClock, FakeTransport, flush, memoryStore } from '../harness/fake-scheduler.ts';
import { RETRY_SUBSCRIBE_MS, Subscriptions, type SubscriptionHandlers } from '../../shared/framework-runtime/subscriptions.ts';
import { FAILOVER_TIMEOUT_S } from '../../shared/framework-runtime/failover.ts';
import { NO_INTEREST, nextInterest, OfferInterest, ON_CHANGE, type InterestPolicy } from '../../shared/framework-runtime/offer-interest.ts';
import { recordThenAct } from '../../shared/framework-runtime/record-then-act.ts';
import { DecisionQueue } from '../../shared/framework-runtime/decision-queue.ts';
import { RoundLoop } from '../../shared/framework-runtime/round-loop.ts';

const ONCE: InterestPolicy = ON_CHANGE;
const REPEAT: InterestPolicy = { reviveAgainMs: 5_000, suppressOnOffer: true };

function setup(opts: { reviveOnSubscribe?: boolean; wanted?: () => boolean; stored?: string; logger?: pino.Logger } = {}) {
  const log: string[] = [];
  const clock = new FakeClock();
  const store = memoryStore(log);
  if (opts.stored) store.m.set('framework-id', opts.stored);
  const transports: FakeTransport[] = [];
  const offers: OfferJson[][] = [];
  const updates: TaskStatusJson[] = [];
  const subscribed: string[] = [];
  const handlers: SubscriptionHandlers<string> = {
    frameworkInfo: (key) => ({ name: `fw-${key}`, user: '' }),
    idKey: () => 'framework-id',
    wanted: opts.wanted ?? (() => true),
    offers: (_k, o) => offers.push(o),
    update: (_k, s) => void updates.push(s),
    subscribed: (_k, id) => {
      log.push('subscribed-hook');
      subscribed.push(id);
    },
  };
  const subs = new Subscriptions<string>({
    name: 'test', store, log: opts.logger ?? pino({ level: 'silent' }), interest: ONCE,
    reviveOnSubscribe: opts.reviveOnSubscribe ?? true, handlers,
    io: {
      clock,
      transport: (info) => {
        const t = new FakeTransport(info, log);
        transports.push(t);
        return t;
      },
    },
  });
  return { log, clock, store, transports, offers, updates, subscribed, subs };
}

describe('framework runtime: the offer loop', () => {
  it('subscribes with the recorded framework id and the one failover timeout, records a new id, reconciles every task, then revives', async () => {
    const { subs, transports, log, store } = setup({ stored: 'fw-old' });
    subs.ensure('*');
    expect(transports).toHaveLength(1);
    expect(transports[0]!.info).toMatchObject({ name: 'fw-*', id: { value: 'fw-old' }, failover_timeout: FAILOVER_TIMEOUT_S });
    expect(FAILOVER_TIMEOUT_S).toBe(7 * 24 * 3600);
    // A second ensure keeps the one subscription.
    subs.ensure('*');
    expect(transports).toHaveLength(1);
    transports[0]!.accept('fw-new');
    await flush();
    expect(store.m.get('framework-id')).toBe('fw-new');
    expect(log).toEqual(['put framework-id', 'RECONCILE', 'subscribed-hook', 'REVIVE']);
    expect(transports[0]!.calls[0]).toMatchObject({ type: 'RECONCILE', framework_id: { value: 'fw-new' }, reconcile: { tasks: [] } });
  });

  it('does not revive on subscribing when the framework leaves interest to its rounds, and reconciles again after a resubscription', async () => {
    const { subs, transports, log } = setup({ reviveOnSubscribe: false });
    subs.ensure('*');
    transports[0]!.accept('fw-1');
    await flush();
    expect(log).toEqual(['put framework-id', 'RECONCILE', 'subscribed-hook']);
    // A leader change: the transport subscribes again with the same id.
    transports[0]!.emit('subscribed', 'fw-1', { resubscribed: true });
    await flush();
    expect(log).toEqual(['put framework-id', 'RECONCILE', 'subscribed-hook', 'RECONCILE', 'subscribed-hook']);
  });

  it('tries a subscription no master took again after RETRY_SUBSCRIBE_MS on its clock, with the id recorded meanwhile', async () => {
    const { subs, transports, clock, store } = setup();
    subs.ensure('*');
    transports[0]!.fail('connection refused');
    await flush();
    expect(transports[0]!.closed).toBe(true);
    expect(subs.has('*')).toBe(false);
    store.m.set('framework-id', 'fw-rec');
    clock.advance(RETRY_SUBSCRIBE_MS - 1);
    expect(transports).toHaveLength(1);
    clock.advance(1);
    expect(transports).toHaveLength(2);
    expect(transports[1]!.info.id).toEqual({ value: 'fw-rec' });
  });

  it('does not try again when the framework no longer wants the subscription, nor after stop', async () => {
    let wanted = false;
    const a = setup({ wanted: () => wanted });
    a.subs.ensure('*');
    a.transports[0]!.fail('refused');
    await flush();
    a.clock.advance(RETRY_SUBSCRIBE_MS * 3);
    expect(a.transports).toHaveLength(1);
    wanted = true;
    const b = setup();
    b.subs.ensure('*');
    b.transports[0]!.fail('refused');
    await flush();
    b.subs.stop();
    b.clock.advance(RETRY_SUBSCRIBE_MS * 3);
    expect(b.transports).toHaveLength(1);
  });

  it('holds kills until the subscription is up, and tells a launch without one that it did not happen', async () => {
    const { subs, transports } = setup();
    subs.ensure('*');
    subs.kill('*', 'task-1', 'agent-1');
    const failed: string[] = [];
    subs.launch('*', ['o1'], [], { refuse_seconds: 1 }, (m) => failed.push(m));
    await flush();
    expect(transports[0]!.calls).toEqual([]);
    expect(failed).toEqual(['not subscribed']);
    transports[0]!.accept('fw');
    await flush();
    expect(transports[0]!.calls.map((c) => c.type)).toEqual(['RECONCILE', 'KILL', 'REVIVE']);
    expect(transports[0]!.calls[1]).toMatchObject({ kill: { task_id: { value: 'task-1' }, agent_id: { value: 'agent-1' } } });
  });

  it('asks about launches not heard of with one RECONCILE per subscription that is up', async () => {
    const { subs, transports } = setup();
    subs.ensure('a');
    subs.ensure('b');
    transports[0]!.accept('fw-a');
    await flush();
    transports[0]!.calls.length = 0;
    subs.reconcileStarting([{ key: 'a', taskId: 't1', agentId: 's1' }, { key: 'b', taskId: 't2' }, { key: 'a', taskId: 't3' }]);
    await flush();
    expect(transports[0]!.calls).toEqual([{ type: 'RECONCILE', framework_id: { value: 'fw-a' }, reconcile: { tasks: [
      { task_id: { value: 't1' }, agent_id: { value: 's1' } }, { task_id: { value: 't3' } },
    ] } }]);
    expect(transports[1]!.calls).toEqual([]);
  });

  it('tells the framework of a launch the master refused', async () => {
    const { subs, transports } = setup();
    subs.ensure('*');
    transports[0]!.accept('fw');
    await flush();
    transports[0]!.refuse.add('ACCEPT');
    const failed: string[] = [];
    subs.launch('*', ['o1'], [], { refuse_seconds: 1 }, (m) => failed.push(m));
    await flush();
    expect(failed).toEqual(['ACCEPT refused']);
  });

  it('says a launch refused for a rescinded or unknown offer at info (a race every framework meets), any other refusal as a warning', async () => {
    const lines: { level: number; msg: string; err: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { subs, transports } = setup({ logger });
    subs.ensure('*');
    transports[0]!.accept('fw');
    await flush();
    const refusals = [
      new CairnError('CAIRN_OFFER_RESCINDED', 'offer o1 was rescinded', 'accept.offer_ids[0]'),
      new CairnError('CAIRN_UNKNOWN_OFFER', 'no offer o2', 'accept.offer_ids[0]'),
      new CairnError('CAIRN_BAD_REQUEST', 'a bad task', 'accept.operations[0]'),
    ];
    for (const err of refusals) {
      transports[0]!.call = () => Promise.reject(err);
      subs.launch('*', ['o'], [], { refuse_seconds: 1 }, () => {});
      await flush();
    }
    expect(lines.filter((l) => l.msg === 'launch refused').map((l) => [l.level, l.err])).toEqual([
      [30, 'accept.offer_ids[0]: offer o1 was rescinded'],
      [30, 'accept.offer_ids[0]: no offer o2'],
      [40, 'accept.operations[0]: a bad task'],
    ]);
  });

  it('passes offers and updates on, and an update handler\'s promise back to the transport (which holds the acknowledgement on it)', async () => {
    const { subs, transports, offers, updates } = setup();
    subs.ensure('*');
    transports[0]!.accept('fw');
    const offer = { id: { value: 'o1' } } as OfferJson;
    transports[0]!.emit('offers', [offer]);
    const status = { task_id: { value: 't' }, state: 'TASK_RUNNING' } as TaskStatusJson;
    transports[0]!.emit('update', status);
    expect(offers).toEqual([[offer]]);
    expect(updates).toEqual([status]);
  });

  it('tears a framework down: its id record goes at once, TEARDOWN after the delay, then the transport closes', async () => {
    const { subs, transports, clock, store } = setup();
    subs.ensure('*');
    transports[0]!.accept('fw');
    await flush();
    await subs.teardown('*', 1_000);
    expect(store.m.has('framework-id')).toBe(false);
    expect(transports[0]!.calls.map((c) => c.type)).not.toContain('TEARDOWN');
    clock.advance(1_000);
    await flush();
    expect(transports[0]!.calls.at(-1)).toEqual({ type: 'TEARDOWN', framework_id: { value: 'fw' } });
    expect(transports[0]!.closed).toBe(true);
  });
});

describe('framework runtime: the one offer-interest switch', () => {
  it('with revives only on a change: REVIVE when offers become wanted, SUPPRESS as soon as none are', () => {
    const r = nextInterest(NO_INTEREST, ONCE, true, 0, 0);
    expect(r.call).toBe('revive');
    expect(nextInterest(r.next, ONCE, true, 0, 10 ** 9).call).toBeUndefined();
    const s = nextInterest(r.next, ONCE, false, 0, 10);
    expect(s).toMatchObject({ call: 'suppress', next: { suppressed: true, wanted: false } });
    expect(nextInterest(s.next, ONCE, false, 0, 20).call).toBeUndefined();
    expect(nextInterest(s.next, ONCE, true, 0, 30).call).toBe('revive');
  });

  it('with repeated revives: REVIVE again while nothing comes for reviveAgainMs, SUPPRESS only on an unwanted offer', () => {
    const first = nextInterest(NO_INTEREST, REPEAT, true, 0, 1_000);
    expect(first.call).toBe('revive');
    expect(nextInterest(first.next, REPEAT, true, 0, 3_000).call).toBeUndefined();
    expect(nextInterest(first.next, REPEAT, true, 0, 6_000).call).toBe('revive');
    const offered = nextInterest(first.next, REPEAT, true, 2, 4_000).next;
    expect(nextInterest(offered, REPEAT, true, 0, 7_000).call).toBeUndefined();
    expect(nextInterest(offered, REPEAT, false, 0, 8_000).call).toBeUndefined();
    expect(nextInterest(offered, REPEAT, false, 1, 8_000)).toMatchObject({ call: 'suppress', next: { suppressed: true, wanted: false } });
  });

  it('sends a call that failed again at the next look', async () => {
    const interest = new OfferInterest<string>(ONCE);
    const sent: string[] = [];
    let fail = true;
    const sw = {
      revive: async () => {
        sent.push('revive');
        if (fail) throw new Error('lost');
      },
      suppress: async () => void sent.push('suppress'),
    };
    await interest.adjust('k', sw, true, 0);
    fail = false;
    await interest.adjust('k', sw, true, 1);
    await interest.adjust('k', sw, true, 2);
    expect(sent).toEqual(['revive', 'revive']);
  });

  it('a subscription that revived on its own asks nothing more while offers are wanted', async () => {
    const interest = new OfferInterest<string>(ONCE);
    const sent: string[] = [];
    const sw = { revive: async () => void sent.push('revive'), suppress: async () => void sent.push('suppress') };
    interest.subscribed('k', true, 0);
    await interest.adjust('k', sw, true, 1);
    await interest.adjust('k', sw, false, 2);
    expect(sent).toEqual(['suppress']);
  });
});

describe('framework runtime: write the record, then act', () => {
  it('acts only once the write is durable, and not at all when it fails', async () => {
    const order: string[] = [];
    let release!: () => void;
    const store = { write: () => new Promise<void>((r) => (release = () => { order.push('durable'); r(); })) };
    const done = recordThenAct(store, [{ key: 'job/a', value: 1 }], () => void order.push('ACCEPT'));
    await flush();
    expect(order).toEqual([]);
    release();
    await done;
    expect(order).toEqual(['durable', 'ACCEPT']);
    const acted: string[] = [];
    await expect(recordThenAct({ write: () => Promise.reject(new Error('no quorum')) }, [{ key: 'k', value: 1 }], () => void acted.push('ACCEPT'))).rejects.toThrow('no quorum');
    expect(acted).toEqual([]);
  });

  it('the decision queue carries out one decision before it looks at the next', async () => {
    const order: string[] = [];
    const gates: (() => void)[] = [];
    const q = new DecisionQueue(() => new Promise<void>((r) => gates.push(() => { order.push('carried out'); r(); })), () => {});
    void q.run(() => order.push('decide 1'));
    void q.run(() => order.push('decide 2'));
    await flush();
    expect(order).toEqual(['decide 1']);
    gates.shift()!();
    await flush();
    expect(order).toEqual(['decide 1', 'carried out', 'decide 2']);
    gates.shift()!();
    await q.settled();
  });

  it('a question to the queue is answered once its effects are carried out, and with the stopped answer after stop', async () => {
    const order: string[] = [];
    const q = new DecisionQueue(async () => void order.push('carried out'), () => {});
    const answer = await q.ask(() => {
      order.push('decided');
      return 'job-a';
    }, 'stopped');
    expect(answer).toBe('job-a');
    expect(order).toEqual(['decided', 'carried out']);
    q.stop();
    expect(await q.ask(() => 'job-b', 'stopped')).toBe('stopped');
  });

  it('rounds never overlap, and asks during a round make one round after it', async () => {
    let running = 0;
    let rounds = 0;
    const gates: (() => void)[] = [];
    const loop = new RoundLoop(async () => {
      running++;
      expect(running).toBe(1);
      rounds++;
      await new Promise<void>((r) => gates.push(r));
      running--;
    }, () => {});
    const done = loop.kick();
    void loop.kick();
    void loop.kick();
    await flush();
    gates.shift()!();
    await flush();
    gates.shift()!();
    await done;
    expect(rounds).toBe(2);
  });
});
