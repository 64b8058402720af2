// Each kind's environment for a replica (minimal form: the common CAIRN_* variables and the
// kinds' basic ones), from where every replica of the gang was placed. Pure.

import type { JobSpec } from './model.ts';

/** Every replica of the gang, by group and index; `ports[0]` is that replica's PORT. */
export type JobPlacement = { [group: string]: { host: string; ip: string; ports: number[] }[] };

export function replicaDnsName(job: string, group: string, index: number, domain: string): string {
  return `${job}-${group}-${index}.jobs.${domain}`;
}

export function replicaEnvironment(spec: JobSpec, group: string, index: number, placement: JobPlacement, domain: string): Record<string, string> {
  const me = placement[group]?.[index] ?? { host: '', ip: '', ports: [] };
  const peers: string[] = [];
  for (const g of spec.groups) {
    (placement[g.name] ?? []).forEach((p, i) => peers.push(`${replicaDnsName(spec.name, g.name, i, domain)}:${p.ports[0] ?? ''}`));
  }
  const env: Record<string, string> = {
    CAIRN_JOB: spec.name,
    CAIRN_GROUP: group,
    CAIRN_REPLICA_INDEX: String(index),
    CAIRN_DNS_NAME: replicaDnsName(spec.name, group, index, domain),
    CAIRN_PEERS: peers.join(','),
    HOST: me.host,
    PORT: String(me.ports[0] ?? ''),
    PORTS: me.ports.join(','),
  };
  const total = spec.groups.reduce((n, g) => n + g.replicas, 0);
  let rank = 0;
  for (const g of spec.groups) {
    if (g.name === group) break;
    rank += g.replicas;
  }
  rank += index;
  if (spec.kind === 'pytorch') {
    const first = spec.groups[0]!;
    Object.assign(env, {
      MASTER_ADDR: replicaDnsName(spec.name, first.name, 0, domain),
      MASTER_PORT: String(placement[first.name]?.[0]?.ports[0] ?? ''),
      WORLD_SIZE: String(total),
      RANK: String(rank),
      LOCAL_RANK: '0',
      PYTHONUNBUFFERED: '1',
    });
  } else if (spec.kind === 'batch') {
    Object.assign(env, { VC_TASK_INDEX: String(index), VK_TASK_INDEX: String(index), VC_WORKER_NUM: String(total) });
  } else if (spec.kind === 'pslite') {
    Object.assign(env, {
      DMLC_ROLE: group,
      DMLC_NUM_SERVER: String(spec.groups.find((g) => g.name === 'server')?.replicas ?? 0),
      DMLC_NUM_WORKER: String(spec.groups.find((g) => g.name === 'worker')?.replicas ?? 0),
      DMLC_PS_ROOT_URI: replicaDnsName(spec.name, 'scheduler', 0, domain),
      DMLC_PS_ROOT_PORT: String(placement.scheduler?.[0]?.ports[0] ?? ''),
      DMLC_NODE_HOST: me.ip,
    });
    if (group === 'scheduler') env.DMLC_USE_KUBERNETES = '1';
  }
  return env;
}
