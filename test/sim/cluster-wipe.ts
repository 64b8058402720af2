// A master whose data dir is lost, and the way back an operator takes (README "Masters"):
//   1. The process restarts with its usual --peers on an empty data dir. It asks its peers
//      first (raft-log.ts): one that knows it by its old storage incarnation makes it refuse
//      to start (CAIRN_RAFT_STORAGE_LOST); none answering in time, it founds a group on its
//      own — and is kept out by the first peer it speaks to (the handshake tells it that
//      peer knows it by another incarnation), never voting or acknowledging.
//   2. The operator stops it, removes it (`cairn masters remove`), empties its data dir,
//      starts it with --new-member and adds it (`cairn masters add`): a learner that catches
//      up from the leader, then a voter again.
// Nothing it says under the incarnation made at the wipe may count (cluster.sim.ts checks).

import type { SeededRandom } from '../../shared/random.ts';
import type { NodeId } from '../../shared/raft/types.ts';
import type { SimClock } from './cluster-clock.ts';
import type { SimMaster } from './cluster-master.ts';

/** How often the restarted master's peers answer it before it would found a group alone. */
export const WIPE_REFUSED_START = 0.8;
const POLL_MS = 200;

type Phase = 'wiped' | 'refused' | 'kept-out' | 'removing' | 'joining' | 'promoting';

export interface ReAddWorld {
  readonly clock: SimClock;
  readonly raftCut: ReadonlySet<NodeId>;
  masters(): SimMaster[];
  countFault(name: string): void;
}

export class MemberReAdd {
  private phase: Phase = 'wiped';
  private incarnations = 0;
  /** The incarnation the wiped storage was made again with: nothing said under it may count. */
  private readonly lost: string;

  constructor(
    private readonly world: ReAddWorld,
    readonly master: SimMaster,
    private readonly rng: SeededRandom,
    private readonly done: () => void,
  ) {
    this.lost = this.newIncarnation();
    master.wipe(this.lost);
  }

  private newIncarnation(): string {
    return `${this.master.id}.w${this.world.clock.nowMs}.${++this.incarnations}`;
  }

  /** Whether `incarnation` is the wiped storage of `id`, which nothing may count. */
  unadmitted(id: NodeId, incarnation: string): boolean {
    return id === this.master.id && incarnation === this.lost;
  }

  /** Whether this procedure, not a plain restart, brings `id` back now (until it is started afresh, with --new-member). */
  holdsDown(id: NodeId): boolean {
    return id === this.master.id && this.phase !== 'joining' && this.phase !== 'promoting';
  }

  describe(): string {
    return `${this.master.id} (${this.phase})`;
  }

  /** Step 1: restarted with its usual peers; `peersAnswer`: whether they answer it in time. */
  restartWithPeers(peersAnswer: boolean): void {
    if (this.phase !== 'wiped') return;
    const m = this.master;
    const knower = peersAnswer && this.world.masters().some((p) => {
      if (p === m || !p.up || this.world.raftCut.has(p.id)) return false;
      const known = p.knownIncarnation(m.id);
      return known !== undefined && known !== m.disk.incarnation;
    });
    if (knower) {
      this.world.countFault('wiped-master-refused-to-start');
      this.phase = 'refused';
      return;
    }
    this.world.countFault('wiped-master-founded-alone');
    m.startEmpty(this.world.masters().map((x) => x.id));
    this.phase = 'kept-out';
  }

  /** Step 2: the operator removes it, starts it afresh and adds it back. */
  begin(): void {
    if (this.phase !== 'wiped' && this.phase !== 'refused' && this.phase !== 'kept-out') return;
    if (this.master.up) this.master.crash();
    this.phase = 'removing';
    this.poll();
  }

  private poll(): void {
    const leader = this.world.masters().find((x) => x.up && !x.keptOut && x.node.role === 'leader');
    if (leader) this.advance(leader);
    if (this.phase === 'promoting' && leader?.node.status().config.voters.includes(this.master.id)) {
      this.done();
      return;
    }
    this.world.clock.after(this.rng.range(POLL_MS / 2, POLL_MS * 2), () => this.poll());
  }

  private advance(leader: SimMaster): void {
    const id = this.master.id;
    const cs = leader.node.status().config;
    const member = cs.voters.includes(id) || cs.learners.includes(id);
    switch (this.phase) {
      case 'removing':
        if (member) {
          leader.proposeConfChange({ type: 'remove', nodeId: id });
          return;
        }
        // Removed: its data dir emptied, it starts with --new-member and waits to be added.
        this.master.wipe(this.newIncarnation());
        this.master.startEmpty(undefined);
        this.phase = 'joining';
        return;
      case 'joining':
        if (cs.learners.includes(id) || cs.voters.includes(id)) this.phase = 'promoting';
        else leader.proposeConfChange({ type: 'addLearner', nodeId: id });
        return;
      case 'promoting':
        // Raft refuses until the learner has caught up; the operator's add asks again.
        if (!cs.voters.includes(id)) leader.proposeConfChange({ type: 'promote', nodeId: id });
        return;
      default:
        return;
    }
  }
}
