// Gossip across real addresses (issue 4, acceptance 2): three replicated masters and four
// agents, each in its own network namespace on one bridge. Agents get no master URL: the first
// joins through a master's gossip address, the other three only through the first agent's.
// All find the leader; when it is SIGKILLed they reconnect to the new one; an agent cut off
// (its link down) is marked unreachable within seconds — the ping window is the default 75 s —
// and comes back when its link is up again.
//
// Needs root and `ip netns`: skipped with the reason printed elsewhere, required in CI.

import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, getJson, waitFor, waitForLeader, type CairnProcess } from '../harness/processes.ts';
import { NetnsLab, netnsUnusable } from '../harness/netns.ts';
import { isLive, type MembersJson } from '../../shared/gossip/cluster.ts';

const unusable = netnsUnusable();
if (unusable !== undefined) {
  if (process.env.CI) throw new Error(`the network namespace test must run in CI, but ${unusable}`);
  console.log(`skipping the network namespace gossip test: ${unusable}`);
}

const GOSSIP_INTERVAL = ['--gossip-interval', '200ms'];

interface Node { name: string; ip: string; url: string; proc: CairnProcess }

describe.skipIf(unusable !== undefined)('gossip across network namespaces', () => {
  const lab = unusable === undefined ? new NetnsLab() : undefined;
  const cleanup = new Cleanup();
  afterAll(async () => {
    await lab?.cleanup();
    await cleanup.run();
  });

  it('agents joined through one agent find the leader, follow a new one, and a cut-off agent is marked and comes back', async () => {
    const t0 = Date.now();
    const base = cleanup.dir('cairn-netns-');
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, 'a-netns-test-secret-0123456789\n');
    lab!.up();
    const masterIps = [11, 12, 13].map((h, i) => lab!.node(`m${i + 1}`, h));
    const agentIps = [21, 22, 23, 24].map((h, i) => lab!.node(`a${i + 1}`, h));
    const peers = masterIps.map((ip, i) => `${i + 1}=http://${ip}:5050`).join(',');

    const masters: Node[] = masterIps.map((ip, i) => {
      const url = `http://${ip}:5050`;
      const joins = masterIps.filter((_, j) => j !== i).flatMap((other) => ['--join', `${other}:7946`]);
      const proc = lab!.cairn(`m${i + 1}`, [
        'master', '--id', String(i + 1), '--peers', peers, '--secret-file', secretFile, '--host', ip, '--port', '5050',
        '--data-dir', join(base, `m${i + 1}`), '--dns-port', '8053', ...joins, ...GOSSIP_INTERVAL,
      ], url);
      return { name: `m${i + 1}`, ip, url, proc };
    });
    await Promise.all(masters.map((m) => m.proc.waitHealthy(30_000)));

    const agentArgs = (i: number, joinThrough: string) => [
      'agent', '--secret-file', secretFile, '--join', joinThrough, ...GOSSIP_INTERVAL, '--port', '5051',
      '--work-dir', join(base, `a${i + 1}`), '--hostname', `agent-${i + 1}`, '--resources', 'cpus:1;mem:256', '--no-cgroups',
    ];
    const agents: Node[] = agentIps.map((ip, i) => {
      // The first agent joins through a master; the others know only the first agent.
      const joinThrough = i === 0 ? `${masterIps[0]}:7946` : `${agentIps[0]}:7947`;
      const url = `http://${ip}:5051`;
      return { name: `agent-${i + 1}`, ip, url, proc: lab!.cairn(`a${i + 1}`, agentArgs(i, joinThrough), url) };
    });
    await Promise.all(agents.map((a) => a.proc.waitHealthy(30_000)));

    const leader = (among: Node[]) => waitForLeader(among);
    const agentsAt = async (m: Node, names: string[], want: { connected: boolean; reachable: boolean }, timeoutMs = 20_000) =>
      waitFor(`${names.join(', ')} ${JSON.stringify(want)} at ${m.name}`, async () => {
        const st = await getJson(`${m.url}/api/v1/state`);
        return names.every((n) => st.agents.some((a: any) => a.hostname === n && a.connected === want.connected && a.reachable === want.reachable)) ? st : undefined;
      }, timeoutMs);
    const all = agents.map((a) => a.name);

    const first = await leader(masters);
    await agentsAt(first, all, { connected: true, reachable: true });
    const view: MembersJson = await waitFor('seven alive members at the leader', async () => {
      const v: MembersJson = await getJson(`${first.url}/api/v1/members`);
      return v.members.filter((m) => m.state === 'alive').length === 7 ? v : undefined;
    });
    // Each member is known by its own address.
    expect(view.members.map((m) => m.address.split(':')[0]).sort()).toEqual([...masterIps, ...agentIps].sort());

    // Kill the leader: the agents reconnect to the new one with no flag changed.
    let t = Date.now();
    await first.proc.kill('SIGKILL');
    const second = await leader(masters.filter((m) => m !== first));
    await agentsAt(second, all, { connected: true, reachable: true });
    const followMs = Date.now() - t;
    // The killed master is given up on by gossip before an agent is cut: what is timed below is
    // one member lost in a settled group. With both suspected at once, each member's own health
    // score (Lifeguard) is down for the failed probes of the first, which can stretch the
    // suspicion of the second (a CI run cut the agent about 0.1 s after the new leader took
    // over, and waited past the 15 s below for it).
    await waitFor(`${first.name} no longer live in gossip at ${second.name}`, async () => {
      const v: MembersJson = await getJson(`${second.url}/api/v1/members`);
      const m = v.members.find((x) => x.address.split(':')[0] === first.ip);
      return m === undefined || !isLive(m.state) ? true : undefined;
    });

    // Cut agent-4 off: unreachable within seconds (pings alone: 5 × 15 s).
    t = Date.now();
    lab!.setLink('a4', false);
    await agentsAt(second, ['agent-4'], { connected: false, reachable: false }, 15_000);
    const markMs = Date.now() - t;
    expect(markMs).toBeLessThan(10_000);
    await agentsAt(second, ['agent-1', 'agent-2', 'agent-3'], { connected: true, reachable: true }, 1_000);

    // Heal: it rejoins gossip and registers again.
    t = Date.now();
    lab!.setLink('a4', true);
    await agentsAt(second, ['agent-4'], { connected: true, reachable: true });
    await waitFor('agent-4 alive in gossip at the leader', async () => {
      const v: MembersJson = await getJson(`${second.url}/api/v1/members`);
      return v.members.some((m) => m.meta.hostname === 'agent-4' && m.state === 'alive') ? true : undefined;
    });
    const healMs = Date.now() - t;
    console.log(`gossip netns: followed the new leader in ${followMs} ms; a cut-off agent unreachable in ${markMs} ms, back ${healMs} ms after healing; ${Date.now() - t0} ms in all`);
  });
});
