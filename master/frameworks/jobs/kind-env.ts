// The environment each replica of a job is started with: what its kind's programs read to
// find each other (ps-lite's DMLC_*, TensorFlow's TF_CONFIG, torch.distributed's MASTER_ADDR
// and RANK, Volcano's VC_*), and Cairn's own CAIRN_* variables that every replica gets. Peers
// are named by their DNS names (`<job>-<group>-<index>.jobs.<domain>`), which stay the same
// when a replica moves, with the ports their offers gave them. Pure: the placement of the
// whole gang is passed in. The template's own env and CAIRN_JOB_DIR are the engine's to add.
// A replica not placed yet (outside a gang smaller than the job) has no port: peers list it by
// its DNS name alone. Nothing here throws: a replica's environment never stops a launch.

import type { JobSpec } from '../../../shared/jobs/model.ts';

/** The framework that runs every job; its name is the DNS label above the replicas' names. */
export const JOBS_FRAMEWORK_NAME = 'jobs';

/** Where every replica of the gang runs, by group and index; `ports[0]` is that replica's PORT. */
export type JobPlacement = { [group: string]: { host: string; ip: string; ports: number[] }[] };

function taskName(job: string, group: string, index: number): string {
  return `${job}-${group}-${index}`;
}

/** A replica's DNS name, as the masters serve it while it runs (mesos-dns: task.framework.domain). */
export function replicaDnsName(job: string, group: string, index: number, domain: string): string {
  const d = domain.trim().toLowerCase().replace(/^\.+|\.+$/g, '');
  return `${taskName(job, group, index)}.${JOBS_FRAMEWORK_NAME}.${d}`;
}

/** Volcano's spelling of a task name in a variable: upper case, '-' as '_'. */
export function groupEnvName(group: string): string {
  return group.toUpperCase().replace(/-/g, '_');
}

type Env = Record<string, string>;

interface Gang {
  spec: JobSpec;
  placement: JobPlacement;
  domain: string;
}

const NOWHERE = { host: '', ip: '', ports: [] as number[] };

/**
 * The lists every replica of a gang gets alike (CAIRN_PEERS, VC_<GROUP>_HOSTS), made once per
 * placement: the engine asks for every replica's environment with one placement object, and
 * building them per replica made a 1,000-replica gang's environments cost a second.
 */
const shared = new WeakMap<JobPlacement, Map<string, string>>();

function once(g: Gang, key: string, make: () => string): string {
  let m = shared.get(g.placement);
  if (!m) {
    m = new Map();
    shared.set(g.placement, m);
  }
  const k = `${g.spec.name}\n${g.domain}\n${key}`;
  let v = m.get(k);
  if (v === undefined) {
    v = make();
    m.set(k, v);
  }
  return v;
}

function placed(g: Gang, group: string, index: number): { host: string; ip: string; ports: number[] } {
  return g.placement[group]?.[index] ?? NOWHERE;
}

/** A replica's PORT, '' when it has none yet. */
function portOf(g: Gang, group: string, index: number): string {
  const p = placed(g, group, index).ports[0];
  return p === undefined ? '' : String(p);
}

function replicas(spec: JobSpec, group: string): number {
  return spec.groups.find((x) => x.name === group)?.replicas ?? 0;
}

/** `dnsname:port` of every replica of `group`, by index. */
function addresses(g: Gang, group: string): string[] {
  return Array.from({ length: replicas(g.spec, group) }, (_, i) => {
    const name = replicaDnsName(g.spec.name, group, i, g.domain);
    const port = portOf(g, group, i);
    return port === '' ? name : `${name}:${port}`;
  });
}

/** `ip:port` of every replica of `group`, by index, in CAIRN_PEERS' order. */
function ipAddresses(g: Gang, group: string): string[] {
  return Array.from({ length: replicas(g.spec, group) }, (_, i) => {
    const port = portOf(g, group, i);
    const ip = placed(g, group, i).ip;
    return port === '' ? ip : `${ip}:${port}`;
  });
}

/** ps-lite: roles, counts, the scheduler's address; servers and workers bind their host's address. */
function psliteEnv(g: Gang, group: string, index: number): Env {
  const env: Env = {
    DMLC_ROLE: group,
    DMLC_NUM_SERVER: String(replicas(g.spec, 'server')),
    DMLC_NUM_WORKER: String(replicas(g.spec, 'worker')),
    DMLC_PS_ROOT_URI: replicaDnsName(g.spec.name, 'scheduler', 0, g.domain),
    DMLC_PS_ROOT_PORT: portOf(g, 'scheduler', 0),
    DMLC_NODE_HOST: placed(g, group, index).ip,
  };
  // ps-lite's scheduler binds DMLC_PS_ROOT_URI:ROOT_PORT, and a DNS name is not an address
  // it can bind; with this flag it binds 0.0.0.0 instead.
  if (group === 'scheduler') env.DMLC_USE_KUBERNETES = '1';
  return env;
}

/** TensorFlow: TF_CONFIG with every replica but the evaluator in the cluster (as TFJob does). */
function tensorflowEnv(g: Gang, group: string, index: number): Env {
  const total = g.spec.groups.reduce((n, x) => n + x.replicas, 0);
  // A single replica is not a cluster; TensorFlow then trains locally.
  if (total <= 1) return {};
  const cluster: Record<string, string[]> = {};
  for (const x of g.spec.groups) {
    if (x.name !== 'evaluator') cluster[x.name] = addresses(g, x.name);
  }
  return { TF_CONFIG: JSON.stringify({ cluster, task: { type: group, index } }) };
}

/** torch.distributed's env:// rendezvous: the master is rank 0, worker i is rank i+1. */
function pytorchEnv(g: Gang, group: string, index: number): Env {
  return {
    MASTER_ADDR: replicaDnsName(g.spec.name, 'master', 0, g.domain),
    MASTER_PORT: portOf(g, 'master', 0),
    WORLD_SIZE: String(g.spec.groups.reduce((n, x) => n + x.replicas, 0)),
    RANK: String(group === 'master' ? index : replicas(g.spec, 'master') + index),
    LOCAL_RANK: '0',
    PYTHONUNBUFFERED: '1',
  };
}

/**
 * Volcano's env and svc plugins: the task index, and every task's hosts and count.
 * VC_WORKER_NUM is the replica's own group's count, except that a group named `worker` sets
 * it for everyone (it is VC_<GROUP>_NUM of that group, as the svc plugin writes it).
 */
function batchEnv(g: Gang, group: string, index: number): Env {
  const env: Env = {
    VC_TASK_INDEX: String(index),
    VK_TASK_INDEX: String(index),
    VC_WORKER_NUM: String(replicas(g.spec, group)),
  };
  for (const x of g.spec.groups) {
    const name = groupEnvName(x.name);
    env[`VC_${name}_HOSTS`] = once(g, `hosts:${x.name}:${x.replicas}`, () => Array.from({ length: x.replicas }, (_, i) => replicaDnsName(g.spec.name, x.name, i, g.domain)).join(','));
    env[`VC_${name}_NUM`] = String(x.replicas);
  }
  return env;
}

const KIND_ENV = { pslite: psliteEnv, tensorflow: tensorflowEnv, pytorch: pytorchEnv, batch: batchEnv } as const;

/** The environment of replica `index` of `group` in `spec`, the gang placed as `placement` says. */
export function replicaEnvironment(spec: JobSpec, group: string, index: number, placement: JobPlacement, domain: string): Record<string, string> {
  const g: Gang = { spec, placement, domain };
  const me = placed(g, group, index);
  const env: Env = {
    CAIRN_JOB: spec.name,
    CAIRN_GROUP: group,
    CAIRN_REPLICA_INDEX: String(index),
    CAIRN_DNS_NAME: replicaDnsName(spec.name, group, index, domain),
    CAIRN_PEERS: once(g, `peers:${spec.groups.map((x) => `${x.name}=${x.replicas}`).join(',')}`, () => spec.groups.flatMap((x) => addresses(g, x.name)).join(',')),
    // The same peers by address, for a task on an agent that cannot give it the task resolver
    // (not root): names resolve there only through CAIRN_DNS, addresses everywhere.
    CAIRN_PEER_ADDRESSES: once(g, `peer-addresses:${spec.groups.map((x) => `${x.name}=${x.replicas}`).join(',')}`, () => spec.groups.flatMap((x) => ipAddresses(g, x.name)).join(',')),
    HOST: me.host,
    PORT: portOf(g, group, index),
    PORTS: me.ports.join(','),
  };
  me.ports.forEach((p, i) => {
    env[`PORT${i}`] = String(p);
  });
  return { ...env, ...KIND_ENV[spec.kind](g, group, index) };
}
