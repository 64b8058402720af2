// A stock torch.distributed program across three hosts (network namespaces on one bridge),
// each running a master of a replicated group (on its own address) and an agent: a PyTorchJob
// of three ranks, one per host, resolves MASTER_ADDR through each host's task resolver while the
// leading master is SIGKILLed mid-rendezvous. The ranks meet (the resolvers fall over to a live
// master's DNS), the new leader carries the job to Succeeded, and no rank needed a restart.
// A name outside the zone is answered by a stand-in upstream on the bridge: nothing leaves
// the machine.
//
// Needs root, `ip netns` and torch under /usr/bin/python3: skipped with the reason elsewhere,
// required in CI.

import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { authFetch } from '../harness/credentials.ts';
import { Cleanup, getJson, waitFor, waitForLeader, type CairnProcess } from '../harness/processes.ts';
import { pytorchJobYaml } from '../harness/jobs-api.ts';
import { NetnsLab, netnsUnusable } from '../harness/netns.ts';
import { StandInDns } from '../harness/stand-in-dns.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const PYTHON = '/usr/bin/python3';
const DDP = fileURLToPath(new URL('../fixtures/stock/ddp.py', import.meta.url));

const unusable = netnsUnusable() ?? (spawnSync(PYTHON, ['-c', 'import torch']).status === 0 ? undefined : `${PYTHON} cannot import torch`);
if (unusable !== undefined) {
  if (process.env.CI) throw new Error(`the stock programs test across hosts must run in CI, but ${unusable}`);
  console.log(`skipping the stock programs test across hosts: ${unusable}`);
}

interface Host { name: string; ip: string; url: string; master: CairnProcess }

describe.skipIf(unusable !== undefined)('a stock DDP program across three hosts', () => {
  const lab = unusable === undefined ? new NetnsLab() : undefined;
  const cleanup = new Cleanup();
  let upstream: StandInDns | undefined;
  afterAll(async () => {
    await lab?.cleanup();
    await cleanup.run();
    upstream?.close();
  });

  it('ranks on three hosts meet at the master replica by name while the leading master is SIGKILLed', async () => {
    const base = cleanup.dir('cairn-stock-netns-');
    chmodSync(base, 0o755);
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, 'a-stock-netns-secret-0123456789\n');
    lab!.up();
    upstream = await StandInDns.start({ 'outside.example': '192.0.2.7' }, `${lab!.subnet}.1`);
    const ips = [11, 12, 13].map((h, i) => lab!.node(`h${i + 1}`, h));
    const peers = ips.map((ip, i) => `${i + 1}=http://${ip}:5050`).join(',');
    const hosts: Host[] = ips.map((ip, i) => {
      const joins = ips.filter((_, j) => j !== i).flatMap((other) => ['--join', `${other}:7946`]);
      const url = `http://${ip}:5050`;
      const master = lab!.cairn(`h${i + 1}`, [
        'master', '--id', String(i + 1), '--peers', peers, '--secret-file', secretFile, '--host', ip, '--port', '5050',
        '--data-dir', join(base, `m${i + 1}`), '--dns-port', '8053', ...joins, '--gossip-interval', '200ms',
      ], url);
      return { name: `h${i + 1}`, ip, url, master };
    });
    await Promise.all(hosts.map((h) => h.master.waitHealthy(30_000)));
    for (const [i, h] of hosts.entries()) {
      const agent = lab!.cairn(h.name, [
        'agent', '--secret-file', secretFile, '--join', `${h.ip}:7946`, '--gossip-interval', '200ms', '--port', '5051',
        '--work-dir', join(base, `a${i + 1}`), '--hostname', h.name, '--resources', 'cpus:1;mem:1536;ports:[31000-31009]',
        '--dns-resolvers', upstream.address,
      ], `http://${h.ip}:5051`);
      await agent.waitHealthy(30_000);
    }
    const leader = await waitForLeader(hosts);
    await waitFor('three agents registered', async () => {
      const st = await getJson(`${leader.url}/api/v1/state`);
      return st.agents.filter((a: { connected: boolean }) => a.connected).length === 3 ? true : undefined;
    }, 30_000);

    // One rank a host (1 cpu each). The ranks wait a few seconds before they resolve
    // MASTER_ADDR, so that the leader is gone when they do. GLOO_SOCKET_IFNAME: the hosts share
    // one host name (127.0.0.1 in /etc/hosts), which gloo would otherwise bind.
    const command = ['/bin/sh', '-c', `sleep 6; getent hosts outside.example; exec ${PYTHON} ${DDP}`];
    const yaml = pytorchJobYaml('spread', command, { workers: 2, cpu: '"1"', memory: '1Gi', env: { GLOO_SOCKET_IFNAME: 'eth0' } });
    const submitted = await authFetch(`${leader.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: yaml });
    expect(submitted.status, await submitted.clone().text()).toBe(201);
    const running = await waitFor('three ranks running on three hosts', async () => {
      const j = (await getJson(`${leader.url}/api/v1/jobs/spread`)) as JobView;
      return j.replicas.every((r) => r.state === 'Running') ? j : undefined;
    }, 60_000, 100);
    expect(new Set(running.replicas.map((r) => r.host))).toEqual(new Set(['h1', 'h2', 'h3']));

    await leader.master.kill('SIGKILL');
    const survivors = hosts.filter((h) => h !== leader);
    const next = await waitForLeader(survivors, 30_000);
    const done = await waitFor('job spread finished', async () => {
      const j = (await getJson(`${next.url}/api/v1/jobs/spread`).catch(() => undefined)) as JobView | undefined;
      return j && (j.phase === 'Succeeded' || j.phase === 'Failed') ? j : undefined;
    }, 150_000, 500);
    const logs = await Promise.all(done.replicas.map(async (r) => {
      const chunk = await getJson(`${next.url}/api/v1/tasks/${encodeURIComponent(r.taskId!)}/logs?stream=stdout&offset=0`);
      return chunk.data as string;
    }));
    expect(done.phase, `${done.message}\n${logs.join('\n')}`).toBe('Succeeded');
    for (const r of done.replicas) expect(r.restarts, `${r.group}-${r.index}`).toBe(0);
    const lines = logs.join('').split('\n');
    // Each rank reduced 0+1+2 = 3 after meeting at the master replica's name.
    expect(lines.filter((l) => l.startsWith('rank ')).sort()).toEqual([0, 1, 2].map((rank) => `rank ${rank} of 3: all_reduce sum 3 via env at spread-master-0.jobs.cairn`));
    // The name outside the zone came from the upstream, through each host's task resolver.
    expect(lines.filter((l) => /^192\.0\.2\.7\s+outside\.example$/.test(l))).toHaveLength(3);
  }, 300_000);
});
