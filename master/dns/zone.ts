// The DNS zone: every name Cairn serves, kept current from registry changes so that a
// query is one map lookup. Pure: it reads the registry state it is handed and knows no
// socket or clock.
//
// Each record has an owner (a task, an agent, the leader, the name server); refreshing an
// owner removes what it contributed and adds what it contributes now, so the zone never
// needs a full rebuild after start. A RUNNING task on a known agent contributes, as
// mesos-dns does (f = framework fragment, d = domain, c = canonical task label
// `task-<hash of the task id>-<agent id tail>`):
//   task.f.d, c.f.d, task.f.slave.d, c.f.slave.d          A/AAAA (the agent's address)
//   _task._tcp.f.d, _task._udp.f.d, and the same under f.slave.d
//                                                          SRV, one per port, target c.f.slave.d
// Agents give agent.d and slave.d; the leader gives leader.d, master.d, master0.d and
// _leader._tcp.d / _leader._udp.d (port = its HTTP port); ns1.d is this server.
//
// Names under a framework's name belong to one principal: the label the name claims
// (names.ts frameworkNameKey) is held by the principal of the earliest-registered framework
// that claims it and is not removed (the earliest removed one while none is live), or by the
// one ZoneOptions.reservedNames gives it (the built-ins' names). A task of a framework of any
// other principal gets no names, so a tenant naming its framework `marathon`, or as another
// tenant's, cannot add its address to theirs. SUBSCRIBE refuses such a name
// (auth/scheduler-auth.ts); this rule holds the zone even for frameworks registered before.

import type { AgentRecord, FrameworkRecord, RegistryCommand, TaskRecord } from '../registry/commands.ts';
import type { RegistryEvent } from '../registry/state-machine.ts';
import { Resources } from '../../shared/resources.ts';
import { addressOf, agentIdTail, ancestorsWithin, fitsInDns, frameworkNameKey, MAX_LABEL, taskIdHash, toDomainFragment, toLabel } from './names.ts';

/** What the zone reads from the registry (the state machine satisfies it). */
export interface ZoneSource {
  readonly agents: ReadonlyMap<string, AgentRecord>;
  readonly frameworks: ReadonlyMap<string, FrameworkRecord>;
  readonly tasks: ReadonlyMap<string, TaskRecord>;
}

export interface SrvTarget {
  target: string;
  port: number;
}

export type RecordType = 'A' | 'AAAA' | 'SRV';

/** One record as the HTTP API lists it: SRV values as `target:port`. */
export interface ZoneRecord {
  name: string;
  type: RecordType;
  value: string;
}

/** The records of one name, duplicates merged, in the order their owners added them. */
export interface NameRecords {
  a: string[];
  aaaa: string[];
  srv: SrvTarget[];
}

export interface ZoneOptions {
  /** Canonical domain (lower case, no trailing dot). */
  domain: string;
  /** The leading master's address and HTTP port. */
  leader: { ip: string; port: number };
  /** This server's own address, for ns1.<domain>. */
  nsIp: string;
  /** First SOA serial; the serial goes up by one with every change. */
  serialBase?: number;
  /** Framework-name labels held by a principal whatever registers (label → principal). */
  reservedNames?: ReadonlyMap<string, string>;
}

interface Owned<T> {
  owner: string;
  value: T;
}

interface Entry {
  a: Owned<string>[];
  aaaa: Owned<string>[];
  srv: Owned<SrvTarget>[];
}

/** What a running task contributes, kept for removal and for /v1/enumerate. */
export interface TaskEntry {
  taskId: string;
  taskName: string;
  frameworkId: string;
  frameworkName: string;
  agentId: string;
  records: ZoneRecord[];
}

type ChangeListener = (names: ReadonlySet<string>) => void;

const RUNNING = 'TASK_RUNNING';

export class DnsZone {
  readonly domain: string;
  private readonly names = new Map<string, Entry>();
  /** Names with at least one name below them (empty non-terminals answer NODATA, not NXDOMAIN). */
  private readonly parents = new Map<string, number>();
  /** Owner → names it contributed to. */
  private readonly owned = new Map<string, string[]>();
  private readonly tasks = new Map<string, TaskEntry>();
  private readonly tasksByAgent = new Map<string, Set<string>>();
  private readonly tasksByFramework = new Map<string, Set<string>>();
  private readonly listeners: ChangeListener[] = [];
  private changed = new Set<string>();
  private leader: { ip: string; port: number };
  private readonly nsIp: string;
  private serialValue: number;
  private readonly reservedNames: ReadonlyMap<string, string>;
  /** Framework-name label → the principal it answers for; rebuilt after a framework changes. */
  private nameOwners: Map<string, string> | undefined;

  constructor(opts: ZoneOptions) {
    this.domain = opts.domain;
    this.reservedNames = opts.reservedNames ?? new Map();
    this.leader = opts.leader;
    this.nsIp = opts.nsIp;
    this.serialValue = (opts.serialBase ?? 1) >>> 0;
    this.refreshMasters();
    this.publish();
  }

  /** SOA serial: the zone's version, bumped on every change (wraps at 2^32). */
  get serial(): number {
    return this.serialValue;
  }

  /** Number of names with records. */
  get size(): number {
    return this.names.size;
  }

  /** Calls `listener` with the names whose records changed, after each change. */
  onChange(listener: ChangeListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  // ---------------------------------------------------------------- updates

  /**
   * Builds everything from a registry state: at start, and when a whole new state arrives
   * (a snapshot installed from the leader), which is why what the zone holds but the state
   * no longer has is refreshed too — and so removed.
   */
  load(state: ZoneSource): void {
    this.nameOwners = undefined;
    for (const taskId of [...this.tasks.keys()]) if (!state.tasks.has(taskId)) this.refreshTask(taskId, state);
    for (const owner of [...this.owned.keys()]) {
      if (owner.startsWith('a:') && !state.agents.has(owner.slice(2))) this.refreshAgent(owner.slice(2), state);
    }
    for (const agent of state.agents.values()) this.refreshAgent(agent.id, state);
    for (const task of state.tasks.values()) if (task.state === RUNNING) this.refreshTask(task.id, state);
    this.publish();
  }

  /** Follows one applied registry command; `state` is the registry state after it. */
  applyCommand(command: RegistryCommand, events: readonly RegistryEvent[], state: ZoneSource): void {
    switch (command.type) {
      case 'agent_registered':
      case 'agent_unreachable':
      case 'agent_removed': {
        const agentId = command.type === 'agent_registered' ? command.agent.id : command.agentId;
        this.refreshAgent(agentId, state);
        // The agent's address may have changed, or it may be gone: its tasks follow.
        for (const id of [...(this.tasksByAgent.get(agentId) ?? [])]) this.refreshTask(id, state);
        break;
      }
      case 'framework_subscribed':
      case 'framework_removed': {
        // A framework may come back under another name, and who holds a name may change:
        // every running task under the names it had or has now is looked at again.
        const id = command.type === 'framework_subscribed' ? command.framework.id : command.frameworkId;
        const keys = new Set<string>();
        const fw = state.frameworks.get(id);
        if (fw) keys.add(frameworkNameKey(fw.name));
        for (const t of this.tasksByFramework.get(id) ?? []) keys.add(frameworkNameKey(this.tasks.get(t)!.frameworkName));
        this.nameOwners = undefined;
        for (const t of [...(this.tasksByFramework.get(id) ?? [])]) this.refreshTask(t, state);
        for (const task of state.tasks.values()) {
          if (task.state !== RUNNING) continue;
          const f = state.frameworks.get(task.frameworkId);
          if (f && keys.has(frameworkNameKey(f.name))) this.refreshTask(task.id, state);
        }
        break;
      }
      default:
        break;
    }
    for (const e of events) this.refreshTask(e.task.id, state);
    this.publish();
  }

  /** A new leading master (address and HTTP port). */
  setLeader(leader: { ip: string; port: number }): void {
    this.leader = leader;
    this.refreshMasters();
    this.publish();
  }

  private refreshMasters(): void {
    const d = this.domain;
    this.removeOwner('leader');
    this.removeOwner('ns');
    const leaderName = `leader.${d}`;
    for (const name of [leaderName, `master.${d}`, `master0.${d}`]) this.addAddress('leader', name, this.leader.ip);
    for (const name of [`_leader._tcp.${d}`, `_leader._udp.${d}`]) this.addSrv('leader', name, { target: leaderName, port: this.leader.port });
    this.addAddress('ns', this.nsName, this.nsIp);
  }

  /** The zone's name server (SOA MNAME and NS target). */
  get nsName(): string {
    return `ns1.${this.domain}`;
  }

  private refreshAgent(agentId: string, state: ZoneSource): void {
    const owner = `a:${agentId}`;
    this.removeOwner(owner);
    const agent = state.agents.get(agentId);
    if (!agent || !agent.reachable) return;
    for (const name of [`agent.${this.domain}`, `slave.${this.domain}`]) this.addAddress(owner, name, agent.ip);
  }

  private refreshTask(taskId: string, state: ZoneSource): void {
    const owner = `t:${taskId}`;
    const before = this.tasks.get(taskId);
    if (before) {
      this.tasks.delete(taskId);
      this.tasksByAgent.get(before.agentId)?.delete(taskId);
      if (this.tasksByAgent.get(before.agentId)?.size === 0) this.tasksByAgent.delete(before.agentId);
      this.tasksByFramework.get(before.frameworkId)?.delete(taskId);
      if (this.tasksByFramework.get(before.frameworkId)?.size === 0) this.tasksByFramework.delete(before.frameworkId);
      this.removeOwner(owner);
    }
    const task = state.tasks.get(taskId);
    if (!task || task.state !== RUNNING) return;
    const agent = state.agents.get(task.agentId);
    const framework = state.frameworks.get(task.frameworkId);
    if (!agent || !framework) return;
    if (this.nameOwner(frameworkNameKey(framework.name), state) !== framework.principal) return;
    const records = taskRecords(task, framework, agent, this.domain);
    if (records.length === 0) return;
    for (const r of records) {
      if (r.type === 'SRV') {
        const colon = r.value.lastIndexOf(':');
        this.addSrv(owner, r.name, { target: r.value.slice(0, colon), port: Number(r.value.slice(colon + 1)) });
      } else {
        this.addAddress(owner, r.name, r.value);
      }
    }
    this.tasks.set(taskId, { taskId, taskName: task.name, frameworkId: framework.id, frameworkName: framework.name, agentId: agent.id, records });
    let byAgent = this.tasksByAgent.get(agent.id);
    if (!byAgent) this.tasksByAgent.set(agent.id, (byAgent = new Set()));
    byAgent.add(taskId);
    let byFramework = this.tasksByFramework.get(framework.id);
    if (!byFramework) this.tasksByFramework.set(framework.id, (byFramework = new Set()));
    byFramework.add(taskId);
  }

  /** The principal whose frameworks answer under a framework-name label (see the file header). */
  private nameOwner(key: string, state: ZoneSource): string | undefined {
    const reserved = this.reservedNames.get(key);
    if (reserved !== undefined) return reserved;
    if (!this.nameOwners) {
      const first = new Map<string, FrameworkRecord>();
      const rank = (f: FrameworkRecord) => [f.removedAtMs !== undefined ? 1 : 0, f.registeredAtMs] as const;
      for (const f of state.frameworks.values()) {
        const k = frameworkNameKey(f.name);
        const held = first.get(k);
        if (!held) {
          first.set(k, f);
          continue;
        }
        const [a, b] = [rank(f), rank(held)];
        if (a[0] < b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && f.id < held.id)))) first.set(k, f);
      }
      this.nameOwners = new Map([...first].map(([k, f]) => [k, f.principal]));
    }
    return this.nameOwners.get(key);
  }

  // ---------------------------------------------------------------- storage

  private entry(name: string): Entry {
    let e = this.names.get(name);
    if (!e) {
      e = { a: [], aaaa: [], srv: [] };
      this.names.set(name, e);
      for (const p of ancestorsWithin(name, this.domain)) this.parents.set(p, (this.parents.get(p) ?? 0) + 1);
    }
    return e;
  }

  private own(owner: string, name: string): void {
    let list = this.owned.get(owner);
    if (!list) this.owned.set(owner, (list = []));
    list.push(name);
    this.changed.add(name);
  }

  private addAddress(owner: string, name: string, ip: string): void {
    const addr = addressOf(ip);
    if (!addr) return;
    const e = this.entry(name);
    (addr.family === 4 ? e.a : e.aaaa).push({ owner, value: addr.address });
    this.own(owner, name);
  }

  private addSrv(owner: string, name: string, value: SrvTarget): void {
    this.entry(name).srv.push({ owner, value });
    this.own(owner, name);
  }

  private removeOwner(owner: string): void {
    const list = this.owned.get(owner);
    if (!list) return;
    this.owned.delete(owner);
    for (const name of new Set(list)) {
      const e = this.names.get(name);
      if (!e) continue;
      e.a = e.a.filter((r) => r.owner !== owner);
      e.aaaa = e.aaaa.filter((r) => r.owner !== owner);
      e.srv = e.srv.filter((r) => r.owner !== owner);
      this.changed.add(name);
      if (e.a.length + e.aaaa.length + e.srv.length === 0) {
        this.names.delete(name);
        for (const p of ancestorsWithin(name, this.domain)) {
          const n = (this.parents.get(p) ?? 1) - 1;
          if (n <= 0) this.parents.delete(p);
          else this.parents.set(p, n);
        }
      }
    }
  }

  private publish(): void {
    if (this.changed.size === 0) return;
    const names = this.changed;
    this.changed = new Set();
    this.serialValue = (this.serialValue + 1) >>> 0;
    for (const l of this.listeners) l(names);
  }

  // ---------------------------------------------------------------- queries

  /** Records of a canonical name (lower case, no trailing dot); undefined when it has none. */
  lookup(name: string): NameRecords | undefined {
    const e = this.names.get(name);
    if (!e) return undefined;
    return {
      a: unique(e.a.map((r) => r.value)),
      aaaa: unique(e.aaaa.map((r) => r.value)),
      srv: uniqueSrv(e.srv.map((r) => r.value)),
    };
  }

  /** Whether a name exists: it has records, has names below it, or is the apex. */
  exists(name: string): boolean {
    return name === this.domain || this.names.has(name) || this.parents.has(name);
  }

  /** Running tasks with their records, for /v1/enumerate. */
  taskEntries(): IterableIterator<TaskEntry> {
    return this.tasks.values();
  }

  /** Every record, for /v1/axfr-like listings and tests. */
  *records(): IterableIterator<ZoneRecord> {
    for (const [name, e] of this.names) {
      for (const v of unique(e.a.map((r) => r.value))) yield { name, type: 'A', value: v };
      for (const v of unique(e.aaaa.map((r) => r.value))) yield { name, type: 'AAAA', value: v };
      for (const s of uniqueSrv(e.srv.map((r) => r.value))) yield { name, type: 'SRV', value: `${s.target}:${s.port}` };
    }
  }
}

function unique(values: string[]): string[] {
  return values.length <= 1 ? values : [...new Set(values)];
}

function uniqueSrv(values: SrvTarget[]): SrvTarget[] {
  if (values.length <= 1) return values;
  const seen = new Set<string>();
  return values.filter((v) => {
    const k = `${v.target}:${v.port}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * The records a RUNNING task gets (see the file header); empty when its name, its
 * framework's name or its agent's address cannot make a DNS name.
 */
/** The label a job's replicas carry (the jobs framework's task-info.ts): their job's name. */
export const JOB_LABEL = 'cairn.job';

export function taskRecords(task: TaskRecord, framework: FrameworkRecord, agent: AgentRecord, domain: string): ZoneRecord[] {
  const addr = addressOf(agent.ip);
  const label = toLabel(task.name);
  const fragment = toDomainFragment(framework.name);
  if (!addr || label === '' || fragment === '') return [];
  const suffix = [taskIdHash(task.id), agentIdTail(agent.id)].filter((s) => s !== '').join('-');
  const canonical = `${label.slice(0, MAX_LABEL - suffix.length - 1).replace(/-+$/, '')}-${suffix}`;
  const base = `${fragment}.${domain}`;
  const slave = `${fragment}.slave.${domain}`;
  const addressNames = [`${label}.${base}`, `${canonical}.${base}`, `${label}.${slave}`, `${canonical}.${slave}`];
  const type: RecordType = addr.family === 4 ? 'A' : 'AAAA';
  if (!addressNames.every(fitsInDns)) return [];
  const out: ZoneRecord[] = addressNames.map((name) => ({ name, type, value: addr.address }));
  // A job's replica also under its job's name (`NAME-master-0.NAME.jobs.<domain>`), so that
  // `NAME-master-0.NAME` finds it through a task's search list, as a pod's hostname.subdomain
  // does in Kubernetes. Under the framework's own name: no other framework can claim it.
  const job = toLabel(task.labels.find((l) => l.name === JOB_LABEL)?.value ?? '');
  const jobName = `${label}.${job}.${base}`;
  if (job !== '' && fitsInDns(jobName)) out.push({ name: jobName, type, value: addr.address });
  let ports: number[] = [];
  try {
    ports = Resources.parse(task.resources).portList();
  } catch {
    // A task record always holds valid resources; a bad one just gets no SRV records.
  }
  const target = `${canonical}.${slave}`;
  const service = `_${label.slice(0, MAX_LABEL - 1)}`;
  const srvNames = [`${service}._tcp.${base}`, `${service}._udp.${base}`, `${service}._tcp.${slave}`, `${service}._udp.${slave}`].filter(fitsInDns);
  for (const port of ports) {
    for (const name of srvNames) out.push({ name, type: 'SRV', value: `${target}:${port}` });
  }
  return out;
}
