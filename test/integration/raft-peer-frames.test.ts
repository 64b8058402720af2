// Hostile input on the masters' Raft endpoint: garbage, a handshake under another secret or of
// another cluster, and frames captured off the masters' own connections and sent again (on
// their connection, and on a new one opened with the captured hello) are refused (the
// connection dropped, the refusal counted and logged), and the group is unharmed: no term
// moves, the leader stays, writes commit.

import { afterAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import WebSocket from 'ws';
import type { MasterHandle } from '../../master/server.ts';
import { RaftWire } from '../../shared/raft/wire.ts';
import { startMasterGroup } from '../harness/master-group.ts';
import { Cleanup, waitFor } from '../harness/processes.ts';

const SECRET = 'peer-frames-test-secret-0123456789';
const cleanup = new Cleanup();
const masters: MasterHandle[] = [];

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/raft.proto', import.meta.url)));
const Frame = root.lookupType('cairn.raft.Frame');
const Hello = root.lookupType('cairn.raft.Hello');

// Every frame the masters of this process send on the connections they dial, as an attacker on
// the path would see them (the first few of each connection).
const captured = new Map<WebSocket, Buffer[]>();
const realSend = WebSocket.prototype.send;
/** Sends bytes as they are, not captured. */
const rawSend = (ws: WebSocket, data: Uint8Array) => (realSend as (this: WebSocket, d: Uint8Array) => void).call(ws, data);
WebSocket.prototype.send = function (this: WebSocket, data: unknown, ...rest: unknown[]) {
  if (typeof this.url === 'string' && this.url.includes('/api/v1/raft') && (Buffer.isBuffer(data) || data instanceof Uint8Array)) {
    const list = captured.get(this) ?? [];
    if (list.length < 20) list.push(Buffer.from(data));
    captured.set(this, list);
  }
  return (realSend as (...a: unknown[]) => void).call(this, data, ...rest);
} as typeof realSend;

afterAll(async () => {
  WebSocket.prototype.send = realSend;
  await Promise.all(masters.map((m) => m.stop()));
  await cleanup.run();
});

/** Opens a connection to a master's Raft endpoint, sends `frames` one after another (each after the master's answer to the one before, if `answered`); resolves with the close code. */
function sendFrames(url: string, frames: Uint8Array[], answered = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/api/v1/raft`);
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('the master kept a connection that sent a bad frame'));
    }, 10_000);
    let next = 0;
    const sendNext = () => {
      if (next < frames.length) rawSend(ws, frames[next++]);
    };
    ws.on('open', () => {
      if (answered) sendNext();
      else for (const f of frames) rawSend(ws, f);
    });
    ws.on('message', () => answered && sendNext());
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

const kindOf = (frame: Buffer) => (Frame.decode(frame) as unknown as { kind: number }).kind;

describe('the Raft endpoint under bad and replayed frames', () => {
  let leader: MasterHandle;
  let target: MasterHandle;
  let termBefore: number;

  it('refuses garbage, a wrong secret and another cluster', async () => {
    const dir = cleanup.dir('cairn-raft-frames-');
    masters.push(...(await startMasterGroup(dir, 3, SECRET)));
    leader = await waitFor('a leader', () => masters.find((m) => m.raft?.status().role === 'leader'), 20_000);
    target = masters.find((m) => m !== leader)!;
    termBefore = leader.raft!.status().term;

    // A vote request with a far higher term would depose the leader if it were believed.
    const hostile = [{ type: 'vote' as const, from: 9, to: target.raft!.status().id, term: termBefore + 1000, lastIndex: 1e9, lastTerm: termBefore + 1000, transfer: true }];
    /** A whole connection's worth of frames from someone with `wire`: its hello, then the hostile vote under keys it made up. */
    const attempt = (wire: RaftWire) => {
      const { frame, dialing } = wire.hello(9);
      const own = wire.accept(frame, 1);
      return [frame, dialing.welcome(own.welcome).encode(hostile)];
    };
    const ownWire = new RaftWire({ clusterId: 'cairn', secret: SECRET });
    const tries: [string, Uint8Array[]][] = [
      ['garbage', [new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00, 0x01])]],
      ['another secret', attempt(new RaftWire({ clusterId: 'cairn', secret: 'another-secret-entirely-0123456789' }))],
      ['another cluster', attempt(new RaftWire({ clusterId: 'elsewhere', secret: SECRET }))],
      // The right secret, but a data frame before any hello.
      ['no hello', [attempt(ownWire)[1]]],
    ];
    for (const [what, frames] of tries) {
      expect(await sendFrames(target.url, frames), what).toBe(1008);
    }
    expect(await metric(target.url, 'cairn_master_raft_bad_peer_frames_total')).toBe(4);
    expect(target.raft!.status().badPeerFrames).toBe(4);
    expect(target.raft!.status().replayedPeerFrames).toBe(0);
    expect(leader.raft!.status().role).toBe('leader');
    for (const m of masters) expect(m.raft!.status().term).toBe(termBefore);
  });

  it('refuses a captured frame sent again on its own connection, and on a new one opened with its captured hello', async () => {
    const leaderId = leader.raft!.status().id;
    const targetWs = target.url.replace('http', 'ws');
    // The leader's connection to the target: its hello names the leader; then data frames.
    const [socket, frames] = await waitFor('frames captured on the leader\'s connection to the target', () =>
      [...captured].find(([ws, list]) => ws.url.startsWith(targetWs) && ws.readyState === WebSocket.OPEN && list.length >= 3 && kindOf(list[0]) === 1 &&
        Number((Hello.decode((Frame.decode(list[0]) as unknown as { payload: Uint8Array }).payload) as unknown as { from: number }).from) === leaderId), 10_000);
    const [hello, data] = [frames[0], frames[1]];
    expect(kindOf(data)).toBe(0);
    const before = target.raft!.status();

    // 1. The same connection: the frame's counter is behind the last one accepted.
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    rawSend(socket, data);
    expect(await closed).toBe(1008);
    await waitFor('the replay counted', () => target.raft!.status().replayedPeerFrames === 1 || undefined, 5_000);
    expect(await metric(target.url, 'cairn_master_raft_replayed_peer_frames_total')).toBe(1);

    // 2. A new connection: the captured hello is authentic and answered, but with a fresh
    //    nonce, so the captured frame is not under this connection's keys.
    expect(await sendFrames(target.url, [hello, data], true)).toBe(1008);
    await waitFor('the second refusal counted', () => target.raft!.status().badPeerFrames === before.badPeerFrames + 2 || undefined, 5_000);
    expect(target.raft!.status().replayedPeerFrames).toBe(1);

    // Unharmed: same leader, same term, nothing applied that was not there, and a write
    // commits on every master (the leader has dialled the target again).
    expect(leader.raft!.status().role).toBe('leader');
    for (const m of masters) expect(m.raft!.status().term).toBe(termBefore);
    expect(target.raft!.status().applied).toBe(before.applied);
    const put = await fetch(`${leader.url}/api/v1/roles/after-bad-frames`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weight: 2 }) });
    expect(put.status).toBe(200);
    for (const m of masters) {
      await waitFor(`the write on master ${m.raft!.status().id}`, async () => ((await (await fetch(`${m.url}/api/v1/roles`)).json()).weights['after-bad-frames'] === 2) || undefined, 10_000);
    }
  });
});
