// The services framework's pure core: keeping `instances` running, backoff, constraints,
// rolling deployments within minimumHealthCapacity and maximumOverCapacity, deletes, kill
// selection, unreachable instances, the queue's reasons; then a seeded simulation that
// drives the core through failures and deployments and checks its invariants every step.

import { describe, expect, it } from 'vitest';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import type { StoredApp } from '../../master/frameworks/services/app-model.ts';
import { backoffDelayMs, decide, isReady, recordFailure, type CoreInput, type InstanceView, type OfferView } from '../../master/frameworks/services/core.ts';
import { Resources } from '../../shared/resources.ts';
import { SeededRandom, randomInt } from '../../shared/random.ts';

function stored(json: Record<string, unknown>, configVersion = 'v1', version = configVersion): StoredApp {
  return { app: parseApp({ cmd: 'x', cpus: 1, mem: 100, ...json }).app, version, configVersion };
}

function offer(id: string, hostname = id, res = 'cpus:4;mem:1000;disk:1000;ports:[31000-31010]', attributes: Record<string, string> = {}, role = '*'): OfferView {
  return { id, agentId: `agent-${hostname}`, hostname, attributes, resources: Resources.parse(res), role };
}

let seq = 0;
function inst(appId: string, over: Partial<InstanceView> = {}): InstanceView {
  seq++;
  return { taskId: `t${seq}`, appId, configVersion: 'v1', agentId: 'agent-h1', hostname: 'h1', attributes: {}, launchedAtMs: seq, state: 'running', killRequested: false, ...over };
}

function input(over: Partial<CoreInput>): CoreInput {
  return { nowMs: 1_000_000, role: '*', apps: [], deployments: [], instances: [], offers: [], backoff: new Map(), agents: [], pendingTimeoutMs: 30_000, ...over };
}

describe('services core: keeping instances running', () => {
  it('launches what is missing, packing offers first fit, with ports', () => {
    const a = stored({ id: '/a', instances: 5, portDefinitions: [{ port: 0 }, { port: 0, name: 'admin' }] });
    const out = decide(input({ apps: [a], offers: [offer('o1'), offer('o2')] }));
    expect(out.launches.map((l) => l.offerId)).toEqual(['o1', 'o1', 'o1', 'o1', 'o2']);
    expect(out.launches[0]!.ports).toEqual([31000, 31001]);
    expect(out.launches[1]!.ports).toEqual([31002, 31003]);
    expect(out.declines).toEqual([]);
    expect(out.queue.get('/a')).toMatchObject({ waiting: 5, launched: 5 });
  });

  it('takes the exact ports with requirePorts, and declines an offer without them', () => {
    const a = stored({ id: '/a', requirePorts: true, portDefinitions: [{ port: 31005 }] });
    expect(decide(input({ apps: [a], offers: [offer('o1')] })).launches[0]!.ports).toEqual([31005]);
    const out = decide(input({ apps: [a], offers: [offer('o1', 'h', 'cpus:4;mem:1000;ports:[32000-32001]')] }));
    expect(out.launches).toEqual([]);
    expect(out.declines).toEqual(['o1']);
    expect(out.queue.get('/a')!.declined).toEqual({ InsufficientPorts: 1 });
  });

  it('names the first missing resource for each declined offer', () => {
    const a = stored({ id: '/a', cpus: 2, mem: 500, gpus: 1 });
    const out = decide(input({
      apps: [a],
      offers: [offer('o1', 'h1', 'cpus:1;mem:1000;ports:[1-9]'), offer('o2', 'h2', 'cpus:4;mem:100;ports:[1-9]'), offer('o3', 'h3', 'cpus:4;mem:1000;ports:[1-9]'), offer('o4', 'h4', 'cpus:4;mem:1000;gpus:1'), offer('o5', 'h5', 'cpus:4;mem:1000;gpus:1', {}, 'other')],
    }));
    expect(out.queue.get('/a')!.declined).toEqual({ InsufficientCpus: 1, InsufficientMemory: 1, InsufficientGpus: 1, InsufficientPorts: 1, UnfulfilledRole: 1 });
    expect(out.declines).toHaveLength(5);
  });

  it('replaces an instance that ended without being asked, after the backoff', () => {
    const a = stored({ id: '/a', instances: 2, backoffSeconds: 10, backoffFactor: 2 });
    const gone = inst('/a', { state: 'terminal' });
    const out = decide(input({ apps: [a], instances: [inst('/a'), gone], offers: [offer('o1')] }));
    expect(out.forget).toEqual([gone.taskId]);
    expect(out.failed).toEqual([{ taskId: gone.taskId, appId: '/a' }]);
    expect(out.launches).toEqual([]); // delayed 10 s
    expect(out.queue.get('/a')!.delayUntilMs).toBe(1_000_000 + 10_000);
    // 10 s later the replacement goes.
    const later = decide(input({ nowMs: 1_010_001, apps: [a], instances: [inst('/a')], offers: [offer('o1')], backoff: out.backoff }));
    expect(later.launches).toHaveLength(1);
  });

  it('grows the backoff by its factor up to the maximum, and starts over after a quiet spell', () => {
    const s = stored({ id: '/a', backoffSeconds: 1, backoffFactor: 2, maxLaunchDelaySeconds: 5 });
    const a = s.app;
    let b = recordFailure(s, undefined, 0);
    expect(backoffDelayMs(a, b.failures)).toBe(1000);
    b = recordFailure(s, b, 1000);
    expect(backoffDelayMs(a, b.failures)).toBe(2000);
    b = recordFailure(s, recordFailure(s, b, 2000), 3000);
    expect(backoffDelayMs(a, b.failures)).toBe(5000);
    expect(recordFailure(s, b, 3000 + 5001).failures).toBe(1);
    // Marathon's defaults: 1 s × 1.15 per failure, at most 300 s.
    const d = stored({ id: '/d' }).app;
    expect([1, 2, 3, 10, 42].map((n) => backoffDelayMs(d, n))).toEqual([1000, 1150, 1323, Math.round(1000 * 1.15 ** 9), 300_000]);
  });

  it('keeps a delay per config version: a new config (or a restart) starts with none', () => {
    const v1 = stored({ id: '/a', instances: 1, backoffSeconds: 10 }, 'v1');
    const out = decide(input({ apps: [v1], instances: [inst('/a', { state: 'terminal', configVersion: 'v1' })], offers: [offer('o1')] }));
    expect(out.backoff.get('/a')).toMatchObject({ configVersion: 'v1', failures: 1 });
    expect(out.launches).toEqual([]);
    const v2 = stored({ id: '/a', instances: 1, backoffSeconds: 10 }, 'v2');
    const next = decide(input({ nowMs: 1_000_001, apps: [v2], offers: [offer('o1')], backoff: out.backoff }));
    expect(next.queue.get('/a')!.delayUntilMs).toBeUndefined();
    expect(next.launches).toHaveLength(1);
    // The old config's delay counts for nothing when the new one fails.
    const failed = decide(input({ nowMs: 1_000_002, apps: [v2], instances: [inst('/a', { state: 'terminal', configVersion: 'v2' })], backoff: out.backoff }));
    expect(failed.backoff.get('/a')).toMatchObject({ configVersion: 'v2', failures: 1 });
  });

  it('does not count a kill it asked for as a failure, and replaces the killed instance', () => {
    const a = stored({ id: '/a', instances: 1 });
    const killed = inst('/a', { state: 'terminal', killRequested: true });
    const out = decide(input({ apps: [a], instances: [killed], offers: [offer('o1')] }));
    expect(out.failed).toEqual([]);
    expect(out.launches).toHaveLength(1);
  });

  it('scales down killing the youngest (or oldest) first, not-ready ones before all', () => {
    const a = stored({ id: '/a', instances: 1 });
    const old = inst('/a', { launchedAtMs: 1 });
    const young = inst('/a', { launchedAtMs: 5 });
    const staging = inst('/a', { launchedAtMs: 2, state: 'staging' });
    expect(decide(input({ apps: [a], instances: [old, young, staging] })).kills.map((k) => k.taskId)).toEqual([staging.taskId, young.taskId]);
    const b = stored({ id: '/a', instances: 1, killSelection: 'OLDEST_FIRST' });
    expect(decide(input({ apps: [b], instances: [old, young] })).kills.map((k) => k.taskId)).toEqual([old.taskId]);
  });

  it('kills every instance of a deleted app and finishes its deployment once they are gone', () => {
    const i1 = inst('/gone');
    const pending = inst('/gone', { state: 'pending', launchedAtMs: 999_999 });
    const out = decide(input({ instances: [i1, pending], deployments: [{ id: 'd', appId: '/gone' }] }));
    expect(out.kills).toEqual([{ taskId: i1.taskId, reason: 'deleted' }]);
    expect(out.finishedDeployments).toEqual([]);
    const done = decide(input({ instances: [{ ...i1, state: 'terminal', killRequested: true }], deployments: [{ id: 'd', appId: '/gone' }] }));
    expect(done.finishedDeployments).toEqual(['d']);
  });

  it('forgets an instance that never reached the registry', () => {
    const a = stored({ id: '/a' });
    const p = inst('/a', { state: 'pending', launchedAtMs: 1_000_000 - 31_000 });
    const out = decide(input({ apps: [a], instances: [p], offers: [offer('o1')] }));
    expect(out.forget).toEqual([p.taskId]);
  });

  it('replaces an unreachable instance after inactiveAfterSeconds and expunges it later', () => {
    const a = stored({ id: '/a', unreachableStrategy: { inactiveAfterSeconds: 60, expungeAfterSeconds: 120 } });
    const u = (since: number) => inst('/a', { state: 'unreachable', unreachableSinceMs: since });
    expect(decide(input({ apps: [a], instances: [u(1_000_000 - 30_000)], offers: [offer('o1')] })).launches).toHaveLength(0);
    const inactive = decide(input({ apps: [a], instances: [u(1_000_000 - 61_000)], offers: [offer('o1')] }));
    expect(inactive.launches).toHaveLength(1);
    expect(inactive.kills).toEqual([]);
    const expunged = u(1_000_000 - 121_000);
    const out = decide(input({ apps: [a], instances: [expunged] }));
    expect(out.forget).toEqual([expunged.taskId]);
    expect(out.kills).toEqual([{ taskId: expunged.taskId, reason: 'expunged' }]);
  });

  it('counts an instance ready only once healthy when the app has health checks', () => {
    const a = stored({ id: '/a', healthChecks: [{ protocol: 'HTTP' }] }).app;
    expect(isReady(a, inst('/a'))).toBe(false);
    expect(isReady(a, inst('/a', { healthy: false }))).toBe(false);
    expect(isReady(a, inst('/a', { healthy: true }))).toBe(true);
    expect(isReady(stored({ id: '/b' }).app, inst('/b'))).toBe(true);
  });
});

describe('services core: constraints', () => {
  const run = (constraints: unknown[], offers: OfferView[], instances: InstanceView[] = [], n = 4) =>
    decide(input({ apps: [stored({ id: '/c', instances: n, cpus: 0.1, mem: 10, constraints })], offers, instances, agents: offers.map((o) => ({ hostname: o.hostname, attributes: o.attributes })) }));

  it('UNIQUE: one per host', () => {
    const out = run([['hostname', 'UNIQUE']], [offer('a'), offer('b'), offer('c', 'a')], [], 3);
    expect(out.launches.map((l) => l.hostname)).toEqual(['a', 'b']);
    // The second offer from host a is declined for the constraint; the queue says so.
    expect(out.declines).toEqual(['c']);
    expect(out.queue.get('/c')).toMatchObject({ waiting: 3, launched: 2, declined: { UnfulfilledConstraint: 1 } });
  });

  it('CLUSTER and IS: only the named value; CLUSTER without one sticks to the first', () => {
    const offers = [offer('a', 'a', undefined, { rack: 'r1' }), offer('b', 'b', undefined, { rack: 'r2' })];
    expect(new Set(run([['rack', 'CLUSTER', 'r2']], offers).launches.map((l) => l.hostname))).toEqual(new Set(['b']));
    expect(new Set(run([['rack', 'IS', 'r1']], offers).launches.map((l) => l.hostname))).toEqual(new Set(['a']));
    expect(new Set(run([['rack', 'CLUSTER']], offers, [inst('/c', { attributes: { rack: 'r2' }, hostname: 'x' })]).launches.map((l) => l.hostname))).toEqual(new Set(['b']));
  });

  it('LIKE and UNLIKE match the whole value; an agent without the attribute only passes UNLIKE', () => {
    const offers = [offer('web1'), offer('db1'), offer('x', 'x', undefined, { zone: 'z' })];
    expect(new Set(run([['hostname', 'LIKE', 'web[0-9]']], offers).launches.map((l) => l.hostname))).toEqual(new Set(['web1']));
    expect(new Set(run([['hostname', 'UNLIKE', 'web.*'], ['hostname', 'UNIQUE']], offers).launches.map((l) => l.hostname))).toEqual(new Set(['db1', 'x']));
    expect(new Set(run([['zone', 'UNLIKE', 'q'], ['hostname', 'UNIQUE']], offers).launches.map((l) => l.hostname))).toEqual(new Set(['web1', 'db1', 'x']));
    expect(new Set(run([['zone', 'LIKE', 'z']], offers).launches.map((l) => l.hostname))).toEqual(new Set(['x']));
  });

  it('MAX_PER caps each value; GROUP_BY spreads evenly', () => {
    const offers = [offer('a', 'a', undefined, { rack: 'r1' }), offer('b', 'b', undefined, { rack: 'r2' })];
    const max = run([['rack', 'MAX_PER', '1']], offers, [], 4);
    expect(max.launches).toHaveLength(2);
    const group = run([['rack', 'GROUP_BY']], offers, [inst('/c', { attributes: { rack: 'r1' } })], 4);
    const byRack = group.launches.reduce<Record<string, number>>((m, l) => ({ ...m, [l.attributes.rack!]: (m[l.attributes.rack!] ?? 0) + 1 }), {});
    // r1 already has one: its offer (first in order) is refused until r2 catches up, then r2 takes two.
    expect(byRack).toEqual({ r2: 2 });
    expect(group.queue.get('/c')!.declined).toEqual({ UnfulfilledConstraint: 1 });
  });
});

describe('services core: rolling deployments', () => {
  const app = (n: number, minHC: number, maxOC: number, v = 'v2') => stored({ id: '/r', instances: n, upgradeStrategy: { minimumHealthCapacity: minHC, maximumOverCapacity: maxOC }, healthChecks: [{ protocol: 'TCP' }] }, v);
  const dep = [{ id: 'd', appId: '/r' }];
  const olds = (n: number) => Array.from({ length: n }, () => inst('/r', { configVersion: 'v1', healthy: true }));

  it('with minimumHealthCapacity 0.5 stops half the old ones at once and starts as many new', () => {
    const out = decide(input({ apps: [app(4, 0.5, 0)], deployments: dep, instances: olds(4), offers: [offer('o1', 'h', 'cpus:16;mem:10000;ports:[1-100]')] }));
    expect(out.kills.filter((k) => k.reason === 'upgrade')).toHaveLength(2);
    expect(out.launches).toHaveLength(0); // no room until the killed ones are gone (maximumOverCapacity 0)
  });

  it('with maximumOverCapacity 1 starts all new ones beside the old, then stops old ones only as new ones get healthy', () => {
    const old = olds(2);
    const first = decide(input({ apps: [app(2, 1, 1)], deployments: dep, instances: old, offers: [offer('o1')] }));
    expect(first.kills).toEqual([]);
    expect(first.launches).toHaveLength(2);
    const fresh = [inst('/r', { configVersion: 'v2' }), inst('/r', { configVersion: 'v2', healthy: true })];
    const second = decide(input({ apps: [app(2, 1, 1)], deployments: dep, instances: [...old, ...fresh] }));
    expect(second.kills).toHaveLength(1);
    expect(second.finishedDeployments).toEqual([]);
    const done = decide(input({ apps: [app(2, 1, 1)], deployments: dep, instances: fresh.map((f) => ({ ...f, healthy: true })) }));
    expect(done.finishedDeployments).toEqual(['d']);
  });

  it('leaves old instances alone outside a deployment', () => {
    const out = decide(input({ apps: [app(2, 1, 1)], instances: olds(2), offers: [offer('o1')] }));
    expect(out.kills).toEqual([]);
    expect(out.launches).toEqual([]);
  });

  it('lets one more start when neither an old one may stop nor a new one fit', () => {
    const a = stored({ id: '/r', instances: 2, upgradeStrategy: { minimumHealthCapacity: 1, maximumOverCapacity: 0.2 } }, 'v2');
    const out = decide(input({ apps: [a], deployments: dep, instances: [inst('/r', { configVersion: 'v1' }), inst('/r', { configVersion: 'v1' })], offers: [offer('o1')] }));
    expect(out.launches).toHaveLength(1);
  });
});

describe('services core: seeded simulation', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`keeps its invariants and converges (seed ${seed}, reproduce with this seed)`, () => simulate(seed));
  }
});

/**
 * One app on four hosts through random failures, health flips and deployments (scale,
 * restart). Each step: the core decides, the simulated cluster applies it (launches start
 * staging, kills end tasks a step later), then faults strike. Checked every step: kills
 * never take the ready count below the floor, a deployment never has more alive than the
 * cap (plus Marathon's one to get moving), UNIQUE holds. After faults stop: N ready, no
 * deployment left, within a bound.
 */
function simulate(seed: number): void {
  const r = new SeededRandom(seed);
  const chance = (p: number) => randomInt(r, 1000) < p * 1000;
  const hosts = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
  const unique = chance(0.5);
  let n = 1 + randomInt(r, 4);
  const minHC = [0, 0.5, 0.75, 1][randomInt(r, 4)]!;
  const maxOC = minHC === 1 ? [0.5, 1][randomInt(r, 2)]! : [0, 0.5, 1][randomInt(r, 3)]!;
  let version = 1;
  const mk = () => stored({ id: '/s', instances: n, cpus: 1, mem: 10, backoffSeconds: 0, healthChecks: [{ protocol: 'TCP' }], upgradeStrategy: { minimumHealthCapacity: minHC, maximumOverCapacity: maxOC }, ...(unique ? { constraints: [['hostname', 'UNIQUE']] } : {}) }, `v${version}`);
  let app = mk();
  let deployments = [{ id: 'd1', appId: '/s' }];
  let instances: InstanceView[] = [];
  let backoff = new Map();
  let now = 0;
  let next = 0;
  const steps = 400;
  let finishedCount = 0;
  for (let step = 0; step < steps; step++) {
    now += 1000;
    const faults = step < steps - 100;
    const offers = hosts.map((h) => offer(`${step}-${h}`, h, 'cpus:2;mem:100;ports:[1000-1010]'));
    const out = decide(input({ nowMs: now, apps: [app], deployments, instances, offers, backoff, agents: offers }));
    backoff = out.backoff;
    const N = app.app.instances;
    const minReady = Math.ceil(N * minHC - 1e-9);
    const readyBefore = instances.filter((i) => isReady(app.app, i) && !i.killRequested && i.state !== 'terminal').length;
    const killed = new Set(out.kills.map((k) => k.taskId));
    const readyAfter = instances.filter((i) => isReady(app.app, i) && !i.killRequested && i.state !== 'terminal' && !killed.has(i.taskId)).length;
    expect(readyAfter, `seed ${seed} step ${step}: kills took ready below the floor`).toBeGreaterThanOrEqual(Math.min(minReady, readyBefore));
    // Apply: forget, kills, launches.
    instances = instances.filter((i) => !out.forget.includes(i.taskId)).map((i) => (killed.has(i.taskId) ? { ...i, killRequested: true } : i));
    for (const l of out.launches) instances.push({ taskId: `s${next++}`, appId: l.appId, configVersion: l.configVersion, agentId: l.agentId, hostname: l.hostname, attributes: {}, launchedAtMs: now, state: 'pending', killRequested: false });
    finishedCount += out.finishedDeployments.length;
    deployments = deployments.filter((d) => !out.finishedDeployments.includes(d.id));
    const alive = instances.filter((i) => i.state !== 'terminal');
    const hasOld = alive.some((i) => i.configVersion !== app.configVersion);
    if (deployments.length > 0 && hasOld) {
      expect(alive.length, `seed ${seed} step ${step}: over capacity`).toBeLessThanOrEqual(Math.max(Math.floor(N * (1 + maxOC) + 1e-9) + 1, N));
    }
    if (unique) {
      const hostsUsed = alive.filter((i) => !i.killRequested).map((i) => i.hostname);
      expect(new Set(hostsUsed).size, `seed ${seed} step ${step}: UNIQUE broken`).toBe(hostsUsed.length);
    }
    // The cluster moves: pending → staging → running; kills land; health is found.
    instances = instances.map((i) => {
      if (i.state === 'terminal') return i;
      if (i.killRequested) return { ...i, state: 'terminal' };
      if (i.state === 'pending') return { ...i, state: 'staging' };
      if (i.state === 'staging' && chance(0.7)) return { ...i, state: 'running' };
      if (i.state === 'running' && i.healthy === undefined && chance(0.6)) return { ...i, healthy: faults ? chance(0.85) : true };
      if (i.state === 'running' && i.healthy === false && (!faults || chance(0.5))) return { ...i, healthy: true };
      return i;
    });
    if (faults) {
      if (chance(0.05) && instances.length > 0) {
        const victim = instances[randomInt(r, instances.length)]!;
        instances = instances.map((i) => (i === victim ? { ...i, state: 'terminal' } : i));
      }
      if (chance(0.04) && deployments.length === 0) {
        if (chance(0.5)) n = 1 + randomInt(r, unique ? 5 : 6);
        else version++;
        const before = app;
        app = mk();
        if (app.app.instances === before.app.instances) app = { ...app, configVersion: `v${version}` };
        else app = { ...app, configVersion: before.configVersion === `v${version}` ? app.configVersion : before.configVersion };
        deployments = [{ id: `d${step}`, appId: '/s' }];
      }
    }
  }
  const ready = instances.filter((i) => i.state !== 'terminal' && !i.killRequested && isReady(app.app, i));
  expect(ready.length, `seed ${seed}: did not converge`).toBe(app.app.instances);
  expect(deployments, `seed ${seed}: a deployment never finished`).toEqual([]);
  // The run exercised deployments (the first, and some started under faults), not only a steady state.
  expect(finishedCount, `seed ${seed}: deployments finished`).toBeGreaterThanOrEqual(3);
  expect(next, `seed ${seed}: launches`).toBeGreaterThan(app.app.instances + 2);
  expect(instances.filter((i) => i.state !== 'terminal' && i.configVersion !== app.configVersion)).toEqual([]);
}
