// Metrics and Mesos' read endpoints of a real cluster (a master and an agent as processes, a
// task running): the master's and the agent's /metrics pass `promtool check metrics` and carry
// the families Prometheus users look for (build info, the leader gauge, histograms, used
// beside total, per-agent and per-task usage, process and Node.js figures); both need a
// credential unless opened; /master/state, /state.json, /master/state-summary,
// /metrics/snapshot and /master/redirect answer in Mesos' shapes.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentAuthHeaders, authFetch } from '../harness/credentials.ts';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { promtool, promtoolProblems, sample } from '../harness/prometheus-text.ts';

const cleanup = new Cleanup();
let scheduler: RawScheduler | undefined;
let master: CairnProcess;
let agent: CairnProcess;
let agentId = '';

async function masterMetrics(): Promise<string> {
  const r = await authFetch(`${master.url}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
}

async function agentMetrics(): Promise<string> {
  const r = await fetch(`${agent.url}/metrics`, { headers: agentAuthHeaders() });
  expect(r.status).toBe(200);
  return r.text();
}

beforeAll(async () => {
  master = await startMasterProcess(cleanup);
  agent = await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024;disk:2048;ports:[31000-31009]', extra: ['--usage-interval', '200ms'] });
  const s = new RawScheduler(master.url);
  scheduler = s;
  expect((await s.subscribe({ user: '', name: 'metrics-fw', role: 'metrics', failover_timeout: 600 })).status).toBe(200);
  autoAck(s);
  const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
  agentId = offer.agent_id.value;
  const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('sleeper', agentId, { cpus: 0.5, mem: 64 }, 'sleep 300')] } }], filters: { refuse_seconds: 0.1 } } });
  expect(r.status).toBe(202);
  await waitFor('the task running', () => s.events.some((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING'), 30_000);
}, 90_000);

afterAll(async () => {
  scheduler?.close();
  await cleanup.run();
}, 60_000);

describe("the master's /metrics", () => {
  it('passes promtool and carries build info, the leader gauge, histograms, used beside total, per-agent usage and process figures', async () => {
    // The agent's usage report (every 200 ms) reaches the leader with the task in it.
    const text = await waitFor('a usage report with the task', async () => {
      const t = await masterMetrics();
      return sample(t, `cairn_master_agent_tasks_running{agent_id="${agentId}",hostname="localhost"}`) === 1 ? t : undefined;
    }, 20_000);
    if (promtool) expect(promtoolProblems(text)).toBe('');

    expect(text).toMatch(/^cairn_build_info\{version="[^"]+",(commit="[^"]+",)?node_version="v\d+\.\d+\.\d+"\} 1$/m);
    expect(sample(text, 'cairn_master_is_leader')).toBe(1);
    // Totals of the reachable agent, what the task holds, and what is offered beside.
    expect(sample(text, 'cairn_master_cpus{kind="total"}')).toBe(2);
    expect(sample(text, 'cairn_master_cpus{kind="used"}')).toBe(0.5);
    expect(sample(text, 'cairn_master_memory_bytes{kind="total"}')).toBe(1024 * 1024 * 1024);
    expect(sample(text, 'cairn_master_memory_bytes{kind="used"}')).toBe(64 * 1024 * 1024);
    expect(sample(text, 'cairn_master_disk_bytes{kind="total"}')).toBe(2048 * 1024 * 1024);
    expect(sample(text, 'cairn_master_gpus{kind="total"}')).toBe(0);
    expect(sample(text, 'cairn_master_cpus{kind="offered"}')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'cairn_master_tasks{state="TASK_RUNNING"}')).toBe(1);
    // Histograms: the launch (ACCEPT to RUNNING), allocation cycles and registry commits.
    expect(text).toContain('# TYPE cairn_master_task_launch_duration_seconds histogram');
    expect(sample(text, 'cairn_master_task_launch_duration_seconds_count')).toBe(1);
    expect(sample(text, 'cairn_master_task_launch_duration_seconds_bucket{le="+Inf"}')).toBe(1);
    expect(sample(text, 'cairn_master_task_launch_duration_seconds_sum')).toBeGreaterThan(0);
    expect(sample(text, 'cairn_master_allocation_duration_seconds_count')).toBeGreaterThan(0);
    expect(sample(text, 'cairn_master_registry_commit_duration_seconds_count')).toBeGreaterThan(0);
    // Per-agent usage from its report: the task's memory is within its limit.
    const memUsed = sample(text, `cairn_master_agent_memory_used_bytes{agent_id="${agentId}",hostname="localhost"}`);
    expect(memUsed).toBeGreaterThanOrEqual(0);
    expect(sample(text, `cairn_master_agent_memory_limit_bytes{agent_id="${agentId}",hostname="localhost"}`)).toBe(64 * 1024 * 1024);
    // Process and Node.js figures.
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(1_000_000);
    expect(sample(text, 'process_start_time_seconds')).toBeGreaterThan(1_600_000_000);
    expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    // No counter-like name on a gauge, no gauge named like a counter.
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      expect(m[1]!.endsWith('_total'), `${m[1]} is a ${m[2]}`).toBe(m[2] === 'counter');
    }
  });

  it('needs a credential', async () => {
    expect((await fetch(`${master.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${master.url}/metrics/snapshot`)).status).toBe(401);
  });
});

describe("the agent's /metrics", () => {
  it("passes promtool and carries its executors' tasks, the running task's usage and process figures", async () => {
    const text = await waitFor('a sample with the task', async () => {
      const t = await agentMetrics();
      return (sample(t, 'cairn_task_memory_used_bytes{task_id="sleeper",framework_id="' + scheduler!.frameworkId + '"}') ?? -1) >= 0 ? t : undefined;
    }, 20_000);
    if (promtool) expect(promtoolProblems(text)).toBe('');
    const task = `task_id="sleeper",framework_id="${scheduler!.frameworkId}"`;
    expect(sample(text, 'cairn_agent_registered')).toBe(1);
    expect(sample(text, 'cairn_agent_tasks{executor="process",state="TASK_RUNNING"}')).toBe(1);
    expect(sample(text, `cairn_task_cpu_seconds_total{${task}}`)).toBeGreaterThanOrEqual(0);
    expect(sample(text, `cairn_task_cpus_limit{${task}}`)).toBe(0.5);
    expect(sample(text, `cairn_task_memory_limit_bytes{${task}}`)).toBe(64 * 1024 * 1024);
    expect(text).toMatch(/^cairn_build_info\{.*\} 1$/m);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(1_000_000);
  });

});

describe("Mesos' read endpoints", () => {
  it('/master/state and its aliases in Mesos\' shape', async () => {
    const r = await authFetch(`${master.url}/master/state`);
    expect(r.status).toBe(200);
    const st = await r.json();
    const port = new URL(master.url).port;
    expect(st.pid).toBe(`master@127.0.0.1:${port}`);
    expect(st.leader).toBe(`master@127.0.0.1:${port}`);
    expect(st.leader_info).toMatchObject({ hostname: '127.0.0.1', port: Number(port) });
    expect(typeof st.version).toBe('string');
    expect(st.start_time).toBeGreaterThan(1_600_000_000);
    expect(st.elected_time).toBeGreaterThan(1_600_000_000);
    expect(st.activated_slaves).toBe(1);
    expect(st.deactivated_slaves).toBe(0);
    const slave = st.slaves.find((a: any) => a.id === agentId);
    expect(slave).toMatchObject({
      hostname: 'localhost',
      active: true,
      resources: { cpus: 2, mem: 1024, disk: 2048, gpus: 0, ports: '[31000-31009]' },
      used_resources: { cpus: 0.5, mem: 64, disk: 0, gpus: 0 },
    });
    expect(slave.pid).toMatch(/^slave\(1\)@127\.0\.0\.1:\d+$/);
    const fw = st.frameworks.find((f: any) => f.id === scheduler!.frameworkId);
    expect(fw).toMatchObject({ name: 'metrics-fw', role: 'metrics', active: true, connected: true, used_resources: { cpus: 0.5, mem: 64 } });
    expect(fw.tasks).toHaveLength(1);
    expect(fw.tasks[0]).toMatchObject({ id: 'sleeper', name: 'sleeper', framework_id: fw.id, slave_id: agentId, state: 'TASK_RUNNING', role: 'metrics', resources: { cpus: 0.5, mem: 64 } });
    expect(fw.tasks[0].statuses.at(-1)).toMatchObject({ state: 'TASK_RUNNING' });
    expect(fw.completed_tasks).toEqual([]);
    for (const alias of ['/state', '/state.json', '/master/state.json']) {
      const a = await (await authFetch(`${master.url}${alias}`)).json();
      expect(Object.keys(a).sort(), alias).toEqual(Object.keys(st).sort());
      expect(a.frameworks[0].tasks[0].id).toBe('sleeper');
    }
    expect((await fetch(`${master.url}/master/state`)).status).toBe(401);
  });

  it('/master/state-summary counts tasks per agent and framework', async () => {
    const sum = await (await authFetch(`${master.url}/master/state-summary`)).json();
    const slave = sum.slaves.find((a: any) => a.id === agentId);
    expect(slave).toMatchObject({ hostname: 'localhost', TASK_RUNNING: 1, TASK_FINISHED: 0, framework_ids: [scheduler!.frameworkId] });
    const fw = sum.frameworks.find((f: any) => f.id === scheduler!.frameworkId);
    expect(fw).toMatchObject({ name: 'metrics-fw', TASK_RUNNING: 1, slave_ids: [agentId] });
  });

  it("/metrics/snapshot is flat JSON of Mesos' metric names", async () => {
    const snap = await (await authFetch(`${master.url}/metrics/snapshot`)).json();
    expect(snap).toMatchObject({
      'master/elected': 1,
      'master/tasks_running': 1,
      'master/cpus_total': 2,
      'master/cpus_used': 0.5,
      'master/cpus_percent': 0.25,
      'master/mem_total': 1024,
      'master/mem_used': 64,
      'master/slaves_active': 1,
      'master/slaves_connected': 1,
      'master/frameworks_connected': 1,
    });
    expect(snap['master/messages_launch_tasks']).toBeGreaterThanOrEqual(1);
    expect(snap['allocator/mesos/allocation_runs']).toBeGreaterThan(0);
    for (const v of Object.values(snap)) expect(typeof v).toBe('number');
  });

  it('/master/redirect answers 307 to the leader', async () => {
    const r = await authFetch(`${master.url}/master/redirect`, { redirect: 'manual' });
    expect(r.status).toBe(307);
    expect(r.headers.get('location')).toBe(master.url);
  });
});

// Last: the second agent it starts joins the cluster's totals.
describe('the agent with --open-metrics', () => {
  it("answers only the agent's masters' secret, unless --open-metrics opens it (and only it)", async () => {
    expect((await fetch(`${agent.url}/metrics`)).status).toBe(401);
    const open = await startAgentProcess(cleanup, master.url, { resources: 'cpus:1;mem:256', extra: ['--open-metrics'] });
    const r = await fetch(`${open.url}/metrics`);
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toContain('# TYPE cairn_agent_tasks gauge');
    if (promtool) expect(promtoolProblems(text)).toBe('');
    expect((await fetch(`${open.url}/api/v1/usage`)).status).toBe(401);
    await open.kill();
  });
});
