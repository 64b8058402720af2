// What daemons read from the gossip view: the leader hint of the newest term, the masters' DNS
// servers, an agent's state by its id, and the members JSON.

import { describe, expect, it } from 'vitest';
import {
  agentMeta,
  agentStateInView,
  dnsServersFromView,
  domainFromView,
  leaderFromView,
  masterMeta,
  membersJson,
} from '../../shared/gossip/cluster.ts';
import { compileGossipConfig, gossipConfigForPeriod } from '../../shared/gossip/config.ts';
import type { MemberSnapshot, MemberState } from '../../shared/gossip/messages.ts';

const M1 = 'http://10.0.0.1:5050';
const M2 = 'http://10.0.0.2:5050';
const M3 = 'http://10.0.0.3:5050';

function master(name: string, api: string, state: MemberState, term: number, leaderId: number, leaderUrl: string, dns?: string): MemberSnapshot {
  return { name, address: `${name}:7946`, role: 'master', incarnation: 1, state, meta: masterMeta({ api, term, leaderId, leaderUrl, dns, domain: 'cairn' }) };
}

function agent(name: string, state: MemberState, agentId?: string): MemberSnapshot {
  return { name, address: `${name}:7947`, role: 'agent', incarnation: 1, state, meta: agentMeta({ api: `http://${name}:5051`, hostname: name, agentId }) };
}

describe('leaderFromView', () => {
  it('takes the hint of the newest term', () => {
    const view = [
      master('m1', M1, 'alive', 3, 1, M1),
      master('m2', M2, 'alive', 4, 2, M2),
      master('m3', M3, 'alive', 4, 2, M2),
    ];
    expect(leaderFromView(view)).toEqual({ url: M2, leaderId: 2, term: 4 });
  });

  it('ignores hints that name a master gossip declared dead (followers still name a killed leader)', () => {
    const view = [
      master('m1', M1, 'dead', 3, 1, M1),
      master('m2', M2, 'alive', 3, 1, M1),
      master('m3', M3, 'alive', 3, 1, M1),
    ];
    expect(leaderFromView(view)).toBeUndefined();
    // Once the survivors elect m3 in term 4, that is the answer.
    view[2] = master('m3', M3, 'alive', 4, 3, M3);
    expect(leaderFromView(view)).toEqual({ url: M3, leaderId: 3, term: 4 });
  });

  it('ignores dead masters and agents, hints without a leader and bad terms', () => {
    const view = [
      master('m1', M1, 'dead', 9, 1, M1),
      master('m2', M2, 'alive', 5, 0, ''),
      { ...master('m3', M3, 'alive', 1, 3, M3), meta: { ...masterMeta({ api: M3, term: 1, leaderId: 3, leaderUrl: M3 }), term: 'x' } },
      { ...agent('a1', 'alive'), meta: masterMeta({ api: 'http://a1:5051', term: 99, leaderId: 9, leaderUrl: 'http://evil:1' }) },
    ];
    expect(leaderFromView(view)).toBeUndefined();
  });

  it("at equal terms prefers the leader's own word; suspected masters still count", () => {
    const view = [master('m1', M1, 'suspect', 7, 1, M1), master('m2', M2, 'alive', 7, 1, M1)];
    expect(leaderFromView(view)).toEqual({ url: M1, leaderId: 1, term: 7 });
    // A restarted master under another name: its URL is live again.
    const restarted = [master('m1-old', M1, 'dead', 2, 1, M1), master('m1-new', M1, 'alive', 8, 1, M1)];
    expect(leaderFromView(restarted)?.url).toBe(M1);
  });
});

describe('DNS servers, domain and agent state from the view', () => {
  it('lists the live masters’ DNS servers once each', () => {
    const view = [
      master('m1', M1, 'alive', 1, 1, M1, '10.0.0.1:53'),
      master('m2', M2, 'dead', 1, 1, M1, '10.0.0.2:53'),
      master('m3', M3, 'suspect', 1, 1, M1, '10.0.0.3:53'),
      master('m4', M3, 'alive', 1, 1, M1, '10.0.0.1:53'),
    ];
    expect(dnsServersFromView(view)).toEqual(['10.0.0.1:53', '10.0.0.3:53']);
    expect(domainFromView(view)).toBe('cairn');
    expect(domainFromView([agent('a', 'alive')])).toBeUndefined();
  });

  it('finds an agent by its id; a live member wins over an older dead one', () => {
    expect(agentStateInView([agent('a1', 'dead', 'S1'), agent('a1b', 'alive', 'S1')], 'S1')).toBe('alive');
    expect(agentStateInView([agent('a1', 'dead', 'S1')], 'S1')).toBe('dead');
    expect(agentStateInView([agent('a1', 'alive')], 'S1')).toBeUndefined();
  });

  it('renders members masters first, then by name', () => {
    const json = membersJson('a1', [agent('b', 'alive'), master('m2', M2, 'alive', 1, 1, M1), agent('a', 'suspect', 'S0')]);
    expect(json.self).toBe('a1');
    expect(json.members.map((m) => m.name)).toEqual(['m2', 'a', 'b']);
    expect(json.members[1]).toEqual({ name: 'a', address: 'a:7947', role: 'agent', state: 'suspect', incarnation: 1, meta: { api: 'http://a:5051', hostname: 'a', agent_id: 'S0' } });
  });
});

describe('gossipConfigForPeriod', () => {
  it('scales every period with the probe interval, and compiles', () => {
    expect(gossipConfigForPeriod(200)).toEqual({
      probeIntervalMs: 200, probeTimeoutMs: 100, gossipIntervalMs: 40, rejoinIntervalMs: 1_000, pushPullIntervalMs: 6_000, reconnectIntervalMs: 6_000,
    });
    expect(() => compileGossipConfig(gossipConfigForPeriod(10))).not.toThrow();
    expect(() => gossipConfigForPeriod(5)).toThrow(/at least 10/);
  });
});
