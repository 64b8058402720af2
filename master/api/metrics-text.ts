// The master's `GET /metrics` in the Prometheus text format: the cluster as the registry holds
// it (every master), the leader's counters and histograms (the leader only: they start again
// at zero with each new leader), Raft's state (every master of a group), per-agent usage and
// GPUs (the leader, from the agents' usage reports), per-role allocation and quotas
// (role-metrics.ts), the built-in frameworks' figures (jobs, experiments, trials, queues:
// each framework's metrics.ts), build, process and Node.js figures.
// `clusterFigures` is also what Mesos' /metrics/snapshot reads (mesos-compat.ts).

import { isTerminal, TASK_STATES } from '../../shared/agent-protocol.ts';
import type { TaskState } from '../../shared/agent-messages.ts';
import { buildInfoText, processMetricsText } from '../../shared/process-metrics.ts';
import { histogramFamily, promFamily, type Sample } from '../../shared/prometheus.ts';
import { Resources } from '../../shared/resources.ts';
import type { MasterContext } from '../context.ts';
import { roleFamilies, roleRows } from './role-metrics.ts';

const MIB = 1024 * 1024;

export interface ClusterFigures {
  /** This master runs the leader's services (a single master always does). */
  leading: boolean;
  agents: { reachable: number; unreachable: number; connected: number; draining: number };
  frameworks: { connected: number; disconnected: number };
  tasks: Map<TaskState, number>;
  /** Reachable agents' resources. */
  total: Resources;
  /** What unfinished tasks on reachable agents hold. */
  used: Resources;
  /** Outstanding offers; undefined on a follower (offers live with the leader). */
  offered: Resources | undefined;
  offersOutstanding: number | undefined;
}

export function clusterFigures(ctx: MasterContext): ClusterFigures {
  const reg = ctx.registry.state;
  const master = ctx.master();
  const tasks = new Map<TaskState, number>(TASK_STATES.map((s) => [s, 0]));
  const reachableAgents = new Set<string>();
  let total = Resources.EMPTY;
  let draining = 0;
  let connected = 0;
  for (const a of reg.agents.values()) {
    if (master?.isConnected(a.id)) connected++;
    if (!a.reachable) continue;
    reachableAgents.add(a.id);
    if (a.drain) draining++;
    total = total.add(Resources.parse(a.resources));
  }
  let used = Resources.EMPTY;
  for (const t of reg.tasks.values()) {
    tasks.set(t.state, (tasks.get(t.state) ?? 0) + 1);
    if (!isTerminal(t.state) && reachableAgents.has(t.agentId)) used = used.add(Resources.parse(t.resources));
  }
  const frameworks = [...reg.frameworks.values()].filter((f) => f.removedAtMs === undefined);
  const fwConnected = frameworks.filter((f) => master?.frameworkConnected(f.id) ?? false).length;
  let offered: Resources | undefined;
  if (master) {
    offered = Resources.EMPTY;
    for (const o of master.offers.all()) offered = offered.add(o.resources);
  }
  return {
    leading: master !== undefined,
    agents: { reachable: reachableAgents.size, unreachable: reg.agents.size - reachableAgents.size, connected, draining },
    frameworks: { connected: fwConnected, disconnected: frameworks.length - fwConnected },
    tasks,
    total,
    used,
    offered,
    offersOutstanding: master?.offers.size,
  };
}

/** One family per resource, its samples the total, the used and (on the leader) the offered part. */
function resourceFamilies(f: ClusterFigures): string[] {
  const parts = (pick: (r: Resources) => number): Sample[] => [
    { labels: { kind: 'total' }, value: pick(f.total) },
    { labels: { kind: 'used' }, value: pick(f.used) },
    ...(f.offered ? [{ labels: { kind: 'offered' }, value: pick(f.offered) }] : []),
  ];
  const help = (what: string) => `${what} of reachable agents: their total, what unfinished tasks hold (used) and, on the leader, what outstanding offers hold (offered).`;
  return [
    promFamily('cairn_master_cpus', 'gauge', help('CPUs'), parts((r) => r.cpus)),
    promFamily('cairn_master_memory_bytes', 'gauge', help('Memory, in bytes,'), parts((r) => r.mem * MIB)),
    promFamily('cairn_master_disk_bytes', 'gauge', help('Disk, in bytes,'), parts((r) => r.disk * MIB)),
    promFamily('cairn_master_gpus', 'gauge', help('GPUs'), parts((r) => r.gpus)),
  ];
}

export async function masterMetricsText(ctx: MasterContext): Promise<string> {
  const registry = ctx.registry;
  const f = clusterFigures(ctx);
  const master = ctx.master();
  const families = [
    buildInfoText(),
    promFamily('cairn_master_is_leader', 'gauge', '1 when this master leads (runs the allocator, offers and the scheduler API), else 0.', [{ value: f.leading ? 1 : 0 }]),
    promFamily('cairn_master_agents', 'gauge', 'Agents known to the master, by reachability.', [
      { labels: { state: 'reachable' }, value: f.agents.reachable },
      { labels: { state: 'unreachable' }, value: f.agents.unreachable },
    ]),
    promFamily('cairn_master_agents_draining', 'gauge', 'Reachable agents an operator is draining.', [{ value: f.agents.draining }]),
    promFamily('cairn_master_frameworks', 'gauge', 'Frameworks, by connection.', [
      { labels: { state: 'connected' }, value: f.frameworks.connected },
      { labels: { state: 'disconnected' }, value: f.frameworks.disconnected },
    ]),
    promFamily('cairn_master_tasks', 'gauge', 'Tasks the registry holds, by state.', [...f.tasks].map(([state, value]) => ({ labels: { state }, value }))),
    ...resourceFamilies(f),
    promFamily('cairn_master_registry_commands_total', 'counter', 'Registry commands applied, by type.', [...registry.applied].map(([type, value]) => ({ labels: { type }, value }))),
    histogramFamily('cairn_master_registry_commit_duration_seconds', "From this master's proposal of a registry command to its commit and application: the Raft quorum's append and fsync in a group, the SQLite fsync for a single master.", registry.commitSeconds.snapshot()),
    ...roleFamilies(roleRows(registry.state)),
    ...ctx.frameworkMetrics(master?.now() ?? Date.now()),
    ...(master ? leaderFamilies(master) : []),
    ...replicationFamilies(ctx),
    await processMetricsText(),
  ];
  return families.join('\n') + '\n';
}

type Leader = NonNullable<ReturnType<MasterContext['master']>>;

/** Counters of the leader's services (they start again at zero on each new leader). */
function leaderFamilies(master: Leader): string[] {
  const m = master.metrics;
  const reg = master.registry.state;
  return [
    promFamily('cairn_master_offers_outstanding', 'gauge', 'Offers made and not yet answered.', [{ value: master.offers.size }]),
    promFamily('cairn_master_offers_total', 'counter', 'Offers made.', [{ value: m.offersMade }]),
    promFamily('cairn_master_offers_rescinded_total', 'counter', 'Offers rescinded.', [{ value: m.offersRescinded }]),
    promFamily('cairn_master_tasks_launched_total', 'counter', 'Tasks launched.', [{ value: m.tasksLaunched }]),
    promFamily('cairn_master_status_updates_total', 'counter', 'Status updates received from agents.', [{ value: m.statusUpdates }]),
    promFamily('cairn_master_scheduler_calls_total', 'counter', 'Scheduler calls, by type.', [...m.calls].map(([type, value]) => ({ labels: { type }, value }))),
    promFamily('cairn_master_bad_requests_total', 'counter', 'Requests refused as malformed or invalid.', [{ value: m.badRequests }]),
    promFamily('cairn_master_bad_agent_frames_total', 'counter', 'Agent frames that failed to decode.', [{ value: m.badAgentFrames }]),
    promFamily('cairn_master_agent_connections_total', 'counter', 'Agent connections accepted.', [{ value: m.agentConnections }]),
    promFamily('cairn_master_preemptions_total', 'counter', "Preemptions this leader committed, by cause (priority: a higher class; guarantee: a role taking back its guarantee) and the preemptor's priority class.", byCauseAndClass(m.preemptions)),
    promFamily('cairn_master_preempted_tasks_total', 'counter', "Tasks preempted by this leader's preemptions, by cause and the preempted task's priority class.", byCauseAndClass(m.preemptedTasks)),
    histogramFamily('cairn_master_allocation_duration_seconds', 'How long each allocation cycle took.', m.allocationSeconds.snapshot()),
    promFamily('cairn_master_allocation_last_duration_seconds', 'gauge', 'How long the last allocation cycle took.', [{ value: m.allocation.lastMs / 1000 }]),
    histogramFamily('cairn_master_task_launch_duration_seconds', "From a task's ACCEPT to its TASK_RUNNING, as this leader recorded them (tasks it launched).", m.launchSeconds.snapshot()),
    ...agentUsageFamilies(master, [...reg.agents.values()].filter((a) => a.reachable).map((a) => ({ id: a.id, hostname: a.hostname }))),
  ];
}

/** A count kept by `cause\tclass` as samples labelled with both. */
function byCauseAndClass(m: ReadonlyMap<string, number>): Sample[] {
  return [...m].map(([k, value]) => {
    const [cause, priorityClass] = k.split('\t');
    return { labels: { cause: cause!, priority_class: priorityClass! }, value };
  });
}

/** What each agent's tasks use and its GPUs, from the agent's latest usage report. */
function agentUsageFamilies(master: Leader, agents: { id: string; hostname: string }[]): string[] {
  const cpus: Sample[] = [];
  const mem: Sample[] = [];
  const memLimit: Sample[] = [];
  const tasks: Sample[] = [];
  const gpuUtil: Sample[] = [];
  const gpuMem: Sample[] = [];
  const gpuMemTotal: Sample[] = [];
  for (const a of agents) {
    const u = master.agentUsageReport(a.id);
    if (!u) continue;
    const labels = { agent_id: a.id, hostname: a.hostname };
    tasks.push({ labels, value: u.tasks });
    cpus.push({ labels, value: u.cpusUsed });
    mem.push({ labels, value: u.memoryBytes });
    memLimit.push({ labels, value: u.memoryLimitBytes });
    for (const g of u.gpus) {
      const gl = { ...labels, gpu: String(g.index) };
      // -1: nvidia-smi did not say.
      if (g.utilizationPercent >= 0) gpuUtil.push({ labels: gl, value: g.utilizationPercent / 100 });
      if (g.memoryUsedMib >= 0) gpuMem.push({ labels: gl, value: g.memoryUsedMib * MIB });
      if (g.memoryTotalMib >= 0) gpuMemTotal.push({ labels: gl, value: g.memoryTotalMib * MIB });
    }
  }
  return [
    promFamily('cairn_master_agent_tasks_running', 'gauge', "Tasks running on the agent, from its latest usage report.", tasks),
    promFamily('cairn_master_agent_cpus_used', 'gauge', "CPUs the agent's tasks used on average over its latest sampling interval.", cpus),
    promFamily('cairn_master_agent_memory_used_bytes', 'gauge', "Memory the agent's tasks use, in bytes.", mem),
    promFamily('cairn_master_agent_memory_limit_bytes', 'gauge', "Memory the agent's tasks may use (their mem), in bytes.", memLimit),
    promFamily('cairn_master_agent_gpu_utilization_ratio', 'gauge', 'Fraction of time a kernel ran on the GPU over the last sample period (0 to 1).', gpuUtil),
    promFamily('cairn_master_agent_gpu_memory_used_bytes', 'gauge', "GPU memory in use, in bytes.", gpuMem),
    promFamily('cairn_master_agent_gpu_memory_total_bytes', 'gauge', "GPU memory, in bytes.", gpuMemTotal),
  ];
}

function replicationFamilies(ctx: MasterContext): string[] {
  const r = ctx.replication();
  if (!r) return [];
  return [
    promFamily('cairn_master_raft_term', 'gauge', 'Current Raft term.', [{ value: r.term }]),
    promFamily('cairn_master_raft_commit_index', 'gauge', 'Raft commit index.', [{ value: r.commit }]),
    promFamily('cairn_master_raft_applied_index', 'gauge', 'Last log index applied to the registry.', [{ value: r.applied }]),
    promFamily('cairn_master_raft_bad_peer_frames_total', 'counter', 'Frames from peers refused as undecodable, unauthenticated or replayed.', [{ value: r.badPeerFrames }]),
    promFamily('cairn_master_raft_replayed_peer_frames_total', 'counter', 'Frames from peers refused as replayed (counted among the bad ones too).', [{ value: r.replayedPeerFrames }]),
  ];
}
