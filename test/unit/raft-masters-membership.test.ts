// Changing the masters' membership, the pure parts: URLs carried in the changes' context and
// in the snapshot, the refusals made before anything is proposed (each with its stable code
// and the field named), the single-server steps of an add or a replacement, the listing,
// and the `cairn masters` command line.

import { describe, expect, it } from 'vitest';
import { runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import { mastersTable } from '../../bin/commands/daemons/masters.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import { decodeConfChange, encodeConfChange } from '../../shared/raft/confchange.ts';
import type { ConfState } from '../../shared/raft/types.ts';
import {
  addMasterProblem, checkMemberId, checkMemberUrl, decodeMemberContext, decodeReplicaSnapshot, encodeMemberContext,
  encodeReplicaSnapshot, mastersListing, parseAddMasterRequest, planAddMaster, removeMasterProblem,
  urlsAfterChange, urlsFromSnapshot, type LocalMembership,
} from '../../master/replication/members.ts';

const u = (n: number) => `http://10.0.0.${n}:5050`;
const THREE: ConfState = { voters: [1, 2, 3], learners: [] };
const URLS = new Map([[1, u(1)], [2, u(2)], [3, u(3)]]);

function refusal(fn: () => unknown): { code: string; field: string | undefined } {
  try {
    fn();
  } catch (err) {
    return { code: (err as { code: string }).code, field: (err as { field?: string }).field };
  }
  throw new Error('expected a refusal');
}

describe('membership changes in the log carry the new master URL', () => {
  it('round-trips a change with a context, and still reads the 9-byte form', () => {
    const cc = { type: 'addLearner' as const, nodeId: 4, context: encodeMemberContext(u(4)) };
    const back = decodeConfChange(encodeConfChange(cc));
    expect(back.type).toBe('addLearner');
    expect(back.nodeId).toBe(4);
    expect(decodeMemberContext(back.context)).toBe(u(4));
    expect(decodeConfChange(encodeConfChange({ type: 'remove', nodeId: 2 }))).toEqual({ type: 'remove', nodeId: 2 });
    expect(decodeMemberContext(new TextEncoder().encode('not json'))).toBeUndefined();
  });

  it('learns an added member, forgets a removed one, never forgets itself', () => {
    const added = urlsAfterChange(URLS, { type: 'addLearner', nodeId: 4, context: encodeMemberContext(u(4)) }, 1);
    expect(added.get(4)).toBe(u(4));
    expect(urlsAfterChange(added, { type: 'promote', nodeId: 4 }, 1)).toEqual(added);
    expect(urlsAfterChange(added, { type: 'remove', nodeId: 2 }, 1).has(2)).toBe(false);
    expect(urlsAfterChange(added, { type: 'remove', nodeId: 1 }, 1).get(1)).toBe(u(1));
  });

  it('takes URLs from the snapshot for its members, --peers for the rest, and its own from --peers', () => {
    const peers = new Map([[1, u(1)], [2, u(2)], [3, u(3)]]);
    // Master 2 was removed and 4 added before the snapshot; --peers is the founding list.
    const recorded = new Map([[1, u(1)], [3, u(3)], [4, u(4)]]);
    const conf: ConfState = { voters: [1, 3, 4], learners: [] };
    expect(urlsFromSnapshot(recorded, peers, conf, 1)).toEqual(new Map([[1, u(1)], [3, u(3)], [4, u(4)]]));
    // An older snapshot without URLs: --peers, members only.
    expect(urlsFromSnapshot(undefined, peers, { voters: [1, 3], learners: [] }, 1)).toEqual(new Map([[1, u(1)], [3, u(3)]]));
    // A master added later, still empty: all it has is --peers.
    const joiner = new Map([...peers, [4, u(4)]]);
    expect(urlsFromSnapshot(undefined, joiner, { voters: [], learners: [] }, 4)).toEqual(joiner);
  });

  it('keeps the registry and the URLs together in a snapshot, and reads the older form', () => {
    const registry = { agents: [], frameworks: [], tasks: [] } as never;
    const back = decodeReplicaSnapshot(encodeReplicaSnapshot(registry, URLS));
    expect(back.registry).toEqual(registry);
    expect(back.urls).toEqual(URLS);
    const legacy = decodeReplicaSnapshot(new TextEncoder().encode(JSON.stringify(registry)));
    expect(legacy).toEqual({ registry, urls: undefined, incarnations: new Map() });
    expect(decodeReplicaSnapshot(new Uint8Array(0))).toEqual({ registry: undefined, urls: undefined, incarnations: new Map() });
    // The members' recorded storage incarnations ride along; a snapshot from before them has none.
    expect(decodeReplicaSnapshot(encodeReplicaSnapshot(registry, URLS, [[1, 'a1'], [3, 'c3']])).incarnations).toEqual(new Map([[1, 'a1'], [3, 'c3']]));
    expect(back.incarnations).toEqual(new Map());
  });
});

describe('requests refused before anything is proposed', () => {
  it('checks ids and URLs, naming the field', () => {
    expect(checkMemberId('4')).toBe(4);
    expect(checkMemberUrl('http://10.0.0.4:5050/')).toBe(u(4));
    expect(refusal(() => checkMemberId('x'))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'id' });
    expect(refusal(() => checkMemberId(0))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'id' });
    expect(refusal(() => checkMemberId(1.5))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'id' });
    expect(refusal(() => checkMemberUrl('ftp://h:1'))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'url' });
    expect(refusal(() => checkMemberUrl('http://h:1/api'))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'url' });
    expect(refusal(() => checkMemberUrl(42))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'url' });
    expect(refusal(() => parseAddMasterRequest([]))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'body' });
    expect(refusal(() => parseAddMasterRequest({ id: 4, url: u(4), voter: false }))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'voter' });
    expect(refusal(() => parseAddMasterRequest({ id: 4, url: u(4), replaces: 'two' }))).toEqual({ code: 'CAIRN_BAD_REQUEST', field: 'replaces' });
    expect(parseAddMasterRequest({ id: 4, url: `${u(4)}/`, replaces: 2 })).toEqual({ id: 4, url: u(4), replaces: 2 });
  });

  it('refuses adds that clash with the membership', () => {
    expect(addMasterProblem(THREE, URLS, { id: 4, url: u(4) })).toBeUndefined();
    expect(addMasterProblem(THREE, URLS, { id: 2, url: u(9) })).toMatchObject({ code: 'CAIRN_RAFT_BAD_CHANGE', field: 'id' });
    expect(addMasterProblem(THREE, URLS, { id: 4, url: u(2) })).toMatchObject({ code: 'CAIRN_RAFT_BAD_CHANGE', field: 'url' });
    expect(addMasterProblem(THREE, URLS, { id: 4, url: u(4), replaces: 9 })).toMatchObject({ code: 'CAIRN_RAFT_BAD_CHANGE', field: 'replaces' });
    expect(addMasterProblem(THREE, URLS, { id: 4, url: u(4), replaces: 4 })).toMatchObject({ code: 'CAIRN_RAFT_BAD_CHANGE', field: 'replaces' });
    // A learner at the same URL is an add to finish; at another URL it is a clash.
    const withLearner: ConfState = { voters: [1, 2, 3], learners: [4] };
    const urls = new Map([...URLS, [4, u(4)]]);
    expect(addMasterProblem(withLearner, urls, { id: 4, url: u(4) })).toBeUndefined();
    expect(addMasterProblem(withLearner, urls, { id: 4, url: u(8) })).toMatchObject({ code: 'CAIRN_RAFT_BAD_CHANGE', field: 'id' });
  });

  it('refuses removing a stranger or the last voter', () => {
    expect(removeMasterProblem(THREE, 2)).toBeUndefined();
    expect(removeMasterProblem(THREE, 9)).toMatchObject({ code: 'CAIRN_RAFT_BAD_CHANGE', field: 'id' });
    expect(removeMasterProblem({ voters: [1], learners: [] }, 1)).toMatchObject({ code: 'CAIRN_RAFT_NO_QUORUM', field: 'id' });
    expect(removeMasterProblem(THREE, 9)!.message).not.toMatch(/nodeId/);
  });
});

describe('the steps of an add and of a replacement', () => {
  it('adds as a learner with its URL, then promotes', () => {
    const plan = planAddMaster(THREE, { id: 4, url: u(4) });
    expect(plan.map((c) => [c.type, c.nodeId])).toEqual([['addLearner', 4], ['promote', 4]]);
    expect(decodeMemberContext(plan[0].context)).toBe(u(4));
  });

  it('replaces: learner, promote, remove the old voter (a quorum of voters stays at every step)', () => {
    const plan = planAddMaster(THREE, { id: 4, url: u(4), replaces: 2 });
    expect(plan.map((c) => [c.type, c.nodeId])).toEqual([['addLearner', 4], ['promote', 4], ['remove', 2]]);
  });

  it('finishes an add whose learner is already there', () => {
    const conf: ConfState = { voters: [1, 2, 3], learners: [4] };
    expect(planAddMaster(conf, { id: 4, url: u(4) }).map((c) => c.type)).toEqual(['promote']);
    expect(planAddMaster(conf, { id: 4, url: u(4), replaces: 3 }).map((c) => c.type)).toEqual(['promote', 'remove']);
  });
});

describe('the listing', () => {
  const local: LocalMembership = {
    id: 1, role: 'leader', leader: 1, term: 4, commit: 90, applied: 90,
    conf: { voters: [1, 2, 3], learners: [4] },
    urls: new Map([...URLS, [4, u(4)]]),
    progress: new Map([[1, { match: 90, recentActive: true }], [2, { match: 90, recentActive: true }], [3, { match: 12, recentActive: false }], [4, { match: 80, recentActive: true }]]),
    change: { kind: 'add', id: 4, url: u(4), step: 'promote' },
  };

  it("marks the leader and itself, and gives each member's own word where it answered", () => {
    const view = mastersListing(local, new Map([[2, { role: 'follower', term: 4, applied: 90 }], [3, undefined], [4, { role: 'follower', term: 4, applied: 80 }]]));
    expect(view).toMatchObject({ self: 1, leader: 1, term: 4, commit: 90, change: { kind: 'add', id: 4 } });
    expect(view.masters).toEqual([
      { id: 1, url: u(1), voter: true, leader: true, self: true, reachable: true, role: 'leader', term: 4, applied: 90, match: 90, active: true },
      { id: 2, url: u(2), voter: true, leader: false, self: false, reachable: true, role: 'follower', term: 4, applied: 90, match: 90, active: true },
      { id: 3, url: u(3), voter: true, leader: false, self: false, reachable: false, match: 12, active: false },
      { id: 4, url: u(4), voter: false, leader: false, self: false, reachable: true, role: 'follower', term: 4, applied: 80, match: 80, active: true },
    ]);
    const table = mastersTable(view);
    expect(table.split('\n')[0]).toMatch(/^ID\s+URL\s+MEMBER\s+ROLE\s+TERM\s+APPLIED$/);
    expect(table).toMatch(/^1 \*\s+http:\/\/10\.0\.0\.1:5050\s+voter\s+leader\s+4\s+90$/m);
    expect(table).toMatch(/^3\s+\S+\s+voter\s+unreachable\s+-\s+-$/m);
    expect(table).toMatch(/^4\s+\S+\s+learner\s+follower\s+4\s+80$/m);
  });
});

describe('cairn masters: parsing', () => {
  async function parse(argv: string[]) {
    let err = '';
    const io: CliIo = { stdout: { write: () => true }, stderr: { write: (s: string) => ((err += s), true) }, env: {}, onInterrupt: () => () => undefined } as unknown as CliIo;
    const calls: { command: string; options: any }[] = [];
    const commands = ['up', 'master', 'agent', 'run', 'agents', 'tasks', 'state', 'logs', 'kill', 'top', 'members', 'masters', 'drain'];
    const handlers = Object.fromEntries(commands.map((command) => [command, async (options: unknown) => (calls.push({ command, options }), 0)])) as unknown as CommandHandlers;
    const code = await runCli(argv, io, handlers);
    return { code, ...calls[0], err };
  }

  it('lists by default, on the given master', async () => {
    expect(await parse(['masters'])).toMatchObject({ code: 0, command: 'masters', options: { action: 'list', masterUrl: 'http://127.0.0.1:5050' } });
    expect(await parse(['masters', 'list', '--master', 'http://m2:5050'])).toMatchObject({ options: { action: 'list', masterUrl: 'http://m2:5050' } });
  });

  it('adds, replaces and removes', async () => {
    expect((await parse(['masters', 'add', '4=http://m4:5050', '--master', 'http://m1:5050'])).options).toEqual({ action: 'add', id: 4, url: 'http://m4:5050', masterUrl: 'http://m1:5050' });
    expect((await parse(['masters', 'replace', '2', '5=http://m5:5050'])).options).toMatchObject({ action: 'add', id: 5, url: 'http://m5:5050', replaces: 2 });
    expect((await parse(['masters', 'remove', '3'])).options).toMatchObject({ action: 'remove', id: 3 });
  });

  it('refuses malformed members as usage errors', async () => {
    expect((await parse(['masters', 'add', 'm4:5050'])).code).toBe(2);
    expect((await parse(['masters', 'add', '4=http://a:1,5=http://b:1'])).code).toBe(2);
    expect((await parse(['masters', 'remove', 'zero'])).code).toBe(2);
  });

  it('passes --new-member to a master joining a running group', async () => {
    const r = await parse(['master', '--id', '4', '--peers', '1=http://m1:5050,4=http://m4:5050', '--secret-file', '/s', '--new-member']);
    expect(r.options.raft).toMatchObject({ id: 4, join: true });
    expect((await parse(['master', '--id', '1', '--peers', '1=http://m1:5050'])).options.raft.join).toBeUndefined();
  });
});
