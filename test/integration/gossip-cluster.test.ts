// Gossip with real processes on loopback: three replicated masters and two agents that are
// given no master URL at all. One agent joins through the masters' gossip addresses, the other
// only through the first agent's. Both find the leader and register; when the leader is
// SIGKILLed they follow the new one with no flag changed; an agent killed with SIGKILL is
// marked unreachable by gossip long before the ping window (set to 100 s here) would. A
// process task learns the masters' DNS servers (from gossip) and its own name there.

import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Cleanup, freePort, getJson, startCairn, waitFor, waitForLeader, type CairnProcess } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import type { MembersJson } from '../../shared/gossip/cluster.ts';

const cleanup = new Cleanup();
afterAll(() => cleanup.run());

/** 100 s before pings alone would mark an agent: anything faster is gossip's doing. */
const PING_ARGS = ['--ping-interval', '20s', '--max-missed-pings', '5'];
/** Probes every 200 ms: failures are detected in about a second. */
const GOSSIP_INTERVAL = ['--gossip-interval', '200ms'];

interface Node { name: string; url: string; gossip: string; proc: CairnProcess }

describe('gossip control plane on loopback', () => {
  it('agents started with only --join find the leader, follow a new one, and a killed agent is marked by gossip', async () => {
    const base = cleanup.dir('cairn-gossip-');
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, 'a-gossip-test-secret-0123456789\n');
    const httpPorts = [await freePort(), await freePort(), await freePort()];
    const gossipPorts = [await freePort(), await freePort(), await freePort()];
    const peers = httpPorts.map((p, i) => `${i + 1}=http://127.0.0.1:${p}`).join(',');
    const masterGossip = gossipPorts.map((p) => `127.0.0.1:${p}`);
    const masters: Node[] = httpPorts.map((port, i) => {
      const url = `http://127.0.0.1:${port}`;
      const joins = masterGossip.filter((_, j) => j !== i).flatMap((a) => ['--join', a]);
      const proc = cleanup.track(startCairn([
        'master', '--id', String(i + 1), '--peers', peers, '--secret-file', secretFile, '--port', String(port), '--host', '127.0.0.1',
        '--data-dir', join(base, `m${i + 1}`), '--dns-port', '0', '--gossip-port', String(gossipPorts[i]), ...joins, ...GOSSIP_INTERVAL, ...PING_ARGS,
      ], url));
      return { name: `master-${i + 1}`, url, gossip: masterGossip[i], proc };
    });
    await Promise.all(masters.map((m) => m.proc.waitHealthy()));

    const startAgent = async (name: string, joinThrough: string): Promise<Node> => {
      const [port, gossipPort] = [await freePort(), await freePort()];
      const url = `http://127.0.0.1:${port}`;
      const proc = cleanup.track(startCairn([
        'agent', '--join', joinThrough, '--secret-file', secretFile, '--gossip-port', String(gossipPort), ...GOSSIP_INTERVAL,
        '--port', String(port), '--work-dir', cleanup.dir(`cairn-${name}-`), '--hostname', name, '--resources', 'cpus:1;mem:256', '--no-cgroups',
      ], url));
      await proc.waitHealthy();
      return { name, url, gossip: `127.0.0.1:${gossipPort}`, proc };
    };
    const a1 = await startAgent('agent-1', masterGossip[0]);
    // The second agent knows only the first agent's gossip address.
    const a2 = await startAgent('agent-2', a1.gossip);

    const leader = (among: Node[]) => waitForLeader(among);
    const connectedAt = (m: Node, names: string[]) => waitFor(`${names.join(', ')} connected to ${m.name}`, async () => {
      const st = await getJson(`${m.url}/api/v1/state`);
      return names.every((n) => st.agents.some((a: any) => a.hostname === n && a.connected && a.reachable)) ? st : undefined;
    }, 20_000);

    const first = await leader(masters);
    await connectedAt(first, ['agent-1', 'agent-2']);

    // Every member sees all five, with the leader hint in the masters' metadata.
    const view: MembersJson = await waitFor('five alive members at agent-2', async () => {
      const v: MembersJson = await getJson(`${a2.url}/api/v1/members`);
      return v.members.filter((m) => m.state === 'alive').length === 5 ? v : undefined;
    });
    expect(view.self).toMatch(/^agent@127\.0\.0\.1:/);
    expect(view.members.filter((m) => m.role === 'master').every((m) => m.meta.api?.startsWith('http://127.0.0.1:'))).toBe(true);
    expect(view.members.find((m) => m.meta.api === first.url)?.meta.leader).toBe(first.url);
    expect(view.members.filter((m) => m.role === 'agent').map((m) => m.meta.hostname).sort()).toEqual(['agent-1', 'agent-2']);
    // `cairn members` prints the same view.
    const cli = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('../../bin/cairn.js', import.meta.url)), 'members', '--master', a1.url]);
    expect(cli.stdout.split('\n').filter((l) => / alive /.test(l))).toHaveLength(5);

    // A process task gets CAIRN_DNS (every master's DNS server) and its own name, which resolves there.
    const fw = new RawScheduler(first.url);
    await fw.subscribe({ user: '', name: 'web', failover_timeout: 60 });
    const offer = (await fw.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const cmd = 'echo "$CAIRN_DNS|$CAIRN_DNS_NAME|$CAIRN_DNS_FRAMEWORK|$CAIRN_DNS_DOMAIN"; sleep 60';
    await fw.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('probe', offer.agent_id.value, { cpus: 0.1, mem: 16 }, cmd)] } }] } });
    await fw.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING');
    fw.close();
    const line: string = await waitFor('the task output', async () => {
      const chunk = await getJson(`${first.url}/api/v1/tasks/probe/logs`);
      return chunk.data?.includes('\n') ? chunk.data.trim() : undefined;
    });
    const [servers, name, framework, domain] = line.split('|');
    expect(servers.split(',')).toHaveLength(3);
    expect([name, framework, domain]).toEqual(['probe.web.cairn', 'web.cairn', 'cairn']);
    const resolver = new Resolver({ timeout: 1000, tries: 2 });
    resolver.setServers([servers.split(',')[0]]);
    expect(await resolver.resolve4(name)).toEqual(['127.0.0.1']);

    // SIGKILL the leader: both agents re-register with the new one, with no flag changed.
    const killedAt = Date.now();
    await first.proc.kill('SIGKILL');
    const survivors = masters.filter((m) => m !== first);
    const second = await leader(survivors);
    await connectedAt(second, ['agent-1', 'agent-2']);
    const followMs = Date.now() - killedAt;
    expect(followMs).toBeLessThan(15_000);

    // Every surviving master's DNS names the new leader: _leader._tcp carries its HTTP port.
    const leaderPort = Number(new URL(second.url).port);
    for (const m of survivors) {
      const dnsPort = (await getJson(`${m.url}/v1/config`)).Port as number;
      const r = new Resolver({ timeout: 1000, tries: 2 });
      r.setServers([`127.0.0.1:${dnsPort}`]);
      await waitFor(`${m.url}'s DNS names the new leader`, async () => ((await r.resolveSrv('_leader._tcp.cairn').catch(() => []))[0]?.port === leaderPort) || undefined, 5000);
      expect(await r.resolve4('leader.cairn')).toEqual(['127.0.0.1']);
    }

    // SIGKILL an agent: unreachable long before 5 missed pings of 20 s.
    const agentId = (await getJson(`${second.url}/api/v1/state`)).agents.find((a: any) => a.hostname === 'agent-2').id;
    const agentKilledAt = Date.now();
    await a2.proc.kill('SIGKILL');
    await waitFor('agent-2 unreachable', async () => {
      const st = await getJson(`${second.url}/api/v1/state`);
      return st.agents.find((a: any) => a.id === agentId)?.reachable === false ? true : undefined;
    }, 20_000);
    const markMs = Date.now() - agentKilledAt;
    expect(markMs).toBeLessThan(10_000);
    // The other agent stays reachable.
    const st = await getJson(`${second.url}/api/v1/state`);
    expect(st.agents.find((a: any) => a.hostname === 'agent-1')).toMatchObject({ reachable: true, connected: true });
    console.log(`gossip loopback: agents followed the new leader ${followMs} ms after the kill; a killed agent was unreachable after ${markMs} ms (ping window 100 s)`);
  });
});
