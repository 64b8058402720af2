// The JSON of `GET /api/v1/masters` (and of the answers to `POST` and `DELETE` there): the
// replicated masters' membership as one master sees it. `cairn masters` prints it; tests
// read it.

export interface MasterMemberView {
  id: number;
  url: string;
  /** A voter decides elections and commits; a learner only receives the log, catching up. */
  voter: boolean;
  /** Whether this member leads, as the answering master knows it. */
  leader: boolean;
  /** Whether this member is the master that answered. */
  self: boolean;
  /** Whether the member answered the answering master just now (false: down, cut off or slow). */
  reachable: boolean;
  /** Its own word on its Raft role, term and applied index; absent when it did not answer. */
  role?: string;
  term?: number;
  applied?: number;
  /**
   * The leader's view, only when the answering master leads: the last index known to match
   * the leader's log, and whether the member was heard from within the last election timeout.
   */
  match?: number;
  active?: boolean;
}

export interface MastersView {
  /** The answering master's id. */
  self: number;
  /** The leader's id, 0 while none is known. */
  leader: number;
  term: number;
  commit: number;
  /** A membership change in progress on this master (it leads), or null. */
  change: { kind: 'add' | 'remove' | 'replace'; id: number; url?: string; replaces?: number; step: string } | null;
  masters: MasterMemberView[];
}
