// Each kind's replica environment, against the contracts of the programs that read it:
// ps-lite's DMLC_*, TensorFlow's TF_CONFIG, torch.distributed's env:// rendezvous, Volcano's
// env and svc plugins, and Cairn's own CAIRN_* variables.

import { describe, expect, it } from 'vitest';
import { groupEnvName, replicaDnsName, replicaEnvironment, type JobPlacement } from '../../master/frameworks/jobs/kind-env.ts';
import { validateJobSpec } from '../../shared/jobs/spec-validate.ts';
import { taskDnsName } from '../../master/dns/names.ts';
import type { JobSpec } from '../../shared/jobs/model.ts';

function spec(name: string, kind: string, groups: [string, number][]): JobSpec {
  return validateJobSpec({ name, kind, groups: groups.map(([g, replicas]) => ({ name: g, replicas, template: { command: 'x' } })) });
}

/** Every replica of `s` on host-N (10.0.0.N), replica k of the job given ports 31000+10k and 31000+10k+1. */
function placeAll(s: JobSpec): JobPlacement {
  const out: JobPlacement = {};
  let k = 0;
  for (const g of s.groups) {
    out[g.name] = Array.from({ length: g.replicas }, () => {
      const n = k++;
      return { host: `host-${n}`, ip: `10.0.0.${n}`, ports: [31000 + 10 * n, 31001 + 10 * n] };
    });
  }
  return out;
}

describe('replicaDnsName', () => {
  it('is <job>-<group>-<index>.jobs.<domain>, the name the masters serve for the task', () => {
    expect(replicaDnsName('sgd', 'worker', 3, 'cairn')).toBe('sgd-worker-3.jobs.cairn');
    expect(replicaDnsName('sgd', 'scheduler', 0, 'Example.COM.')).toBe('sgd-scheduler-0.jobs.example.com');
    // The DNS zone names a task `label(task name).framework.domain`: the same name.
    expect(replicaDnsName('dist-mnist', 'ps', 1, 'cairn')).toBe(taskDnsName('dist-mnist-ps-1', 'jobs', 'cairn'));
  });
});

describe('replicaEnvironment: every replica', () => {
  it('gets CAIRN_* with its peers, its ports and its host', () => {
    const s = spec('sweep', 'batch', [['worker', 2], ['reduce', 1]]);
    const env = replicaEnvironment(s, 'worker', 1, placeAll(s), 'cairn');
    expect(env).toMatchObject({
      CAIRN_JOB: 'sweep',
      CAIRN_GROUP: 'worker',
      CAIRN_REPLICA_INDEX: '1',
      CAIRN_DNS_NAME: 'sweep-worker-1.jobs.cairn',
      CAIRN_PEERS: 'sweep-worker-0.jobs.cairn:31000,sweep-worker-1.jobs.cairn:31010,sweep-reduce-0.jobs.cairn:31020',
      HOST: 'host-1',
      PORT: '31010',
      PORT0: '31010',
      PORT1: '31011',
      PORTS: '31010,31011',
    });
  });

  it('lists a replica not placed yet (outside a smaller gang) by name alone, and never throws', () => {
    const s = spec('part', 'batch', [['worker', 3]]);
    const placement: JobPlacement = { worker: [{ host: 'h0', ip: '10.0.0.1', ports: [31000] }, { host: 'h1', ip: '10.0.0.2', ports: [31001] }, { host: '', ip: '', ports: [] }] };
    expect(replicaEnvironment(s, 'worker', 0, placement, 'cairn').CAIRN_PEERS).toBe('part-worker-0.jobs.cairn:31000,part-worker-1.jobs.cairn:31001,part-worker-2.jobs.cairn');
    // By address too (for agents that cannot give tasks the task resolver), in the same order.
    expect(replicaEnvironment(s, 'worker', 0, placement, 'cairn').CAIRN_PEER_ADDRESSES).toBe('10.0.0.1:31000,10.0.0.2:31001,');
    expect(replicaEnvironment(s, 'worker', 0, {}, 'cairn').PORT).toBe('');
  });
});

describe('replicaEnvironment: pslite', () => {
  const s = spec('sgd', 'pslite', [['scheduler', 1], ['server', 2], ['worker', 4]]);
  const placement = placeAll(s);

  it('tells every node the counts and the scheduler by DNS name and PORT', () => {
    for (const [group, index, n] of [['scheduler', 0, 0], ['server', 1, 2], ['worker', 3, 6]] as const) {
      const env = replicaEnvironment(s, group, index, placement, 'cairn');
      expect(env).toMatchObject({
        DMLC_ROLE: group,
        DMLC_NUM_SERVER: '2',
        DMLC_NUM_WORKER: '4',
        DMLC_PS_ROOT_URI: 'sgd-scheduler-0.jobs.cairn',
        DMLC_PS_ROOT_PORT: '31000',
        // Servers and workers bind their host's address and their own PORT.
        DMLC_NODE_HOST: `10.0.0.${n}`,
        PORT: String(31000 + 10 * n),
      });
    }
  });

  it('sets DMLC_USE_KUBERNETES=1 on the scheduler only: it cannot bind a DNS name', () => {
    expect(replicaEnvironment(s, 'scheduler', 0, placement, 'cairn').DMLC_USE_KUBERNETES).toBe('1');
    expect(replicaEnvironment(s, 'server', 0, placement, 'cairn').DMLC_USE_KUBERNETES).toBeUndefined();
    expect(replicaEnvironment(s, 'worker', 0, placement, 'cairn').DMLC_USE_KUBERNETES).toBeUndefined();
  });
});

describe('replicaEnvironment: tensorflow', () => {
  it('gives TF_CONFIG with the cluster by DNS name and port, and the task', () => {
    const s = spec('dist', 'tensorflow', [['chief', 1], ['ps', 2], ['worker', 3], ['evaluator', 1]]);
    const placement = placeAll(s);
    const config = (group: string, index: number) => JSON.parse(replicaEnvironment(s, group, index, placement, 'cairn').TF_CONFIG);
    const cluster = {
      chief: ['dist-chief-0.jobs.cairn:31000'],
      ps: ['dist-ps-0.jobs.cairn:31010', 'dist-ps-1.jobs.cairn:31020'],
      worker: ['dist-worker-0.jobs.cairn:31030', 'dist-worker-1.jobs.cairn:31040', 'dist-worker-2.jobs.cairn:31050'],
    };
    expect(config('worker', 2)).toEqual({ cluster, task: { type: 'worker', index: 2 } });
    expect(config('ps', 1)).toEqual({ cluster, task: { type: 'ps', index: 1 } });
    expect(config('chief', 0)).toEqual({ cluster, task: { type: 'chief', index: 0 } });
    // The evaluator is not part of the cluster (as TensorFlow and TFJob have it), but knows it.
    expect(config('evaluator', 0)).toEqual({ cluster, task: { type: 'evaluator', index: 0 } });
  });

  it('keeps the master type name for a TFJob with a Master', () => {
    const s = spec('old', 'tensorflow', [['master', 1], ['worker', 1]]);
    const c = JSON.parse(replicaEnvironment(s, 'master', 0, placeAll(s), 'cairn').TF_CONFIG);
    expect(Object.keys(c.cluster)).toEqual(['master', 'worker']);
    expect(c.task).toEqual({ type: 'master', index: 0 });
  });

  it('sets no TF_CONFIG for a job of a single replica', () => {
    const s = spec('solo', 'tensorflow', [['worker', 1]]);
    expect(replicaEnvironment(s, 'worker', 0, placeAll(s), 'cairn').TF_CONFIG).toBeUndefined();
  });
});

describe('replicaEnvironment: pytorch', () => {
  it("points every rank at the master's DNS name and PORT; ranks: master 0, worker i is i+1", () => {
    const s = spec('ddp', 'pytorch', [['master', 1], ['worker', 3]]);
    const placement = placeAll(s);
    const ranks = [['master', 0], ['worker', 0], ['worker', 1], ['worker', 2]].map(([g, i]) => replicaEnvironment(s, g as string, i as number, placement, 'cairn'));
    for (const env of ranks) {
      expect(env).toMatchObject({ MASTER_ADDR: 'ddp-master-0.jobs.cairn', MASTER_PORT: '31000', WORLD_SIZE: '4', LOCAL_RANK: '0', PYTHONUNBUFFERED: '1' });
    }
    expect(ranks.map((e) => e.RANK)).toEqual(['0', '1', '2', '3']);
  });

  it('finds the master whichever order the groups are listed in', () => {
    const s = spec('ddp', 'pytorch', [['worker', 2], ['master', 1]]);
    const placement = placeAll(s);
    const master = replicaEnvironment(s, 'master', 0, placement, 'cairn');
    expect(master).toMatchObject({ RANK: '0', MASTER_PORT: '31020', WORLD_SIZE: '3' });
    expect(replicaEnvironment(s, 'worker', 1, placement, 'cairn')).toMatchObject({ RANK: '2', MASTER_ADDR: 'ddp-master-0.jobs.cairn', MASTER_PORT: '31020' });
  });
});

describe('replicaEnvironment: batch', () => {
  it("sets Volcano's index, its group's count, and every group's hosts and count", () => {
    const s = spec('items', 'batch', [['worker', 4], ['post-process', 1]]);
    const placement = placeAll(s);
    const env = replicaEnvironment(s, 'worker', 2, placement, 'cairn');
    expect(env).toMatchObject({
      VC_TASK_INDEX: '2',
      VK_TASK_INDEX: '2',
      VC_WORKER_NUM: '4',
      VC_WORKER_HOSTS: 'items-worker-0.jobs.cairn,items-worker-1.jobs.cairn,items-worker-2.jobs.cairn,items-worker-3.jobs.cairn',
      VC_POST_PROCESS_HOSTS: 'items-post-process-0.jobs.cairn',
      VC_POST_PROCESS_NUM: '1',
    });
    // Volcano's svc plugin names the worker group's count VC_WORKER_NUM, whoever reads it.
    const post = replicaEnvironment(s, 'post-process', 0, placement, 'cairn');
    expect(post).toMatchObject({ VC_TASK_INDEX: '0', VC_WORKER_NUM: '4', VC_POST_PROCESS_NUM: '1' });
    // With no group named worker, VC_WORKER_NUM is the replica's own group's count.
    const shards = spec('shards', 'batch', [['shard', 3], ['merge', 1]]);
    expect(replicaEnvironment(shards, 'shard', 1, placeAll(shards), 'cairn')).toMatchObject({ VC_TASK_INDEX: '1', VC_WORKER_NUM: '3', VC_SHARD_NUM: '3' });
    expect(replicaEnvironment(shards, 'merge', 0, placeAll(shards), 'cairn')).toMatchObject({ VC_WORKER_NUM: '1', VC_SHARD_HOSTS: 'shards-shard-0.jobs.cairn,shards-shard-1.jobs.cairn,shards-shard-2.jobs.cairn' });
    expect(groupEnvName('post-process')).toBe('POST_PROCESS');
  });

  it('splits 300 items over 4 workers exactly once, as the indexed example reads the variables', () => {
    const s = spec('split', 'batch', [['worker', 4]]);
    const placement = placeAll(s);
    const seen = new Map<number, number>();
    for (let i = 0; i < 4; i++) {
      const env = replicaEnvironment(s, 'worker', i, placement, 'cairn');
      const index = Number(env.VC_TASK_INDEX);
      const workers = Number(env.VC_WORKER_NUM);
      for (let item = index; item < 300; item += workers) seen.set(item, (seen.get(item) ?? 0) + 1);
    }
    expect(seen.size).toBe(300);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  });

  it('sets no other kind\'s variables', () => {
    const s = spec('b', 'batch', [['worker', 2]]);
    const env = replicaEnvironment(s, 'worker', 0, placeAll(s), 'cairn');
    for (const k of ['TF_CONFIG', 'MASTER_ADDR', 'RANK', 'DMLC_ROLE']) expect(env[k]).toBeUndefined();
  });
});
