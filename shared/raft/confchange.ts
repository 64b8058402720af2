// Single-server membership changes on a ConfState: what each change means, which ones make
// no sense whatever the group's health, and how a change travels inside a log entry.
// Checks that depend on the group's health (a change pending, a quorum left, a learner
// caught up) are the leader's, in raft.ts.

import { CairnError } from '../errors.ts';
import type { ConfChange, ConfChangeType, ConfState, NodeId } from './types.ts';

/** Why `cc` cannot apply to `cs`, or undefined if it can. */
export function confChangeProblem(cs: ConfState, cc: ConfChange): CairnError | undefined {
  if (!Number.isSafeInteger(cc.nodeId) || cc.nodeId <= 0) {
    return new CairnError('CAIRN_RAFT_BAD_CHANGE', `node id must be a positive integer, got ${cc.nodeId}`, 'nodeId');
  }
  const voter = cs.voters.includes(cc.nodeId);
  const learner = cs.learners.includes(cc.nodeId);
  switch (cc.type) {
    case 'addLearner':
      if (voter || learner) {
        return new CairnError('CAIRN_RAFT_BAD_CHANGE', `node ${cc.nodeId} is already a ${voter ? 'voter' : 'learner'}`, 'nodeId');
      }
      return undefined;
    case 'promote':
      if (!learner) {
        return new CairnError(
          'CAIRN_RAFT_BAD_CHANGE',
          voter ? `node ${cc.nodeId} is already a voter` : `node ${cc.nodeId} is not a learner; add it as a learner first`,
          'nodeId',
        );
      }
      return undefined;
    case 'remove':
      if (!voter && !learner) {
        return new CairnError('CAIRN_RAFT_BAD_CHANGE', `node ${cc.nodeId} is not a member`, 'nodeId');
      }
      if (voter && cs.voters.length === 1) {
        return new CairnError('CAIRN_RAFT_NO_QUORUM', `removing node ${cc.nodeId}, the last voter, would leave no quorum`, 'nodeId');
      }
      return undefined;
    default:
      return new CairnError('CAIRN_RAFT_BAD_CHANGE', `unknown change type '${String((cc as ConfChange).type)}'`, 'type');
  }
}

/** The membership after `cc`. A change that cannot apply leaves it as it was (see confChangeProblem). */
export function applyConfChangeTo(cs: ConfState, cc: ConfChange): ConfState {
  if (confChangeProblem(cs, cc) !== undefined) return cs;
  const sorted = (ids: NodeId[]) => ids.sort((a, b) => a - b);
  switch (cc.type) {
    case 'addLearner':
      return { voters: [...cs.voters], learners: sorted([...cs.learners, cc.nodeId]) };
    case 'promote':
      return { voters: sorted([...cs.voters, cc.nodeId]), learners: cs.learners.filter((id) => id !== cc.nodeId) };
    case 'remove':
      return { voters: cs.voters.filter((id) => id !== cc.nodeId), learners: cs.learners.filter((id) => id !== cc.nodeId) };
  }
}

/**
 * Replacing voter `oldId` by a new node `newId` one server at a time: add it as a learner
 * (it catches up without voting), promote it, then remove the old one. Each step is
 * proposed once the previous one is applied; the leader refuses the promotion until the
 * learner has caught up.
 */
export function planReplacement(cs: ConfState, oldId: NodeId, newId: NodeId): ConfChange[] {
  if (!cs.voters.includes(oldId)) {
    throw new CairnError('CAIRN_RAFT_BAD_CHANGE', `node ${oldId} is not a voter`, 'oldId');
  }
  const plan: ConfChange[] = [
    { type: 'addLearner', nodeId: newId },
    { type: 'promote', nodeId: newId },
    { type: 'remove', nodeId: oldId },
  ];
  const problem = confChangeProblem(cs, plan[0]);
  if (problem !== undefined) throw problem;
  return plan;
}

export function confStateEqual(a: ConfState, b: ConfState): boolean {
  const same = (x: readonly NodeId[], y: readonly NodeId[]) => {
    if (x.length !== y.length) return false;
    const sx = [...x].sort((p, q) => p - q);
    const sy = [...y].sort((p, q) => p - q);
    return sx.every((v, i) => v === sy[i]);
  };
  return same(a.voters, b.voters) && same(a.learners, b.learners);
}

// In a log entry a change is 9 bytes — a type code and the node id as an unsigned 64-bit
// big-endian integer — followed by its context, if any.
const TYPE_CODES: Record<ConfChangeType, number> = { addLearner: 1, promote: 2, remove: 3 };
const CODE_TYPES = new Map<number, ConfChangeType>(Object.entries(TYPE_CODES).map(([t, c]) => [c, t as ConfChangeType]));
const HEADER_BYTES = 9;

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const context = cc.context ?? new Uint8Array(0);
  const out = new Uint8Array(HEADER_BYTES + context.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, TYPE_CODES[cc.type]);
  view.setBigUint64(1, BigInt(cc.nodeId));
  out.set(context, HEADER_BYTES);
  return out;
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  const type = data.length >= HEADER_BYTES ? CODE_TYPES.get(data[0]) : undefined;
  if (type === undefined) {
    throw new CairnError('CAIRN_RAFT_BAD_CHANGE', `malformed membership change entry (${data.length} bytes)`, 'entry');
  }
  const id = new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(1);
  if (id > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new CairnError('CAIRN_RAFT_BAD_CHANGE', 'node id in membership change entry is out of range', 'entry');
  }
  const cc: ConfChange = { type, nodeId: Number(id) };
  return data.length > HEADER_BYTES ? { ...cc, context: data.slice(HEADER_BYTES) } : cc;
}
