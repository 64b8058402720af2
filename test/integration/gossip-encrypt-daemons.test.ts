// `--gossip-encrypt` end to end: a master and an agent process started with it gossip
// encrypted: a member of the test's own with the key and encryption on sees both; one with
// encryption off (the same secret) is never let in and learns nobody.

import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGossip, type GossipMember } from '../../shared/gossip/udp-node.ts';
import { Cleanup, freePort, startCairn, waitFor } from '../harness/processes.ts';

const SECRET = 'an-encrypted-gossip-secret-0123456789';
const CONFIG = { probeIntervalMs: 200, probeTimeoutMs: 100, gossipIntervalMs: 50, pushPullIntervalMs: 2_000, rejoinIntervalMs: 300 };
const cleanup = new Cleanup();
const members: GossipMember[] = [];
afterAll(async () => {
  await Promise.all(members.map((m) => m.stop()));
  await cleanup.run();
});

describe('cairn master and agent with --gossip-encrypt', () => {
  it('gossip encrypted: members with the key and encryption see both; a member without encryption is ignored', async () => {
    const base = cleanup.dir('cairn-gossip-encrypt-');
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, `${SECRET}\n`);
    const [port, gossipPort, agentPort, agentGossipPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const url = `http://127.0.0.1:${port}`;
    const master = cleanup.track(startCairn([
      'master', '--secret-file', secretFile, '--port', String(port), '--host', '127.0.0.1', '--data-dir', join(base, 'master'),
      '--dns-port', '0', '--gossip-port', String(gossipPort), '--gossip-interval', '200ms', '--gossip-encrypt',
    ], url));
    await master.waitHealthy();
    const agent = cleanup.track(startCairn([
      'agent', '--master', url, '--secret-file', secretFile, '--join', `127.0.0.1:${gossipPort}`, '--gossip-port', String(agentGossipPort),
      '--gossip-interval', '200ms', '--gossip-encrypt', '--port', String(agentPort), '--work-dir', join(base, 'agent'),
      '--hostname', 'agent-encrypted', '--resources', 'cpus:1;mem:256', '--no-cgroups', '--no-docker',
    ], `http://127.0.0.1:${agentPort}`));
    await agent.waitHealthy();

    const observer = await startGossip({ name: 'observer', role: 'agent', bindHost: '127.0.0.1', bindPort: 0, secret: SECRET, encrypt: true, join: [`127.0.0.1:${gossipPort}`], config: CONFIG });
    members.push(observer);
    await waitFor('the observer to see the master and the agent alive', () => {
      const alive = observer.members().filter((m) => m.state === 'alive');
      return (alive.some((m) => m.role === 'master') && alive.some((m) => m.role === 'agent' && m.name !== 'observer')) || undefined;
    }, 20_000);
    expect(observer.counters.droppedEncryptionMismatch + observer.counters.droppedUnauthenticated).toBe(0);

    const plain = await startGossip({ name: 'plain', role: 'agent', bindHost: '127.0.0.1', bindPort: 0, secret: SECRET, join: [`127.0.0.1:${gossipPort}`], config: CONFIG });
    members.push(plain);
    // It tries to join again every rejoin interval; after a few tries it still knows nobody.
    await waitFor('a few join attempts by the plain member', () => plain.counters.streamsSent >= 4 || undefined, 20_000);
    expect(plain.members().map((m) => m.name)).toEqual(['plain']);
    expect(observer.member('plain')).toBeUndefined();
  });
});
