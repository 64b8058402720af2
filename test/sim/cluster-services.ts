// The services framework in the whole-cluster simulation: the production round (round-plan.ts:
// what the framework observes, the core's decisions, the instance records they change) behind
// a simulated scheduler-API client, with the records in a store that survives the framework's
// crashes as the replicated store survives a leader's. As service.ts does, a round writes its
// records and only once that write is durable launches and kills; a write still in flight
// when the framework crashes is lost. The framework reads the registry of the master it is
// subscribed to (the leader: the real one runs inside it), and it starts afresh from the
// store whenever its stream breaks (a leader change starts a new instance on the new leader).
//
// It checks, at each of its own decisions, that the launches keep an app's live tasks within
// Marathon's bounds and that a deployment's kills keep enough instances ready; the simulator
// checks at every step that no task of it runs twice.

import { isTerminal } from '../../shared/agent-messages.ts';
import type { OfferJson, SchedulerEvent } from '../../shared/mesos-v1.ts';
import { randomBytesOf, type SeededRandom } from '../../shared/random.ts';
import type { FrameworkSpec } from '../../master/api/scheduler-calls.ts';
import { parseSchedulerCall } from '../../master/api/scheduler-calls.ts';
import type { SchedulerCall } from '../../master/leader/messages.ts';
import type { BuiltinStore } from '../../master/builtin/store.ts';
import type { BuiltinPut, JsonValue } from '../../master/registry/commands.ts';
import { storedDelays } from '../../master/frameworks/marathon/launch-delays.ts';
import { planRound, type RoundPlan } from '../../master/frameworks/marathon/round-plan.ts';
import { SERVICES_INTEREST } from '../../master/frameworks/marathon/offer-policy.ts';
import { NO_INTEREST, nextInterest, type InterestState } from '../../shared/framework-runtime/offer-interest.ts';
import { FRAMEWORK_ID_KEY, MarathonRecords, type DeploymentRecord, type InstanceRecord } from '../../master/frameworks/marathon/records.ts';
import { APP_LABEL, appIdOfTaskId } from '../../master/frameworks/marathon/task-info.ts';
import type { AppDefinition, StoredApp } from '../../master/frameworks/marathon/app-model.ts';
import type { FrameworkWorld } from './cluster-framework.ts';
import { NOT_LEADER_CLOSE, type SimMaster, type StreamConn } from './cluster-master.ts';

/** As service.ts. */
const TICK_MS = 1_000;
const ADOPT_EVERY_MS = 5_000;
const UPDATE_BATCH_MS = 20;
const PENDING_TIMEOUT_MS = 30_000;
const KILL_RETRY_MS = 5_000;
const REFUSE_WHILE_WAITING_MS = 1_000;
const REFUSE_IDLE_MS = 30_000;
export const SERVICES_NAME = 'marathon';

/** Bugs the services simulation can plant, to show that its invariants catch them. */
export type ServicesBug =
  /** Forgets an instance as soon as its kill is asked for, before its task is known dead. */
  'forget-before-dead';

/** Marathon's ceiling on an app's live instances during a deployment (TaskReplaceActor). */
export function maxCapacity(app: AppDefinition): number {
  const n = app.instances;
  const max = Math.floor(n * (1 + app.upgradeStrategy.maximumOverCapacity) + 1e-9);
  const minHealthy = Math.ceil(n * app.upgradeStrategy.minimumHealthCapacity - 1e-9);
  // Neither an old instance could stop nor a new one start: one more may start.
  return max === minHealthy && n > 0 ? max + 1 : max;
}

interface Seen {
  live: Map<string, string[]>;
  /** Tasks asked to be killed that still run, with their config version (a deployment's ceiling counts the old ones). */
  dying: Map<string, { id: string; configVersion: string }[]>;
  ready: Set<string>;
}

export class SimServices {
  readonly name = SERVICES_NAME;
  frameworkId: string | undefined;
  stream: StreamConn | undefined;
  subscribed = false;
  /** The replicated store: survives crashes; a write lands after a commit delay. */
  readonly durable = new Map<string, JsonValue>();
  readonly records: MarathonRecords;
  readonly violations: string[] = [];
  readonly stats = { subscriptions: 0, launches: 0, kills: 0, crashes: 0, rounds: 0, changes: 0 };
  private generation = 0;
  private hint: number | undefined;
  private nextMaster = 0;
  // The instance's soft state, as MarathonService keeps it.
  private instances = new Map<string, InstanceRecord>();
  private killSentAt = new Map<string, number>();
  private pendingOffers: OfferJson[] = [];
  private adoptedAtMs = -Infinity;
  private inheritedPending: Set<string> | undefined;
  private interest: InterestState = { ...NO_INTEREST };
  private looping = false;
  private dirty = false;
  private soon = false;

  constructor(
    private readonly world: FrameworkWorld,
    private readonly rng: SeededRandom,
    readonly plant: ServicesBug | undefined,
    changes: { atMs: number; apply: (s: SimServices) => void }[],
  ) {
    const store = {
      get: (key: string) => this.durable.get(key),
      entries: (prefix = '') => [...this.durable.entries()].filter(([k]) => k.startsWith(prefix)).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
    };
    this.records = new MarathonRecords(store as unknown as BuiltinStore);
    this.boot();
    for (const c of changes) {
      this.world.clock.after(c.atMs, () => {
        this.stats.changes++;
        c.apply(this);
        this.kick();
      });
    }
  }

  /** An API change: durable at once (the REST call answers once it is), its deployment with it. */
  change(puts: BuiltinPut[]): void {
    for (const p of puts) {
      if (p.value === null) this.durable.delete(p.key);
      else this.durable.set(p.key, structuredClone(p.value));
    }
  }

  /** The framework dies (with its leader, or alone): everything but the store is lost. */
  crash(): void {
    this.stats.crashes++;
    const s = this.stream;
    this.stream = undefined;
    this.subscribed = false;
    s?.close('peer', 1006, 'services framework crashed', false);
    this.boot();
  }

  private boot(): void {
    const gen = ++this.generation;
    this.instances = new Map(this.records.instances().map((r) => [r.taskId, r]));
    this.killSentAt = new Map();
    this.pendingOffers = [];
    this.adoptedAtMs = -Infinity;
    this.inheritedPending = undefined;
    this.interest = { ...NO_INTEREST };
    this.looping = false;
    this.dirty = false;
    this.soon = false;
    const tick = () => {
      if (gen !== this.generation) return;
      this.kick();
      this.world.clock.after(TICK_MS, tick);
    };
    this.world.clock.after(TICK_MS, tick);
    this.world.clock.after(this.rng.range(10, 300), () => {
      if (gen === this.generation) this.subscribe();
    });
  }

  private subscribe(): void {
    if (this.stream) return;
    const masters = this.world.masters();
    const target = (this.hint !== undefined ? masters.find((m) => m.id === this.hint) : undefined) ?? masters[this.nextMaster++ % masters.length];
    this.hint = undefined;
    const stream = this.world.net.connect<never, SchedulerEvent>(target.id);
    this.stream = stream;
    this.subscribed = false;
    const gen = this.generation;
    stream.peer = {
      onMessage: (event) => {
        if (this.stream === stream) this.onEvent(event);
      },
      onClose: (code, reason) => {
        if (this.stream !== stream) return;
        if (code === NOT_LEADER_CLOSE && reason !== '0') this.hint = Number(reason);
        const wasSubscribed = this.subscribed;
        this.stream = undefined;
        this.subscribed = false;
        // A leader that stops leading stops its instance; the next leader starts one afresh.
        if (wasSubscribed) this.restartInstance();
        else this.world.clock.after(this.rng.range(100, 1_000), () => {
          if (gen === this.generation) this.subscribe();
        });
      },
    };
    const id = this.records.frameworkId() ?? this.frameworkId;
    const spec: FrameworkSpec = { name: this.name, user: 'sim', role: '*', principal: this.name, failoverTimeoutS: 7 * 24 * 3600, capabilities: [], ...(id ? { id } : {}) };
    this.stats.subscriptions++;
    this.world.clock.after(this.world.net.delay(), () => {
      if (this.stream === stream) target.acceptSubscription(stream, spec);
    });
  }

  private restartInstance(): void {
    const hint = this.hint;
    this.boot();
    this.hint = hint;
  }

  /** The master this instance runs on, while it leads. */
  private master(): SimMaster | undefined {
    const stream = this.stream;
    if (!stream || !this.subscribed) return undefined;
    const m = this.world.masters().find((x) => x.id === stream.masterId);
    return m?.isLeading ? m : undefined;
  }

  /** A call to the master; one made by an instance that has since died is never delivered. */
  private call(call: SchedulerCall): void {
    const stream = this.stream;
    const master = this.master();
    if (!stream || !master) return;
    const streamId = `s${stream.id}`;
    const gen = this.generation;
    this.world.net.datagram(() => {
      if (gen === this.generation) master.call(call, streamId);
    });
  }

  private onEvent(event: SchedulerEvent): void {
    switch (event.type) {
      case 'SUBSCRIBED': {
        this.frameworkId = event.subscribed.framework_id.value;
        this.subscribed = true;
        if (this.records.frameworkId() !== this.frameworkId) this.change([{ key: FRAMEWORK_ID_KEY, value: this.frameworkId }]);
        // The subscription is committed in this leader's term: every launch proposed before it is
        // applied, so a record whose task is still missing was never launched (as service.ts).
        const tasks = this.master()?.state.tasks;
        if (tasks) this.inheritedPending = new Set([...this.instances.keys()].filter((id) => !tasks.has(id)));
        this.call({ type: 'RECONCILE', frameworkId: this.frameworkId, taskIds: [] });
        this.kick();
        return;
      }
      case 'OFFERS':
        this.pendingOffers.push(...event.offers.offers);
        this.kick();
        return;
      case 'RESCIND':
        this.pendingOffers = this.pendingOffers.filter((o) => o.id.value !== event.rescind.offer_id.value);
        return;
      case 'UPDATE': {
        const s = event.update.status;
        if (s.uuid && this.frameworkId) this.call({ type: 'ACKNOWLEDGE', frameworkId: this.frameworkId, taskId: s.task_id.value, agentId: '', uuid: s.uuid });
        if (!this.soon) {
          this.soon = true;
          const gen = this.generation;
          this.world.clock.after(UPDATE_BATCH_MS, () => {
            if (gen !== this.generation) return;
            this.soon = false;
            this.kick();
          });
        }
        return;
      }
      default:
        return;
    }
  }

  /** Asks for a round; rounds never overlap (a round waits for its write), one asked for meanwhile follows. */
  kick(): void {
    this.dirty = true;
    if (this.looping) return;
    this.dirty = false;
    this.round();
  }

  private round(): void {
    const master = this.master();
    const frameworkId = this.frameworkId;
    if (!master || !frameworkId) return;
    const gen = this.generation;
    const nowMs = this.world.clock.nowMs;
    const offers = this.pendingOffers.splice(0);
    const adopt = nowMs - this.adoptedAtMs >= ADOPT_EVERY_MS;
    if (adopt) this.adoptedAtMs = nowMs;
    const apps = this.records.apps();
    const deployments = this.records.deployments();
    const plan = planRound({
      nowMs, frameworkId, registry: master.state, apps, deployments, offers,
      backoff: storedDelays(this.records.store), instances: this.instances, killSentAt: this.killSentAt, adopt, inheritedPending: this.inheritedPending,
      newUuid: () => Buffer.from(randomBytesOf(this.rng, 16)).toString('hex'), pendingTimeoutMs: PENDING_TIMEOUT_MS, killRetryMs: KILL_RETRY_MS,
    });
    this.inheritedPending = undefined;
    this.stats.rounds++;
    if (this.plant === 'forget-before-dead') {
      for (const k of plan.kills) {
        this.instances.delete(k.taskId);
        plan.puts.push({ key: `instance/${k.taskId}`, value: null });
      }
    }
    const seen = this.seen(master);
    this.looping = true;
    // The write commits after a Raft round trip (leader to followers and back); a crash before then loses it.
    this.world.clock.after(this.world.net.delay() + this.world.net.delay(), () => {
      if (gen !== this.generation) return;
      this.change(plan.puts);
      this.looping = false;
      this.act(plan, seen, nowMs, apps, deployments, offers.length);
      if (this.dirty) this.kick();
    });
  }

  private act(plan: RoundPlan, seen: Seen, nowMs: number, apps: readonly StoredApp[], deployments: readonly DeploymentRecord[], offers: number): void {
    const frameworkId = this.frameworkId!;
    const { out, launches, kills, killNow } = plan;
    const waitingNow = [...out.queue.values()].some((q) => q.waiting > q.launched && (q.delayUntilMs === undefined || q.delayUntilMs <= nowMs));
    this.checkLaunches(plan, apps, deployments, seen);
    const byOffer = new Map<string, typeof launches>();
    for (const x of launches) byOffer.set(x.l.offerId, [...(byOffer.get(x.l.offerId) ?? []), x]);
    for (const [offerId, list] of byOffer) {
      this.stats.launches += list.length;
      // Through the scheduler API's own parser: the task infos are what service.ts sends.
      const parsed = parseSchedulerCall({
        type: 'ACCEPT', framework_id: { value: frameworkId },
        accept: { offer_ids: [{ value: offerId }], operations: [{ type: 'LAUNCH', launch: { task_infos: list.map((x) => x.info) } }], filters: { refuse_seconds: (waitingNow ? REFUSE_WHILE_WAITING_MS : REFUSE_IDLE_MS) / 1000 } },
      }) as SchedulerCall;
      this.call(parsed);
    }
    if (out.declines.length > 0) this.call({ type: 'DECLINE', frameworkId, offerIds: out.declines, refuseMs: waitingNow ? REFUSE_WHILE_WAITING_MS : REFUSE_IDLE_MS });
    this.checkKills(plan, apps, seen);
    for (const rec of kills) {
      this.killSentAt.set(rec.taskId, nowMs);
      this.stats.kills++;
      this.call({ type: 'KILL', frameworkId, taskId: rec.taskId });
    }
    for (const k of killNow) this.call({ type: 'KILL', frameworkId, taskId: k.taskId });
    const interest = nextInterest(this.interest, SERVICES_INTEREST, waitingNow, offers, nowMs);
    this.interest = interest.next;
    if (interest.call === 'revive') this.call({ type: 'REVIVE', frameworkId });
    else if (interest.call === 'suppress') this.call({ type: 'SUPPRESS', frameworkId });
  }

  // ------------------------------------------------------------------ invariants

  /**
   * What the round saw, with its own decisions applied: each app's live tasks on the leader
   * (not ended, not written off as unreachable, not asked to be killed; a task no record names
   * counts too), and which tasks were ready. The checks judge a round by what it knew: a task
   * may come back, or end, while the round's write is on its way.
   */
  private seen(master: SimMaster): Seen {
    const live = new Map<string, string[]>();
    const dying = new Map<string, { id: string; configVersion: string }[]>();
    const ready = new Set<string>();
    for (const t of master.state.tasks.values()) {
      if (t.frameworkId !== this.frameworkId || isTerminal(t.state)) continue;
      if (t.state === 'TASK_RUNNING') ready.add(t.id);
      if (t.state === 'TASK_UNREACHABLE' || t.state === 'TASK_UNKNOWN' || master.state.agents.get(t.agentId)?.reachable === false) continue;
      const appId = t.labels.find((l) => l.name === APP_LABEL)?.value ?? '';
      const rec = this.instances.get(t.id);
      if (rec?.killRequested) {
        dying.set(appId, [...(dying.get(appId) ?? []), { id: t.id, configVersion: rec.configVersion }]);
        continue;
      }
      live.set(appId, [...(live.get(appId) ?? []), t.id]);
    }
    return { live, dying, ready };
  }

  /**
   * Launches never take an app past its ceiling: instances outside a deployment, Marathon's
   * maximum during one — of the app as the round read it (an API change may land while the
   * round's write is on its way; the next round answers it).
   */
  private checkLaunches(plan: RoundPlan, apps: readonly StoredApp[], deployments: readonly DeploymentRecord[], seen: Seen): void {
    if (plan.launches.length === 0) return;
    const deploying = new Set(deployments.map((d) => d.appId));
    const launching = new Map<string, number>();
    for (const x of plan.launches) launching.set(x.l.appId, (launching.get(x.l.appId) ?? 0) + 1);
    for (const [appId, n] of launching) {
      const stored = apps.find((a) => a.app.id === appId);
      if (!stored) continue;
      const ceiling = deploying.has(appId) ? maxCapacity(stored.app) : stored.app.instances;
      // During a deployment an old instance being killed still holds its place until it is gone.
      const oldDying = deploying.has(appId) ? (seen.dying.get(appId) ?? []).filter((d) => d.configVersion !== stored.configVersion).map((d) => d.id) : [];
      const live = [...(seen.live.get(appId) ?? []), ...oldDying];
      if (live.length + n > ceiling) {
        this.violations.push(`app ${appId}: launching ${n} more would make ${live.length + n} live tasks (${live.join(', ')}), over its ceiling of ${ceiling} (${stored.app.instances} instances${deploying.has(appId) ? ', during a deployment' : ''})`);
      }
    }
  }

  /** A deployment's own kills of ready instances never leave fewer than minimumHealthCapacity × instances ready. */
  private checkKills(plan: RoundPlan, apps: readonly StoredApp[], seen: Seen): void {
    const upgrades = plan.out.kills.filter((k) => k.reason === 'upgrade' && seen.ready.has(k.taskId)).map((k) => k.taskId);
    for (const stored of apps) {
      const app = stored.app;
      const killedReady = upgrades.filter((id) => appIdOfTaskId(id) === app.id);
      if (killedReady.length === 0) continue;
      const left = [...this.instances.values()].filter((r) => r.appId === app.id && !r.killRequested && seen.ready.has(r.taskId)).length;
      const minReady = Math.ceil(app.instances * app.upgradeStrategy.minimumHealthCapacity - 1e-9);
      if (left < minReady) this.violations.push(`app ${app.id}: the deployment killed ready ${killedReady.join(', ')}, leaving ${left} ready of the ${minReady} it must keep`);
    }
  }

  /** Settled: every app at its instance count, all running and current, no deployment left, nothing of deleted apps alive. */
  problems(leader: SimMaster): string[] {
    const out: string[] = [];
    if (!this.subscribed) out.push('the services framework is not subscribed');
    const deployments = this.records.deployments();
    if (deployments.length > 0) out.push(`deployments not finished: ${deployments.map((d) => `${d.action} of ${d.appId}`).join(', ')}`);
    const live = new Map<string, string[]>();
    for (const t of leader.state.tasks.values()) {
      if (t.frameworkId !== this.frameworkId || isTerminal(t.state)) continue;
      const appId = t.labels.find((l) => l.name === APP_LABEL)?.value ?? '';
      live.set(appId, [...(live.get(appId) ?? []), t.id]);
    }
    const apps = this.records.apps();
    for (const s of apps) {
      const tasks = live.get(s.app.id) ?? [];
      const running = tasks.filter((id) => {
        const rec = this.durable.get(`instance/${id}`) as unknown as InstanceRecord | undefined;
        return leader.state.tasks.get(id)?.state === 'TASK_RUNNING' && rec && !rec.killRequested && rec.configVersion === s.configVersion;
      });
      if (tasks.length !== s.app.instances || running.length !== s.app.instances) out.push(`app ${s.app.id}: ${running.length} current instances running and ${tasks.length} live tasks, wants ${s.app.instances}`);
    }
    for (const [appId, tasks] of live) if (!apps.some((s) => s.app.id === appId)) out.push(`deleted app ${appId} still has ${tasks.join(', ')}`);
    return out;
  }

  /** What it knows, for a failing seed's report: each record with its task's state, backoff, offers held. */
  describe(leader: SimMaster): string {
    const recs = [...this.instances.values()].map((r) => `${r.taskId.slice(0, 16)}${r.killRequested ? ' (kill)' : ''} v${r.configVersion.slice(14, 19)} ${leader.state.tasks.get(r.taskId)?.state ?? 'no task'}`);
    const backoff = [...storedDelays(this.records.store)].map(([id, b]) => `${id} ${b.failures} failures`);
    return `records [${recs.join(', ')}], backoff [${backoff.join(', ')}], ${this.pendingOffers.length} offers held, ${this.interest.suppressed ? 'suppressed' : 'not suppressed'}${this.interest.wanted ? ', waiting' : ''}, ${this.looping ? 'writing' : 'idle'}`;
  }
}
