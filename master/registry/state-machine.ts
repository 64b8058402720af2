// The registry: the cluster's durable state as a deterministic state machine.
// `apply(command)` is the only way to change it and returns what changed for the outside
// (task status updates to forward). The same sequence of commands gives the same state
// and the same events on every master, which is what lets a log replicate it.
// Stale commands (an update for a task already gone, say) are ignored, never thrown on:
// a replayed log must always apply.

import { isTerminal, type TaskState } from '../../shared/agent-messages.ts';
import { MAX_PREEMPTIONS, MAX_TASK_HISTORY, type PreemptionRecord, type QuotaRecord, type AgentRecord, type SecretRecord, type JsonValue, type FrameworkRecord, type PendingUpdate, type RegistryCommand, type TaskRecord, type TaskStatusChange } from './commands.ts';

export interface TaskUpdateEvent {
  kind: 'task_update';
  task: TaskRecord;
  previousState: TaskState;
  update: PendingUpdate;
}

export type RegistryEvent = TaskUpdateEvent;

export interface RegistrySnapshot {
  agents: AgentRecord[];
  frameworks: FrameworkRecord[];
  tasks: TaskRecord[];
  /** Absent in snapshots written before weights were kept. */
  roleWeights?: Record<string, number>;
  /** Absent in snapshots written before quotas were kept. */
  quotas?: QuotaRecord[];
  /** Absent in snapshots written before preemptions were kept. */
  preemptions?: PreemptionRecord[];
  /** Built-in frameworks' state by owner, then key. Absent in snapshots written before it was kept. */
  builtin?: Record<string, Record<string, JsonValue>>;
  /** Stored credentials. Absent in snapshots written before they were kept. */
  secrets?: SecretRecord[];
}

/** Terminal, acknowledged tasks kept for `cairn tasks` and logs before the oldest are dropped. */
export const MAX_COMPLETED_TASKS = 10_000;

export class RegistryStateMachine {
  readonly agents = new Map<string, AgentRecord>();
  readonly frameworks = new Map<string, FrameworkRecord>();
  readonly tasks = new Map<string, TaskRecord>();
  readonly roleWeights = new Map<string, number>();
  readonly quotas = new Map<string, QuotaRecord>();
  /** The latest preemptions, oldest first, at most MAX_PREEMPTIONS. */
  preemptions: PreemptionRecord[] = [];
  /** Built-in frameworks' state: owner, then key. Values are frozen: readers share them. */
  readonly builtin = new Map<string, Map<string, JsonValue>>();
  /** Stored credentials by name; frozen, as readers share them. */
  readonly secrets = new Map<string, Readonly<SecretRecord>>();
  /** Completed task ids in completion order, for bounded retention. */
  private readonly completed = new Set<string>();

  static fromSnapshot(s: RegistrySnapshot): RegistryStateMachine {
    const sm = new RegistryStateMachine();
    for (const a of s.agents) sm.agents.set(a.id, { ...a });
    for (const f of s.frameworks) sm.frameworks.set(f.id, { ...f });
    for (const t of s.tasks) {
      const task = { ...t };
      sm.tasks.set(t.id, task);
      sm.index(task);
      sm.noteIfCompleted(task);
    }
    for (const [role, w] of Object.entries(s.roleWeights ?? {})) sm.roleWeights.set(role, w);
    for (const q of s.quotas ?? []) sm.quotas.set(q.role, q);
    sm.preemptions = [...(s.preemptions ?? [])];
    for (const [owner, entries] of Object.entries(s.builtin ?? {})) {
      sm.builtin.set(owner, new Map(Object.entries(entries).map(([k, v]) => [k, deepFreeze(v)])));
    }
    for (const sec of s.secrets ?? []) sm.secrets.set(sec.name, frozenSecret(sec));
    return sm;
  }

  snapshot(): RegistrySnapshot {
    return {
      agents: [...this.agents.values()].map((a) => ({ ...a })),
      frameworks: [...this.frameworks.values()].map((f) => ({ ...f })),
      tasks: [...this.tasks.values()].map((t) => ({ ...t })),
      roleWeights: Object.fromEntries(this.roleWeights),
      quotas: [...this.quotas.values()],
      preemptions: [...this.preemptions],
      builtin: Object.fromEntries([...this.builtin].map(([owner, m]) => [owner, Object.fromEntries(m)])),
      secrets: [...this.secrets.values()],
    };
  }

  /** Non-terminal tasks on an agent, in launch order. */
  activeTasksOn(agentId: string): TaskRecord[] {
    return this.activeIn(this.activeByAgent, agentId);
  }

  /** Non-terminal tasks of a framework, in launch order. */
  activeTasksOf(frameworkId: string): TaskRecord[] {
    return this.activeIn(this.activeByFramework, frameworkId);
  }

  private activeIn(index: Map<string, Set<string>>, key: string): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (const id of index.get(key) ?? []) out.push(this.tasks.get(id)!);
    return out;
  }

  /**
   * Indexes of the non-terminal tasks by agent and by framework: a leader asks for them on
   * every registration, and scanning every task (up to the 10,000 completed ones kept, plus
   * all running) for each of 10,000 agents re-registering after a failover would take seconds.
   */
  private readonly activeByAgent = new Map<string, Set<string>>();
  private readonly activeByFramework = new Map<string, Set<string>>();

  private index(t: TaskRecord): void {
    if (isTerminal(t.state)) return;
    addTo(this.activeByAgent, t.agentId, t.id);
    addTo(this.activeByFramework, t.frameworkId, t.id);
  }

  private unindex(t: TaskRecord): void {
    removeFrom(this.activeByAgent, t.agentId, t.id);
    removeFrom(this.activeByFramework, t.frameworkId, t.id);
  }

  apply(cmd: RegistryCommand): RegistryEvent[] {
    switch (cmd.type) {
      case 'agent_registered':
        return this.applyAgentRegistered(cmd);
      case 'agent_unreachable': {
        const agent = this.agents.get(cmd.agentId);
        if (!agent || !agent.reachable || staleFor(agent, cmd.registrations)) return [];
        agent.reachable = false;
        const uuids = [...cmd.uuids];
        return this.activeTasksOn(cmd.agentId).map((t) =>
          this.setState(t, 'TASK_UNREACHABLE', 'agent is unreachable', 'REASON_AGENT_UNREACHABLE', 'SOURCE_MASTER', uuids.shift() ?? derivedUuid(t.id, cmd.atMs), cmd.atMs),
        );
      }
      case 'agent_drain': {
        const agent = this.agents.get(cmd.agentId);
        if (!agent) return [];
        if (cmd.drain) agent.drain = { sinceMs: agent.drain?.sinceMs ?? cmd.drain.sinceMs, deadlineAtMs: cmd.drain.deadlineAtMs };
        else delete agent.drain;
        return [];
      }
      case 'agent_removed': {
        const agent = this.agents.get(cmd.agentId);
        if (!agent || staleFor(agent, cmd.registrations)) return [];
        const uuids = [...cmd.uuids];
        const events = this.activeTasksOn(cmd.agentId).map((t) =>
          this.setState(t, 'TASK_GONE', 'agent was removed', 'REASON_AGENT_REMOVED', 'SOURCE_MASTER', uuids.shift() ?? derivedUuid(t.id, cmd.atMs), cmd.atMs),
        );
        this.agents.delete(cmd.agentId);
        return events;
      }
      case 'framework_subscribed': {
        const existing = this.frameworks.get(cmd.framework.id);
        if (existing?.removedAtMs !== undefined) return [];
        this.frameworks.set(cmd.framework.id, {
          ...cmd.framework,
          registeredAtMs: existing?.registeredAtMs ?? cmd.framework.registeredAtMs,
        });
        return [];
      }
      case 'framework_removed': {
        const fw = this.frameworks.get(cmd.frameworkId);
        if (!fw || fw.removedAtMs !== undefined) return [];
        fw.removedAtMs = cmd.atMs;
        return [];
      }
      case 'task_launched': {
        if (this.tasks.has(cmd.task.id)) return [];
        const task: TaskRecord = {
          ...cmd.task, state: 'TASK_STAGING', message: '', updatedAtMs: cmd.atMs,
          history: [{ state: 'TASK_STAGING', reason: '', message: '', source: 'SOURCE_MASTER', atMs: cmd.atMs }],
        };
        this.tasks.set(task.id, task);
        this.index(task);
        return [];
      }
      case 'status_update': {
        const task = this.tasks.get(cmd.taskId);
        if (!task) return [];
        // A terminal state is final, except that an agent may report on a task the master
        // had written off as unreachable-then-lost only through re-registration.
        if (isTerminal(task.state)) return [];
        return [this.setState(task, cmd.state, cmd.message, cmd.reason, cmd.source, cmd.uuid, cmd.atMs, cmd.exitCode, cmd.healthy)];
      }
      case 'builtin_state': {
        let m = this.builtin.get(cmd.owner);
        if (!m) this.builtin.set(cmd.owner, (m = new Map()));
        for (const p of cmd.puts) {
          if (p.value === null) m.delete(p.key);
          else m.set(p.key, deepFreeze(structuredClone(p.value)));
        }
        if (m.size === 0) this.builtin.delete(cmd.owner);
        return [];
      }
      case 'secret_set': {
        const existing = this.secrets.get(cmd.secret.name);
        if (existing && existing.owner !== cmd.secret.owner) return [];
        this.secrets.set(cmd.secret.name, frozenSecret(cmd.secret));
        return [];
      }
      case 'secret_removed':
        this.secrets.delete(cmd.name);
        return [];
      case 'role_weight_set':
        if (cmd.weight === 1) this.roleWeights.delete(cmd.role);
        else this.roleWeights.set(cmd.role, cmd.weight);
        return [];
      case 'quota_set':
        if (cmd.quota === null) this.quotas.delete(cmd.role);
        else this.quotas.set(cmd.role, cmd.quota);
        return [];
      case 'preemption':
        // Replaced, never changed in place: readers may hold the old list.
        this.preemptions = [...this.preemptions.slice(-(MAX_PREEMPTIONS - 1)), cmd.record];
        return [];
      case 'status_acknowledged': {
        const task = this.tasks.get(cmd.taskId);
        if (task?.unacked?.uuid === cmd.uuid) {
          task.unacked = undefined;
          this.noteIfCompleted(task);
        }
        return [];
      }
    }
  }

  private applyAgentRegistered(cmd: Extract<RegistryCommand, { type: 'agent_registered' }>): RegistryEvent[] {
    const previous = this.agents.get(cmd.agent.id);
    // A drain is the operator's word, not the agent's: it outlives re-registrations.
    this.agents.set(cmd.agent.id, {
      ...cmd.agent, reachable: true, registeredAtMs: previous?.registeredAtMs ?? cmd.agent.registeredAtMs,
      registrations: (previous?.registrations ?? 0) + 1,
      ...(previous?.drain ? { drain: previous.drain } : {}),
    });
    if (!previous || !cmd.runningTasks) return [];
    // Reconcile: what the agent runs goes on; what it no longer runs is lost.
    const reported = new Map(cmd.runningTasks.map((r) => [r.taskId, r.state]));
    const uuids = [...cmd.uuids];
    const events: RegistryEvent[] = [];
    for (const t of this.activeTasksOn(cmd.agent.id)) {
      const state = reported.get(t.id);
      if (state === undefined) {
        // Not even a task still STAGING is spared: its launch went, once, to the connection
        // the agent had when the launch was committed — which is before this registration in
        // the log, so on a connection the agent had already left. It will never arrive.
        events.push(this.setState(t, 'TASK_LOST', 'task is not running on the agent after it re-registered', 'REASON_AGENT_REREGISTERED', 'SOURCE_MASTER', uuids.shift() ?? derivedUuid(t.id, cmd.atMs), cmd.atMs));
      } else if (state !== t.state && !isTerminal(state)) {
        events.push(this.setState(t, state, 'agent re-registered', 'REASON_AGENT_REREGISTERED', 'SOURCE_MASTER', uuids.shift() ?? derivedUuid(t.id, cmd.atMs), cmd.atMs));
      }
    }
    return events;
  }

  private setState(
    task: TaskRecord,
    state: TaskState,
    message: string,
    reason: string,
    source: PendingUpdate['source'],
    uuid: string,
    atMs: number,
    exitCode?: number,
    healthy?: boolean,
  ): TaskUpdateEvent {
    const previousState = task.state;
    task.state = state;
    if (isTerminal(state)) this.unindex(task);
    task.message = message;
    task.updatedAtMs = atMs;
    if (exitCode !== undefined) task.exitCode = exitCode;
    if (healthy !== undefined) task.healthy = healthy;
    const update: PendingUpdate = { uuid, state, message, source, reason, atMs, ...(healthy !== undefined ? { healthy } : {}) };
    task.unacked = update;
    task.history = withChange(task.history, { state, reason, message, source, atMs, ...(healthy !== undefined ? { healthy } : {}) });
    return { kind: 'task_update', task, previousState, update };
  }

  private noteIfCompleted(task: TaskRecord): void {
    if (!isTerminal(task.state) || task.unacked) return;
    this.completed.add(task.id);
    while (this.completed.size > MAX_COMPLETED_TASKS) {
      const oldest = this.completed.values().next().value as string;
      this.completed.delete(oldest);
      this.tasks.delete(oldest);
    }
  }
}

/** A new history with `change` appended and the oldest beyond the cap dropped (a new array: snapshots share the old one). */
function withChange(history: readonly TaskStatusChange[] | undefined, change: TaskStatusChange): TaskStatusChange[] {
  const next = [...(history ?? []), change];
  return next.length > MAX_TASK_HISTORY ? next.slice(next.length - MAX_TASK_HISTORY) : next;
}

function addTo(index: Map<string, Set<string>>, key: string, id: string): void {
  const set = index.get(key);
  if (set) set.add(id);
  else index.set(key, new Set([id]));
}

function removeFrom(index: Map<string, Set<string>>, key: string, id: string): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) index.delete(key);
}

/**
 * A write-off (unreachable, removed) decided before the agent's latest registration: the
 * agent came back meanwhile, and the decision no longer holds.
 */
function staleFor(agent: AgentRecord, registrations: number | undefined): boolean {
  return registrations !== undefined && (agent.registrations ?? 0) !== registrations;
}

/**
 * A uuid for an update a command produced beyond the uuids it carries (its proposer saw fewer
 * tasks than the state it applies to). Derived from the task and the command's time, so every
 * replica derives the same one; 16 bytes, base64, like the others.
 */
function derivedUuid(taskId: string, atMs: number): string {
  const bytes = new Uint8Array(16);
  for (let k = 0; k < 4; k++) {
    let h = (0x811c9dc5 ^ Math.imul(k + 1, 0x9e3779b9)) >>> 0;
    const text = `${taskId}@${atMs}`;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    for (let j = 0; j < 4; j++) bytes[k * 4 + j] = (h >>> (8 * j)) & 0xff;
  }
  return Buffer.from(bytes).toString('base64');
}

/** Frozen all the way down: a built-in framework that changed a value it read would change every reader's copy. */
/** A copy of the secret no reader can change. */
function frozenSecret(s: SecretRecord): Readonly<SecretRecord> {
  return deepFreeze(structuredClone(s) as unknown as JsonValue) as unknown as SecretRecord;
}

function deepFreeze<T extends JsonValue>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const child of Object.values(v)) deepFreeze(child as JsonValue);
    Object.freeze(v);
  }
  return v;
}
