// A master and agents as processes on loopback, joined by gossip (so agents know the masters'
// DNS), sharing one job-dirs directory (as a shared mount would be): the cluster the training
// jobs' tests run on.

import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { authFetch } from './credentials.ts';
import { type Cleanup, freePort, startCairn, waitFor, type CairnProcess } from './processes.ts';

export interface GossipCluster {
  master: CairnProcess;
  /** Every agent's --job-dirs. */
  jobDirs: string;
}

/** One agent per entry of `agentResources`, each with `agentArgs` besides. */
export async function startGossipCluster(cleanup: Cleanup, name: string, agentResources: readonly string[], agentArgs: readonly string[] = []): Promise<GossipCluster> {
  const base = cleanup.dir(`cairn-${name}-`);
  // Replicas run as the agents' task user (nobody): the job dirs below must be reachable.
  chmodSync(base, 0o755);
  const secretFile = join(base, 'secret');
  writeFileSync(secretFile, `a-${name}-test-secret-0123456789\n`);
  const jobDirs = join(base, 'job-dirs');
  const [port, gossipPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const master = cleanup.track(startCairn([
    'master', '--port', String(port), '--host', '127.0.0.1', '--data-dir', join(base, 'master'),
    '--dns-port', '0', '--secret-file', secretFile, '--gossip-port', String(gossipPort),
  ], url));
  await master.waitHealthy();
  for (const [i, resources] of agentResources.entries()) {
    const [agentPort, agentGossip] = [await freePort(), await freePort()];
    const agent = cleanup.track(startCairn([
      'agent', '--master', url, '--join', `127.0.0.1:${gossipPort}`, '--secret-file', secretFile, '--gossip-port', String(agentGossip),
      '--port', String(agentPort), '--work-dir', join(base, `agent${i}`), '--hostname', 'localhost',
      '--resources', resources, '--job-dirs', jobDirs, ...agentArgs,
    ], `http://127.0.0.1:${agentPort}`));
    await agent.waitHealthy();
  }
  await waitFor(`${agentResources.length} agents registered`, async () => {
    const s = await (await authFetch(`${url}/api/v1/state`)).json();
    return s.agents?.filter((a: { connected: boolean }) => a.connected).length === agentResources.length ? true : undefined;
  }, 30_000);
  return { master, jobDirs };
}
