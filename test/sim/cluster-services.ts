// The services framework in the whole-cluster simulation: the production framework itself
// (master/frameworks/services/runtime.ts, ServicesRuntime on the framework runtime), over the
// simulated scheduler transport (sim-transport.ts), the simulator's clock
// (sim-runtime-clock.ts) and a store that survives it (sim-store.ts: a round's write commits
// a Raft round trip after it is made and is lost when in flight as the instance dies). As on
// a master, an instance runs on the leader and reads that master's registry; it is dropped
// when that master stops leading or its subscription's stream breaks, and the next starts
// afresh from the store on the leader of the moment. API changes (services-workload.ts) are
// written as the REST API writes them, durable at once.
//
// It checks, at each of the framework's own rounds (ServicesRuntimeOptions.onPlan), that the
// launches keep an app's live tasks within Marathon's bounds and that a deployment's kills
// keep enough instances ready, and that an ACCEPT launches only instances whose records are
// durable; the simulator checks at every step that no task of it runs twice.

import { isTerminal } from '../../shared/agent-messages.ts';
import type { SchedulerCall } from '../../shared/mesos-v1.ts';
import { randomBytesOf, type SeededRandom } from '../../shared/random.ts';
import type { FrameworkEnv } from '../../shared/framework-host/contract.ts';
import type { StorePut } from '../../shared/framework-host/store.ts';
import { storedDelays } from '../../master/frameworks/services/launch-delays.ts';
import type { RoundPlan } from '../../master/frameworks/services/round-plan.ts';
import { ServicesRuntime } from '../../master/frameworks/services/runtime.ts';
import { ServicesRecords, type DeploymentRecord, type InstanceRecord } from '../../master/frameworks/services/records.ts';
import { APP_LABEL, appIdOfTaskId } from '../../master/frameworks/services/task-info.ts';
import type { AppDefinition, StoredApp } from '../../master/frameworks/services/app-model.ts';
import type { FrameworkWorld } from './cluster-framework.ts';
import type { SimMaster } from './cluster-master.ts';
import { simEnv } from './sim-env.ts';
import { SimRuntimeClock } from './sim-runtime-clock.ts';
import { SimStore } from './sim-store.ts';
import { simTransports, type SimTransport } from './sim-transport.ts';

export const SERVICES_NAME = 'marathon';

/** How often an instance looks whether its master still leads (a master's host stops it at once). */
const LEADERSHIP_CHECK_MS = 100;

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

export interface ServicesWorld extends FrameworkWorld {
  leaders(): SimMaster[];
}

export class SimServices {
  readonly name = SERVICES_NAME;
  readonly records: ServicesRecords;
  readonly violations: string[] = [];
  /** crashes: instances dropped (their master stopped leading, or their stream broke). */
  readonly stats = { subscriptions: 0, launches: 0, kills: 0, crashes: 0, rounds: 0, changes: 0 };
  private readonly store: SimStore;
  /** The running instance, the master it runs on, its clock and transports. */
  private service: ServicesRuntime | undefined;
  private host: SimMaster | undefined;
  private clock: SimRuntimeClock | undefined;
  private transports: SimTransport[] = [];
  /** The working copy of the running instance's records, as its last round left it. */
  private instances = new Map<string, InstanceRecord>();
  /** Whether the running instance's master still leads in the leadership it was started in. */
  private leads: () => boolean = () => false;

  constructor(
    private readonly world: ServicesWorld,
    private readonly rng: SeededRandom,
    readonly plant: ServicesBug | undefined,
    changes: { atMs: number; apply: (s: SimServices) => void }[],
  ) {
    this.store = new SimStore(world.clock, () => world.net.delay() + world.net.delay(), () => {});
    this.records = new ServicesRecords(this.store.view(SERVICES_NAME));
    this.boot();
    for (const c of changes) {
      this.world.clock.after(c.atMs, () => {
        this.stats.changes++;
        c.apply(this);
        // The REST API tells the running instance (AppChanges' `changed`): one that has no
        // subscription yet starts one, as an instance started with apps does.
        if (this.service && this.transports.length === 0) this.restart(false);
        else this.service?.kick();
      });
    }
  }

  get frameworkId(): string | undefined {
    return this.service?.frameworkId ?? this.records.frameworkId();
  }

  get subscribed(): boolean {
    return this.service?.connected === true;
  }

  /** An API change: durable at once (the REST call answers once it is), its deployment with it. */
  change(puts: StorePut[]): void {
    this.store.apply(puts);
  }

  /** The framework's instance dies: everything but the store is lost; the leader of the moment starts another. */
  crash(): void {
    this.restart();
  }

  /** The instance's master stopped leading, or it died: everything but the store is lost; the next leader starts one. */
  private restart(crashed = true): void {
    if (crashed) this.stats.crashes++;
    this.service = undefined;
    this.host = undefined;
    this.clock?.kill();
    this.store.crash();
    for (const t of this.transports) t.close();
    this.transports = [];
    this.boot();
  }

  /** Starts an instance on the leader, once there is one. */
  private boot(): void {
    const leader = this.world.leaders()[0];
    if (!leader) {
      this.world.clock.after(LEADERSHIP_CHECK_MS, () => {
        if (!this.service) this.boot();
      });
      return;
    }
    // As on a master: the instance runs on its leadership's clock, the one its registry's times are written with.
    const clock = new SimRuntimeClock(this.world.clock, leader.leadershipClock);
    this.clock = clock;
    this.host = leader;
    const leaderships = leader.stats.leaderships;
    const made = simTransports(this.world, this.rng.fork(), (call) => this.onCall(call));
    const service = new ServicesRuntime(this.env(leader, clock), {
      clock,
      transport: (info) => {
        this.stats.subscriptions++;
        const t = made(info) as SimTransport;
        this.transports.push(t);
        // A leader that stops leading stops its instance; the next leader starts one afresh.
        t.on('disconnected', () => {
          if (this.service === service) this.restart();
        });
        return t;
      },
      uuid: () => Buffer.from(randomBytesOf(this.rng, 16)).toString('hex'),
      onPlan: (plan, instances) => this.onPlan(leader, plan, instances),
    });
    this.service = service;
    this.leads = () => leader.isLeading && leader.stats.leaderships === leaderships;
    this.instances = new Map(this.records.instances().map((r) => [r.taskId, r]));
    const watch = () => {
      if (this.service !== service) return;
      if (!this.leads()) this.restart();
      else this.world.clock.after(LEADERSHIP_CHECK_MS, watch);
    };
    this.world.clock.after(LEADERSHIP_CHECK_MS, watch);
  }

  private env(leader: SimMaster, clock: SimRuntimeClock): FrameworkEnv {
    return simEnv(SERVICES_NAME, this.store.view(SERVICES_NAME), () => leader, () => clock.now());
  }

  /** A call sent: an ACCEPT launches only instances whose records are durable (write the record, then ACCEPT). */
  private onCall(call: SchedulerCall): void {
    if (call.type === 'KILL') this.stats.kills++;
    if (call.type !== 'ACCEPT') return;
    for (const op of call.accept.operations) {
      for (const t of op.launch?.task_infos ?? []) {
        this.stats.launches++;
        if (!this.records.instances().some((r) => r.taskId === t.task_id.value)) this.violations.push(`ACCEPT launches ${t.task_id.value}, whose instance record is not durable`);
      }
    }
  }

  /** A round decided: the planted bug goes in, then its launches and kills are judged by what it knew. */
  private onPlan(master: SimMaster, plan: RoundPlan, instances: Map<string, InstanceRecord>): void {
    // A master's host stops its instance the moment it stops leading; here that is seen at the
    // latest by this round, which dies with the instance (its write lost, its calls not sent).
    if (!this.leads()) {
      this.restart();
      return;
    }
    this.stats.rounds++;
    this.instances = instances;
    if (this.plant === 'forget-before-dead') {
      for (const k of plan.kills) {
        instances.delete(k.taskId);
        plan.puts.push({ key: `instance/${k.taskId}`, value: null });
      }
    }
    const seen = this.seen(master);
    const apps = this.records.apps();
    this.checkLaunches(plan, apps, this.records.deployments(), seen);
    this.checkKills(plan, apps, seen);
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
        const rec = this.records.instances().find((r) => r.taskId === id);
        return leader.state.tasks.get(id)?.state === 'TASK_RUNNING' && rec && !rec.killRequested && rec.configVersion === s.configVersion;
      });
      if (tasks.length !== s.app.instances || running.length !== s.app.instances) out.push(`app ${s.app.id}: ${running.length} current instances running and ${tasks.length} live tasks, wants ${s.app.instances}`);
    }
    for (const [appId, tasks] of live) if (!apps.some((s) => s.app.id === appId)) out.push(`deleted app ${appId} still has ${tasks.join(', ')}`);
    return out;
  }

  /** What it knows, for a failing seed's report: each record with its task's state, and the backoff. */
  describe(leader: SimMaster): string {
    const recs = this.records.instances().map((r) => `${r.taskId.slice(0, 16)}${r.killRequested ? ' (kill)' : ''} v${r.configVersion.slice(14, 19)} ${leader.state.tasks.get(r.taskId)?.state ?? 'no task'}`);
    const now = this.service?.now();
    const backoff = [...storedDelays(this.records.store)].map(([id, b]) => `${id} ${b.failures} failures${now !== undefined ? `, the last ${now - b.lastFailureAtMs} ms ago on the instance's clock` : ''}`);
    return `records [${recs.join(', ')}], backoff [${backoff.join(', ')}], instance ${this.service ? `on master ${this.host?.id}, ${this.subscribed ? 'subscribed' : 'not subscribed'}` : 'none'}`;
  }
}
