// Mesos' read endpoints' shapes (master/api/mesos-compat.ts) from a made-up cluster: field
// names and units as Mesos writes them (resources objects, seconds, pids, per-state counts,
// flat metric names), what a viewer may not see left out; and the Prometheus text helpers.

import { describe, expect, it } from 'vitest';
import { mesosMetricsSnapshot, mesosResources, mesosState, mesosStateSummary, type MesosInput } from '../../master/api/mesos-compat.ts';
import type { ClusterFigures } from '../../master/api/metrics-text.ts';
import type { AgentRecord, FrameworkRecord, TaskRecord } from '../../master/registry/commands.ts';
import { TASK_STATES } from '../../shared/agent-protocol.ts';
import { Histogram, histogramFamily, promFamily } from '../../shared/prometheus.ts';
import { Resources } from '../../shared/resources.ts';

const agent = (id: string, extra: Partial<AgentRecord> = {}): AgentRecord => ({
  id, hostname: `${id}.example`, ip: '10.0.0.1', httpPort: 5051, resources: 'cpus:4;mem:8192;disk:1000;ports:[31000-31999,33000-33009]',
  attributes: { rack: 'r1' }, reachable: true, registeredAtMs: 1_700_000_000_000, ...extra,
});
const framework = (id: string, principal: string, extra: Partial<FrameworkRecord> = {}): FrameworkRecord => ({
  id, name: `${id}-name`, user: 'alice', role: 'ml', principal, failoverTimeoutS: 600, registeredAtMs: 1_700_000_001_000, ...extra,
});
const task = (id: string, frameworkId: string, agentId: string, state: TaskRecord['state'], resources = 'cpus:1;mem:512'): TaskRecord => ({
  id, name: id, frameworkId, agentId, resources, command: { shell: true, value: 'sleep 1', arguments: [], environment: [] },
  labels: [{ name: 'team', value: 'a' }], killGraceMs: 0, state, message: '', launchedAtMs: 1_700_000_002_000, updatedAtMs: 1_700_000_003_000,
});

function input(over: Partial<MesosInput> = {}): MesosInput {
  return {
    version: '1.2.3',
    self: { id: '1', url: 'http://10.0.0.9:5050', hostname: 'm1' },
    leaderUrl: 'http://10.0.0.9:5050',
    startTimeMs: 1_700_000_000_500,
    electedTimeMs: 1_700_000_000_900,
    agents: [agent('a1'), agent('a2', { drain: { sinceMs: 1, deadlineAtMs: null } as AgentRecord['drain'] }), agent('a3', { reachable: false })],
    frameworks: [framework('f1', 'alice'), framework('f2', 'bob'), framework('f0', 'alice', { removedAtMs: 1_700_000_005_000 })],
    tasks: [task('t1', 'f1', 'a1', 'TASK_RUNNING'), task('t2', 'f1', 'a1', 'TASK_FINISHED'), task('t3', 'f2', 'a2', 'TASK_RUNNING', 'cpus:2;mem:1024'), task('t4', 'f1', 'a3', 'TASK_UNREACHABLE')],
    offers: [{ id: 'o1', frameworkId: 'f1', agentId: 'a1', resources: Resources.parse('cpus:3;mem:7680') }],
    frameworkConnected: (id) => id === 'f1',
    mayView: (f) => f.principal === 'alice',
    ...over,
  };
}

describe("Mesos' /master/state", () => {
  const st = mesosState(input());

  it('describes the master as Mesos does: pids, seconds, agent counts, the leader', () => {
    expect(st).toMatchObject({
      version: '1.2.3', id: '1', pid: 'master@10.0.0.9:5050', hostname: 'm1', leader: 'master@10.0.0.9:5050',
      start_time: 1_700_000_000.5, elected_time: 1_700_000_000.9,
      activated_slaves: 1, deactivated_slaves: 1, unreachable_slaves: 1,
      leader_info: { id: '1', pid: 'master@10.0.0.9:5050', hostname: '10.0.0.9', port: 5050 },
      recovered_slaves: [], orphan_tasks: [], unregistered_frameworks: [],
    });
  });

  it("lists reachable agents with total, used and offered resources as Mesos' objects", () => {
    expect(st.slaves.map((s) => s.id)).toEqual(['a1', 'a2']);
    expect(st.slaves[0]).toEqual({
      id: 'a1', hostname: 'a1.example', port: 5051, attributes: { rack: 'r1' }, pid: 'slave(1)@10.0.0.1:5051',
      registered_time: 1_700_000_000,
      resources: { cpus: 4, gpus: 0, mem: 8192, disk: 1000, ports: '[31000-31999, 33000-33009]' },
      used_resources: { cpus: 1, gpus: 0, mem: 512, disk: 0 },
      offered_resources: { cpus: 3, gpus: 0, mem: 7680, disk: 0 },
      reserved_resources: {},
      unreserved_resources: { cpus: 4, gpus: 0, mem: 8192, disk: 1000, ports: '[31000-31999, 33000-33009]' },
      active: true, capabilities: [],
    });
    expect(st.slaves[1]!.active).toBe(false); // draining: deactivated, as Mesos' maintenance does
  });

  it("sorts a framework's tasks into tasks, unreachable_tasks and completed_tasks; removed frameworks are completed", () => {
    expect(st.frameworks.map((f) => f.id)).toEqual(['f1']); // f2 is bob's: not viewable
    const f1 = st.frameworks[0]!;
    expect(f1).toMatchObject({
      id: 'f1', name: 'f1-name', user: 'alice', role: 'ml', principal: 'alice', active: true, connected: true,
      failover_timeout: 600, registered_time: 1_700_000_001, unregistered_time: 0, checkpoint: true,
      used_resources: { cpus: 1, mem: 512 }, offered_resources: { cpus: 3, mem: 7680 }, resources: { cpus: 4, mem: 8192 },
      offers: [{ id: 'o1', framework_id: 'f1', slave_id: 'a1', resources: { cpus: 3, mem: 7680, gpus: 0, disk: 0 } }],
      executors: [],
    });
    expect(f1.tasks).toEqual([{
      id: 't1', name: 't1', framework_id: 'f1', executor_id: '', slave_id: 'a1', state: 'TASK_RUNNING',
      resources: { cpus: 1, gpus: 0, mem: 512, disk: 0 }, role: 'ml',
      statuses: [{ state: 'TASK_RUNNING', timestamp: 1_700_000_003 }], user: 'alice', labels: [{ key: 'team', value: 'a' }],
    }]);
    expect(f1.unreachable_tasks.map((t) => t.id)).toEqual(['t4']);
    expect(f1.completed_tasks.map((t) => t.id)).toEqual(['t2']);
    expect(st.completed_frameworks.map((f) => f.id)).toEqual(['f0']);
    expect(st.completed_frameworks[0]).toMatchObject({ active: false, unregistered_time: 1_700_000_005 });
  });

  it("gives a task's state history as statuses, oldest first, where the registry keeps one", () => {
    const t = { ...task('h', 'f1', 'a1', 'TASK_RUNNING'), history: [{ state: 'TASK_STAGING', reason: '', message: '', source: 'SOURCE_MASTER', atMs: 1000 }, { state: 'TASK_RUNNING', reason: '', message: '', source: 'SOURCE_AGENT', atMs: 2500 }] };
    const s = mesosState(input({ tasks: [t as TaskRecord] }));
    expect(s.frameworks[0]!.tasks[0]!.statuses).toEqual([{ state: 'TASK_STAGING', timestamp: 1 }, { state: 'TASK_RUNNING', timestamp: 2.5 }]);
  });

  it('names no leader while none is known, and no elected time on a follower', () => {
    const s = mesosState(input({ leaderUrl: undefined, electedTimeMs: undefined }));
    expect(s).not.toHaveProperty('leader');
    expect(s).not.toHaveProperty('leader_info');
    expect(s).not.toHaveProperty('elected_time');
  });

  it('writes a Docker task as a DOCKER container with its image', () => {
    const t: TaskRecord = { ...task('c', 'f1', 'a1', 'TASK_RUNNING'), container: { type: 'docker', docker: { image: 'busybox:1', network: 'bridge', portMappings: [], pullPolicy: 'if_not_present' } as never, volumes: [] } };
    expect(mesosState(input({ tasks: [t] })).frameworks[0]!.tasks[0]).toMatchObject({ container: { type: 'DOCKER', docker: { image: 'busybox:1', network: 'BRIDGE' } } });
  });
});

describe("Mesos' /master/state-summary", () => {
  it('gives each reachable agent and viewable framework its per-state task counts and the ids on the other side', () => {
    const sum = mesosStateSummary(input());
    expect(sum.hostname).toBe('m1');
    expect(sum.slaves.map((s) => s.id)).toEqual(['a1', 'a2']);
    expect(sum.slaves[0]).toMatchObject({ id: 'a1', TASK_RUNNING: 1, TASK_FINISHED: 1, TASK_STAGING: 0, TASK_UNREACHABLE: 0, framework_ids: ['f1'] });
    // Bob's task on a2 is not counted for a viewer who may not see it.
    expect(sum.slaves[1]).toMatchObject({ id: 'a2', TASK_RUNNING: 0, framework_ids: [] });
    expect(sum.frameworks).toHaveLength(1);
    expect(sum.frameworks[0]).toMatchObject({ id: 'f1', name: 'f1-name', TASK_RUNNING: 1, TASK_FINISHED: 1, TASK_UNREACHABLE: 1, slave_ids: ['a1', 'a3'], active: true });
  });
});

describe("Mesos' /metrics/snapshot", () => {
  const figures: ClusterFigures = {
    leading: true,
    agents: { reachable: 3, unreachable: 1, connected: 2, draining: 1 },
    frameworks: { connected: 2, disconnected: 1 },
    tasks: new Map(TASK_STATES.map((s) => [s, s === 'TASK_RUNNING' ? 5 : s === 'TASK_FAILED' ? 2 : 0])),
    total: Resources.parse('cpus:8;mem:16384;disk:100;gpus:2'),
    used: Resources.parse('cpus:2;mem:4096;gpus:1'),
    offered: Resources.parse('cpus:6'),
    offersOutstanding: 3,
  };

  it("flattens the cluster into Mesos' metric names; percents are fractions", () => {
    const snap = mesosMetricsSnapshot(figures, 42, { statusUpdates: 9, calls: new Map([['ACCEPT', 4], ['DECLINE', 1]]), allocationRuns: 17, allocationLastMs: 0.5, agentConnections: 3 });
    expect(snap).toMatchObject({
      'master/uptime_secs': 42, 'master/elected': 1,
      'master/slaves_connected': 2, 'master/slaves_disconnected': 1, 'master/slaves_active': 2, 'master/slaves_inactive': 1, 'master/slaves_unreachable': 1,
      'master/frameworks_connected': 2, 'master/frameworks_disconnected': 1, 'master/outstanding_offers': 3,
      'master/tasks_running': 5, 'master/tasks_failed': 2, 'master/tasks_staging': 0, 'master/tasks_unreachable': 0,
      'master/cpus_total': 8, 'master/cpus_used': 2, 'master/cpus_percent': 0.25,
      'master/mem_total': 16384, 'master/mem_used': 4096, 'master/mem_percent': 0.25,
      'master/gpus_total': 2, 'master/gpus_used': 1, 'master/gpus_percent': 0.5, 'master/disk_percent': 0,
      'master/messages_launch_tasks': 4, 'master/messages_decline_offers': 1, 'master/messages_status_update': 9,
      'allocator/mesos/allocation_runs': 17, 'allocator/mesos/allocation_run_ms': 0.5,
    });
    for (const [k, v] of Object.entries(snap)) expect(typeof v, k).toBe('number');
  });

  it('on a follower: not elected, none of the leader counters', () => {
    const snap = mesosMetricsSnapshot({ ...figures, leading: false, offered: undefined, offersOutstanding: undefined, agents: { ...figures.agents, connected: 0 } }, 1, undefined);
    expect(snap).toMatchObject({ 'master/elected': 0, 'master/outstanding_offers': 0, 'master/slaves_disconnected': 0, 'master/messages_launch_tasks': 0, 'master/tasks_running': 5 });
  });
});

describe('the Prometheus text helpers', () => {
  it('renders histograms with cumulative buckets, +Inf, sum and count', () => {
    const h = new Histogram([0.1, 1]);
    for (const v of [0.05, 0.5, 0.7, 3]) h.observe(v);
    h.observe(Number.NaN); // ignored
    expect(histogramFamily('x_seconds', 'X.', h.snapshot())).toBe([
      '# HELP x_seconds X.', '# TYPE x_seconds histogram',
      'x_seconds_bucket{le="0.1"} 1', 'x_seconds_bucket{le="1"} 3', 'x_seconds_bucket{le="+Inf"} 4',
      'x_seconds_sum 4.25', 'x_seconds_count 4',
    ].join('\n'));
  });

  it('escapes label values and refuses bounds that do not ascend', () => {
    expect(promFamily('y', 'gauge', 'Y.', [{ labels: { a: 'q"\\\nz' }, value: 2 }])).toBe('# HELP y Y.\n# TYPE y gauge\ny{a="q\\"\\\\\\nz"} 2');
    expect(() => new Histogram([1, 1])).toThrow();
  });

  it("writes Mesos' ports as ranges", () => {
    expect(mesosResources(Resources.parse('cpus:0.5;ports:[1-2,5-5]'))).toEqual({ cpus: 0.5, gpus: 0, mem: 0, disk: 0, ports: '[1-2, 5-5]' });
  });
});
