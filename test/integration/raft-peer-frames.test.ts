// Hostile input on the masters' Raft endpoint: garbage, frames under another secret and
// frames of another cluster are refused (the connection dropped, the refusal counted and
// logged), and the group is unharmed: no term moves, the leader stays, writes commit.

import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { MasterHandle } from '../../master/server.ts';
import { RaftWire } from '../../shared/raft/wire.ts';
import { startMasterGroup } from '../harness/master-group.ts';
import { Cleanup, waitFor } from '../harness/processes.ts';

const SECRET = 'peer-frames-test-secret-0123456789';
const cleanup = new Cleanup();
const masters: MasterHandle[] = [];
afterAll(async () => {
  await Promise.all(masters.map((m) => m.stop()));
  await cleanup.run();
});

/** Sends one binary frame to a master's Raft endpoint; resolves with the close code it answered. */
function sendFrame(url: string, frame: Uint8Array): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/api/v1/raft`);
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('the master kept a connection that sent a bad frame'));
    }, 5000);
    ws.on('open', () => ws.send(frame));
    ws.on('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    ws.on('error', () => undefined);
  });
}

const metric = async (url: string, name: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
};

describe('the Raft endpoint under bad frames', () => {
  it('refuses garbage, a wrong secret and another cluster, and the group goes on', async () => {
    const dir = cleanup.dir('cairn-raft-frames-');
    masters.push(...(await startMasterGroup(dir, 3, SECRET)));
    const leader = await waitFor('a leader', () => masters.find((m) => m.raft?.status().role === 'leader'), 20_000);
    const target = masters.find((m) => m !== leader)!;
    const termBefore = leader.raft!.status().term;

    // A vote request with a far higher term would depose the leader if it were believed.
    const hostile = [{ type: 'vote' as const, from: 9, to: target.raft!.status().id, term: termBefore + 1000, lastIndex: 1e9, lastTerm: termBefore + 1000, transfer: true }];
    const frames = [
      new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00, 0x01]),
      new RaftWire({ clusterId: 'cairn', secret: 'another-secret-entirely-0123456789' }).encode(hostile),
      new RaftWire({ clusterId: 'elsewhere', secret: SECRET }).encode(hostile),
    ];
    for (const [i, frame] of frames.entries()) {
      expect(await sendFrame(target.url, frame), `frame ${i}`).toBe(1008);
    }
    expect(await metric(target.url, 'cairn_master_raft_bad_peer_frames_total')).toBe(3);
    expect(target.raft!.status().badPeerFrames).toBe(3);

    // Unharmed: same leader, same term, and a write commits on every master.
    expect(leader.raft!.status().role).toBe('leader');
    for (const m of masters) expect(m.raft!.status().term).toBe(termBefore);
    const put = await fetch(`${leader.url}/api/v1/roles/after-bad-frames`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weight: 2 }) });
    expect(put.status).toBe(200);
    for (const m of masters) {
      await waitFor(`the write on master ${m.raft!.status().id}`, async () => ((await (await fetch(`${m.url}/api/v1/roles`)).json()).weights['after-bad-frames'] === 2) || undefined, 5000);
    }
  });
});
