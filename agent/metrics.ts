// The agent's `GET /metrics` in the Prometheus text format: the tasks its executors hold (by
// executor and state), what each running task uses (from the latest usage sample: only tasks
// running then, so finished tasks' series end with them), its GPUs, and build, process and
// Node.js figures. Like the rest of the agent's API it answers only the agent's masters'
// secret, unless the operator opened it (`cairn agent --open-metrics`).

import type { TaskState } from '../shared/agent-messages.ts';
import { buildInfoText, processMetricsText } from '../shared/process-metrics.ts';
import { promFamily, type Sample } from '../shared/prometheus.ts';
import type { AgentUsage } from '../shared/agent-usage.ts';

const MIB = 1024 * 1024;

export interface AgentMetricsSource {
  /** The tasks each executor holds, by its name (process, docker). */
  executors: () => Record<string, readonly { state: TaskState }[]>;
  /** The latest usage sample; undefined when sampling is off. */
  usage: () => AgentUsage | undefined;
  /** 1 while the agent is registered with a master. */
  registered: () => boolean;
}

/** The families that need no I/O (tests call this with made-up figures). */
export function agentFamilies(src: AgentMetricsSource): string[] {
  const byExecutor: Sample[] = [];
  for (const [executor, tasks] of Object.entries(src.executors())) {
    const counts = new Map<TaskState, number>();
    for (const t of tasks) counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
    for (const [state, value] of counts) byExecutor.push({ labels: { executor, state }, value });
  }
  const u = src.usage();
  const taskLabels = (t: AgentUsage['tasks'][number]) => ({ task_id: t.taskId, framework_id: t.frameworkId });
  const tasks = u?.tasks ?? [];
  const gpus = u?.gpus ?? [];
  const gpuLabels = (g: AgentUsage['gpus'][number]) => ({ gpu: String(g.index), uuid: g.uuid });
  return [
    promFamily('cairn_agent_registered', 'gauge', '1 while the agent is registered with a master, else 0.', [{ value: src.registered() ? 1 : 0 }]),
    promFamily('cairn_agent_tasks', 'gauge', "Tasks the agent's executors hold, by executor and state (finished ones until their end is acknowledged and released).", byExecutor),
    ...(u ? [promFamily('cairn_agent_usage_sample_timestamp_seconds', 'gauge', 'When the latest usage sample was taken, in seconds since the Unix epoch.', [{ value: u.timestampMs / 1000 }])] : []),
    promFamily('cairn_task_cpu_seconds_total', 'counter', 'CPU time a running task has used, in seconds (its cgroup; else its live processes).', tasks.map((t) => ({ labels: taskLabels(t), value: t.cpuSeconds }))),
    promFamily('cairn_task_cpus_limit', 'gauge', "A running task's cpus.", tasks.map((t) => ({ labels: taskLabels(t), value: t.cpusLimit }))),
    promFamily('cairn_task_memory_used_bytes', 'gauge', 'Memory a running task uses, in bytes.', tasks.map((t) => ({ labels: taskLabels(t), value: t.memoryBytes }))),
    promFamily('cairn_task_memory_rss_bytes', 'gauge', "Resident memory of a running task's processes, in bytes.", tasks.map((t) => ({ labels: taskLabels(t), value: t.rssBytes }))),
    promFamily('cairn_task_memory_limit_bytes', 'gauge', "A running task's mem, in bytes (its hard limit under cgroups).", tasks.map((t) => ({ labels: taskLabels(t), value: t.memoryLimitBytes }))),
    promFamily('cairn_agent_gpu_utilization_ratio', 'gauge', 'Fraction of time a kernel ran on the GPU over the last sample period (0 to 1).', gpus.filter((g) => g.utilizationPercent !== null).map((g) => ({ labels: gpuLabels(g), value: g.utilizationPercent! / 100 }))),
    promFamily('cairn_agent_gpu_memory_used_bytes', 'gauge', 'GPU memory in use, in bytes.', gpus.filter((g) => g.memoryUsedMiB !== null).map((g) => ({ labels: gpuLabels(g), value: g.memoryUsedMiB! * MIB }))),
    promFamily('cairn_agent_gpu_memory_total_bytes', 'gauge', 'GPU memory, in bytes.', gpus.filter((g) => g.memoryTotalMiB !== null).map((g) => ({ labels: gpuLabels(g), value: g.memoryTotalMiB! * MIB }))),
    promFamily('cairn_agent_gpus_unhealthy', 'gauge', 'GPUs taken out of service (lost or failed, as nvidia-smi said).', [{ value: u?.unhealthyGpus.length ?? 0 }]),
  ];
}

/** The whole exposition. */
export async function agentMetricsText(src: AgentMetricsSource): Promise<string> {
  return [buildInfoText(), ...agentFamilies(src), await processMetricsText()].join('\n') + '\n';
}
