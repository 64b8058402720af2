// The hierarchical DRF allocator: decides which framework is offered each agent's free
// resources. Pure: the master feeds it events (agents and frameworks coming and going,
// resources given back) and calls `allocate(nowMs)` each cycle; it returns the offers and
// never touches a socket, a timer or a clock.
//
// Two levels of fairness, as in Mesos: roles are ordered by weighted dominant share, and the
// frameworks of a role by their own dominant share. For each agent, the lowest-share role
// that has a framework able to take the agent wins, and within it the lowest-share such
// framework gets everything free on the agent, as one offer. Offered resources count as that
// framework's until given back, so the next agent of the same cycle may go to someone else.
//
// Three things come before that order. A role below its quota's guarantee that asks is served
// first. Then priority classes: frameworks of a higher class are offered an agent before any
// of a lower one, and DRF orders each class alone. And a role at its quota's limit is offered
// no more than the limit leaves (offers are cut down to it). An agent freed by preemption may
// be earmarked for the preemptor for a while, so the work it displaced does not take it back.

import { CairnError } from '../../shared/errors.ts';
import { Resources, SCALAR_NAMES, type ScalarName } from '../../shared/resources.ts';
import { DrfSorter } from './drf-sorter.ts';
import { OfferFilters } from './offer-filters.ts';

export interface Offer {
  frameworkId: string;
  agentId: string;
  resources: Resources;
}

export interface AllocatorOptions {
  /** Weight per role name; roles not named weigh 1. */
  roleWeights?: Record<string, number>;
}

/**
 * What the allocator asks of the roles' quotas. `allocated` maps each role to what that exact
 * role holds (scalars); subtrees of hierarchical roles (`team/user`) are the policy's business.
 */
export interface QuotaPolicy {
  /** How much more the role may get, per scalar; a scalar absent is unlimited; undefined: no limit at all. */
  headroom(role: string, allocated: ReadonlyMap<string, Resources>): Partial<Record<ScalarName, number>> | undefined;
  /** Whether the role, or a role above it, holds less than its guarantee. */
  belowGuarantee(role: string, allocated: ReadonlyMap<string, Resources>): boolean;
}

/**
 * Smallest free amount worth an offer (Mesos' MIN_CPUS and MIN_MEM), in thousandths:
 * 0.01 cpus or 32 MiB. Less is not enough to run anything, and offering it would only
 * churn offers and filters.
 */
const MIN_CPUS_MILLI = 10;
const MIN_MEM_MILLI = 32_000;

function worthOffering(r: Resources): boolean {
  return r.getMilli('cpus') >= MIN_CPUS_MILLI || r.getMilli('mem') >= MIN_MEM_MILLI;
}

/** The scalars of r without its ports: ports from different agents would merge as a set. */
function scalarsOf(r: Resources): Resources {
  return Resources.of({ cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus });
}

interface AgentEntry {
  readonly id: string;
  readonly total: Resources;
  /** total's scalars, for the cluster total. */
  readonly scalarTotal: Resources;
  /** Everything held on the agent: the sum of `holdings` and `unattributed`. Never exceeds total. */
  allocated: Resources;
  active: boolean;
  /** What each framework holds here (offers outstanding and tasks running). */
  readonly holdings: Map<string, Resources>;
  /**
   * Held by no known framework: tasks reported without an owner when the agent was added,
   * or left behind by a removed framework. Not offered until given back.
   */
  unattributed: Resources;
}

interface FrameworkEntry {
  readonly id: string;
  readonly role: string;
  /** Its priority class's rank: higher is offered first. */
  readonly classRank: number;
  /** Opted in to agents with GPUs (Mesos' GPU_RESOURCES capability). */
  gpuAware: boolean;
  active: boolean;
  suppressed: boolean;
  /** Agents where it holds something. */
  readonly agents: Set<string>;
  readonly filters: OfferFilters;
}

export class Allocator {
  private readonly agents = new Map<string, AgentEntry>();
  /** Agents in the order they were added; each cycle starts one position further along. */
  private readonly agentOrder: AgentEntry[] = [];
  private cycle = 0;
  private clusterTotal = Resources.EMPTY;

  private readonly frameworks = new Map<string, FrameworkEntry>();
  /** Roles that have frameworks; active while one of them may receive offers. */
  private readonly roleSorter = new DrfSorter();
  /** Per class rank and role, their frameworks; active while the framework is active and not suppressed. */
  private readonly frameworkSorters = new Map<string, DrfSorter>();
  /** The class ranks each role has frameworks in. */
  private readonly roleRanks = new Map<string, Set<number>>();
  /** Every class rank that has a framework, highest first. */
  private ranks: number[] = [];
  private readonly roleWeights = new Map<string, number>();
  /** What each role holds (scalars), for its quota. */
  private readonly roleAllocated = new Map<string, Resources>();
  private quotas: QuotaPolicy | undefined;
  /** Agents whose free resources go only to one framework until a time (after a preemption). */
  private readonly earmarks = new Map<string, { frameworkId: string; untilMs: number }>();

  constructor(opts: AllocatorOptions = {}) {
    for (const [role, weight] of Object.entries(opts.roleWeights ?? {})) this.setRoleWeight(role, weight);
  }

  /** The roles' quotas (guarantees and limits); undefined for none. Read at every offer. */
  setQuotas(policy: QuotaPolicy | undefined): void {
    this.quotas = policy;
  }

  /** What each role holds now (scalars, offers outstanding included). */
  roleAllocations(): ReadonlyMap<string, Resources> {
    return this.roleAllocated;
  }

  /**
   * Until `untilMs`, what is free on the agent is offered to this framework only: the agent's
   * tasks were preempted for it. Ends early once it launches there (clearEarmark), or leaves.
   * An offer alone does not end it: a framework that declines while its gang is not yet whole
   * must find the agent still kept for it.
   */
  earmark(agentId: string, frameworkId: string, untilMs: number): void {
    this.agent(agentId);
    this.framework(frameworkId);
    this.earmarks.set(agentId, { frameworkId, untilMs });
  }

  /** The framework launched on the agent: what is left there is everyone's again. */
  clearEarmark(agentId: string, frameworkId: string): void {
    if (this.earmarks.get(agentId)?.frameworkId === frameworkId) this.earmarks.delete(agentId);
  }

  earmarkOf(agentId: string): string | undefined {
    return this.earmarks.get(agentId)?.frameworkId;
  }

  setRoleWeight(role: string, weight: number): void {
    if (!Number.isFinite(weight) || weight <= 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', `role '${role}' needs a finite weight > 0, got ${weight}`, 'weight');
    }
    this.roleWeights.set(role, weight);
    if (this.roleSorter.has(role)) this.roleSorter.setWeight(role, weight);
  }

  // ---- agents ----

  /**
   * `used` is what tasks already hold on the agent (a master that restarted learns it from the
   * agent); `usedBy` says which framework holds which part, so that it counts in their shares.
   * Any part of `used` not in `usedBy` stays held by nobody until given back. Without `used`,
   * the sum of `usedBy` is used.
   */
  addAgent(agentId: string, total: Resources, used?: Resources, usedBy?: { frameworkId: string; resources: Resources }[]): void {
    if (this.agents.has(agentId)) throw new CairnError('CAIRN_BAD_REQUEST', `agent '${agentId}' is already known`, 'agentId');
    let attributed = Resources.EMPTY;
    for (const u of usedBy ?? []) {
      this.framework(u.frameworkId);
      attributed = attributed.add(u.resources);
    }
    const held = used ?? attributed;
    if (!held.contains(attributed)) {
      throw new CairnError('CAIRN_BAD_REQUEST', `usedBy (${attributed.toString()}) is more than used (${held.toString()})`, 'usedBy');
    }
    if (!total.contains(held)) {
      throw new CairnError('CAIRN_BAD_REQUEST', `used (${held.toString()}) is more than the agent's total (${total.toString()})`, 'used');
    }
    const agent: AgentEntry = {
      id: agentId,
      total,
      scalarTotal: scalarsOf(total),
      allocated: held,
      active: true,
      holdings: new Map(),
      unattributed: held.subtract(attributed),
    };
    this.agents.set(agentId, agent);
    this.agentOrder.push(agent);
    for (const u of usedBy ?? []) {
      if (!u.resources.isEmpty()) this.hold(this.framework(u.frameworkId), agent, u.resources);
    }
    this.setClusterTotal(this.clusterTotal.add(agent.scalarTotal));
  }

  /** The agent is gone: what was held on it is forgotten, and so are filters on it. */
  removeAgent(agentId: string): void {
    const agent = this.agent(agentId);
    for (const [frameworkId, held] of agent.holdings) this.release(this.framework(frameworkId), agent, held);
    for (const fw of this.frameworks.values()) fw.filters.clearAgent(agentId);
    if (agent.active) this.setClusterTotal(this.clusterTotal.subtract(agent.scalarTotal));
    this.agents.delete(agentId);
    this.earmarks.delete(agentId);
    this.agentOrder.splice(this.agentOrder.indexOf(agent), 1);
  }

  /** Inactive agents (unreachable, draining) are never offered and leave the cluster total. */
  setAgentActive(agentId: string, active: boolean): void {
    const agent = this.agent(agentId);
    if (agent.active === active) return;
    agent.active = active;
    this.setClusterTotal(active ? this.clusterTotal.add(agent.scalarTotal) : this.clusterTotal.subtract(agent.scalarTotal));
  }

  // ---- frameworks ----

  /**
   * A framework not `gpuAware` is never offered an agent that has GPUs, so that CPU-only
   * work does not squat on the hosts GPU work needs (Mesos' GPU_RESOURCES capability).
   */
  addFramework(frameworkId: string, role: string, opts: { gpuAware?: boolean; classRank?: number } = {}): void {
    if (this.frameworks.has(frameworkId)) {
      throw new CairnError('CAIRN_BAD_REQUEST', `framework '${frameworkId}' is already known`, 'frameworkId');
    }
    if (role === '') throw new CairnError('CAIRN_BAD_REQUEST', 'must not be empty', 'role');
    const classRank = opts.classRank ?? 0;
    if (!Number.isInteger(classRank) || classRank < 0) throw new CairnError('CAIRN_BAD_REQUEST', `must be an integer >= 0, got ${classRank}`, 'classRank');
    if (!this.roleSorter.has(role)) this.roleSorter.add(role, this.roleWeights.get(role) ?? 1);
    const key = sorterKey(classRank, role);
    let sorter = this.frameworkSorters.get(key);
    if (sorter === undefined) {
      sorter = new DrfSorter();
      sorter.setTotal(this.clusterTotal);
      this.frameworkSorters.set(key, sorter);
      let ranks = this.roleRanks.get(role);
      if (ranks === undefined) this.roleRanks.set(role, (ranks = new Set()));
      ranks.add(classRank);
      if (!this.ranks.includes(classRank)) this.ranks = [...this.ranks, classRank].sort((a, b) => b - a);
    }
    sorter.add(frameworkId);
    const fw: FrameworkEntry = { id: frameworkId, role, classRank, gpuAware: opts.gpuAware ?? false, active: true, suppressed: false, agents: new Set(), filters: new OfferFilters() };
    this.frameworks.set(frameworkId, fw);
    this.syncActivation(fw);
  }

  /**
   * Forgets the framework and its share. What it held stays held on its agents, owned by
   * nobody, until the caller gives it back (offers rescinded, tasks killed) with
   * recoverResources under the same framework id.
   */
  removeFramework(frameworkId: string): void {
    const fw = this.framework(frameworkId);
    for (const agentId of [...fw.agents]) {
      const agent = this.agent(agentId);
      const held = agent.holdings.get(frameworkId)!;
      this.release(fw, agent, held);
      agent.unattributed = agent.unattributed.add(held);
    }
    this.frameworks.delete(frameworkId);
    for (const [agentId, e] of this.earmarks) if (e.frameworkId === frameworkId) this.earmarks.delete(agentId);
    const key = sorterKey(fw.classRank, fw.role);
    const sorter = this.frameworkSorters.get(key)!;
    sorter.remove(frameworkId);
    if (sorter.size === 0) {
      this.frameworkSorters.delete(key);
      const ranks = this.roleRanks.get(fw.role)!;
      ranks.delete(fw.classRank);
      if (ranks.size === 0) {
        this.roleRanks.delete(fw.role);
        this.roleSorter.remove(fw.role);
      }
      if (![...this.roleRanks.values()].some((r) => r.has(fw.classRank))) this.ranks = this.ranks.filter((r) => r !== fw.classRank);
    }
    if (this.roleSorter.has(fw.role)) this.syncRole(fw.role);
  }

  classRankOf(frameworkId: string): number {
    return this.framework(frameworkId).classRank;
  }

  hasFramework(frameworkId: string): boolean {
    return this.frameworks.has(frameworkId);
  }

  isGpuAware(frameworkId: string): boolean {
    return this.framework(frameworkId).gpuAware;
  }

  /** A resubscribing framework may change its capabilities. */
  setGpuAware(frameworkId: string, gpuAware: boolean): void {
    this.framework(frameworkId).gpuAware = gpuAware;
  }

  hasAgent(agentId: string): boolean {
    return this.agents.has(agentId);
  }

  /** A disconnected framework keeps what it holds but is offered nothing. */
  setFrameworkActive(frameworkId: string, active: boolean): void {
    const fw = this.framework(frameworkId);
    fw.active = active;
    this.syncActivation(fw);
  }

  suppress(frameworkId: string): void {
    const fw = this.framework(frameworkId);
    fw.suppressed = true;
    this.syncActivation(fw);
  }

  /** Un-suppresses and clears every filter the framework made. */
  revive(frameworkId: string): void {
    const fw = this.framework(frameworkId);
    fw.suppressed = false;
    fw.filters.clear();
    this.syncActivation(fw);
  }

  // ---- resources ----

  /**
   * Give back resources a framework held on an agent (unused part of an offer, a declined offer, a
   * finished task). With refuseMs > 0 add a filter: the framework is not offered resources on that
   * agent that are contained in `resources` until nowMs + refuseMs.
   *
   * Resources held by nobody (see addAgent and removeFramework) may be given back under any
   * framework id, including one no longer known.
   */
  recoverResources(frameworkId: string, agentId: string, resources: Resources, refuseMs: number, nowMs: number): void {
    if (Number.isNaN(refuseMs) || refuseMs < 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', `must be a number >= 0, got ${refuseMs}`, 'refuseMs');
    }
    const agent = this.agent(agentId);
    const fw = this.frameworks.get(frameworkId);
    if (resources.isEmpty()) {
      if (fw === undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `no framework '${frameworkId}'`, 'frameworkId');
      return; // nothing to give back, and refusing nothing would filter nothing
    }
    const held = fw === undefined ? undefined : agent.holdings.get(frameworkId);
    if (fw !== undefined && held !== undefined && held.contains(resources)) {
      this.release(fw, agent, resources);
    } else if (agent.unattributed.contains(resources)) {
      agent.unattributed = agent.unattributed.subtract(resources);
    } else if (fw === undefined) {
      throw new CairnError(
        'CAIRN_UNKNOWN_FRAMEWORK',
        `no framework '${frameworkId}', and nothing unowned on agent '${agentId}' covers ${resources.toString()}`,
        'frameworkId',
      );
    } else {
      throw new CairnError(
        'CAIRN_INSUFFICIENT_RESOURCES',
        `framework '${frameworkId}' holds ${held?.toString() || 'nothing'} on agent '${agentId}', cannot give back ${resources.toString()}`,
      );
    }
    agent.allocated = agent.allocated.subtract(resources);
    if (fw !== undefined && refuseMs > 0) fw.filters.add(agentId, resources, nowMs, nowMs + refuseMs);
  }

  /** One allocation cycle at time nowMs: returns the offers made. Offered resources count as allocated to the framework (and its role) until recovered. */
  allocate(nowMs: number): Offer[] {
    const offers: Offer[] = [];
    const order = this.agentOrder;
    const n = order.length;
    if (n === 0) return offers;
    const start = this.cycle % n;
    this.cycle = (this.cycle + 1) % n;
    for (let i = 0; i < n; i++) {
      const agent = order[(start + i) % n];
      if (!agent.active || agent.allocated === agent.total) continue;
      const available = agent.allocated.isEmpty() ? agent.total : agent.total.subtract(agent.allocated);
      if (!worthOffering(available)) continue;
      const picked = this.pick(agent.id, available, nowMs);
      if (picked === undefined) continue;
      const { fw, offer } = picked;
      this.hold(fw, agent, offer);
      // allocated + (total - allocated): the same value, without the arithmetic.
      agent.allocated = offer === available ? agent.total : agent.allocated.add(offer);
      offers.push({ frameworkId: fw.id, agentId: agent.id, resources: offer });
    }
    return offers;
  }

  available(agentId: string): Resources {
    const agent = this.agent(agentId);
    return agent.total.subtract(agent.allocated);
  }

  allocated(agentId: string): Resources {
    return this.agent(agentId).allocated;
  }

  /** The framework's dominant share of the cluster (unweighted). */
  frameworkShare(frameworkId: string): number {
    const fw = this.framework(frameworkId);
    return this.frameworkSorters.get(sorterKey(fw.classRank, fw.role))!.share(frameworkId);
  }

  /** The role's dominant share of the cluster (unweighted: weights decide order, not share); 0 for a role without frameworks. */
  roleShare(role: string): number {
    return this.roleSorter.has(role) ? this.roleSorter.share(role) : 0;
  }

  // ---- internals ----

  /**
   * The framework that gets the agent: the lowest-share role that has a framework able to
   * take it, then that role's lowest-share such framework. Only active, unsuppressed
   * frameworks are in the sorters, so what is left to check is the framework's filters.
   */
  private pick(agentId: string, available: Resources, nowMs: number): { fw: FrameworkEntry; offer: Resources } | undefined {
    const q = this.query;
    q.agentId = agentId;
    q.agentHasGpus = this.agents.get(agentId)!.total.getMilli('gpus') > 0;
    q.available = available;
    q.nowMs = nowMs;
    q.chosen = undefined;
    q.offer = available;
    q.onlyFramework = undefined;
    q.belowGuaranteeOnly = false;
    const mark = this.earmarks.get(agentId);
    if (mark !== undefined) {
      if (mark.untilMs <= nowMs) this.earmarks.delete(agentId);
      else q.onlyFramework = mark.frameworkId;
    }
    if (this.quotas !== undefined) {
      // A role below its guarantee that asks comes first, whatever its class.
      q.belowGuaranteeOnly = true;
      this.byClass();
      q.belowGuaranteeOnly = false;
    }
    if (q.chosen === undefined) this.byClass();
    // Set by the sorters' callbacks, which the compiler cannot see.
    const chosen = q.chosen as FrameworkEntry | undefined;
    const offer = q.offer;
    q.chosen = undefined;
    q.available = Resources.EMPTY;
    q.offer = Resources.EMPTY;
    if (chosen === undefined) return undefined;
    return { fw: chosen, offer };
  }

  /** The highest class first; within it, the roles by weighted share. */
  private byClass(): void {
    const q = this.query;
    for (const rank of this.ranks) {
      q.rank = rank;
      this.roleSorter.first(this.roleTakes);
      if (q.chosen !== undefined) return;
    }
  }

  // What pick() is looking for, and the callbacks it hands the sorters. Made once rather
  // than as closures per agent: a cycle visits up to tens of thousands of agents.
  private readonly query: {
    agentId: string; agentHasGpus: boolean; available: Resources; nowMs: number; rank: number;
    /** Set by the earmark of the agent: no other framework may take it. */
    onlyFramework: string | undefined;
    belowGuaranteeOnly: boolean;
    chosen: FrameworkEntry | undefined;
    /** What the chosen framework is offered: the available resources, cut down to its role's quota limit. */
    offer: Resources;
  } = { agentId: '', agentHasGpus: false, available: Resources.EMPTY, nowMs: 0, rank: 0, onlyFramework: undefined, belowGuaranteeOnly: false, chosen: undefined, offer: Resources.EMPTY };

  private readonly roleTakes = (role: string): boolean => {
    const q = this.query;
    const sorter = this.frameworkSorters.get(sorterKey(q.rank, role));
    if (sorter === undefined || sorter.activeCount === 0) return false;
    if (q.belowGuaranteeOnly && !this.quotas!.belowGuarantee(role, this.roleAllocated)) return false;
    let offer = q.available;
    if (this.quotas !== undefined) {
      const cut = this.withinLimit(role, q.available);
      if (cut === undefined) return false;
      offer = cut;
    }
    q.offer = offer;
    return sorter.first(this.frameworkTakes) !== undefined;
  };

  private readonly frameworkTakes = (frameworkId: string): boolean => {
    const q = this.query;
    if (q.onlyFramework !== undefined && q.onlyFramework !== frameworkId) return false;
    const fw = this.frameworks.get(frameworkId)!;
    if (q.agentHasGpus && !fw.gpuAware) return false;
    if (fw.filters.filtered(q.agentId, q.offer, q.nowMs)) return false;
    q.chosen = fw;
    return true;
  };

  /** `available` cut down to what the role's limit leaves; undefined when that is not worth an offer. */
  private withinLimit(role: string, available: Resources): Resources | undefined {
    const room = this.quotas!.headroom(role, this.roleAllocated);
    if (room === undefined) return available;
    let cut = false;
    const init: Record<ScalarName, number> = { cpus: 0, mem: 0, disk: 0, gpus: 0 };
    for (const n of SCALAR_NAMES) {
      const have = available.get(n);
      const left = room[n];
      if (left !== undefined && left < have) {
        init[n] = Math.max(0, left);
        cut = true;
      } else {
        init[n] = have;
      }
    }
    if (!cut) return available;
    const offer = Resources.of({ ...init, ports: [...available.ports] });
    return worthOffering(offer) ? offer : undefined;
  }

  /** Counts `resources` on the agent as the framework's, in its share and its role's. */
  private hold(fw: FrameworkEntry, agent: AgentEntry, resources: Resources): void {
    const prev = agent.holdings.get(fw.id);
    agent.holdings.set(fw.id, prev === undefined ? resources : prev.add(resources));
    fw.agents.add(agent.id);
    this.frameworkSorters.get(sorterKey(fw.classRank, fw.role))!.allocated(fw.id, resources);
    this.roleSorter.allocated(fw.role, resources);
    const had = this.roleAllocated.get(fw.role);
    const scalars = scalarsOf(resources);
    this.roleAllocated.set(fw.role, had === undefined ? scalars : had.add(scalars));
  }

  /** The reverse of hold; the caller adjusts agent.allocated. */
  private release(fw: FrameworkEntry, agent: AgentEntry, resources: Resources): void {
    const left = agent.holdings.get(fw.id)!.subtract(resources);
    if (left.isEmpty()) {
      agent.holdings.delete(fw.id);
      fw.agents.delete(agent.id);
    } else {
      agent.holdings.set(fw.id, left);
    }
    this.frameworkSorters.get(sorterKey(fw.classRank, fw.role))!.unallocated(fw.id, resources);
    this.roleSorter.unallocated(fw.role, resources);
    const roleLeft = this.roleAllocated.get(fw.role)!.subtract(scalarsOf(resources));
    if (roleLeft.isEmpty()) this.roleAllocated.delete(fw.role);
    else this.roleAllocated.set(fw.role, roleLeft);
  }

  /** A framework is in its role's order while active and unsuppressed; a role while it has one. */
  private syncActivation(fw: FrameworkEntry): void {
    const sorter = this.frameworkSorters.get(sorterKey(fw.classRank, fw.role))!;
    if (fw.active && !fw.suppressed) sorter.activate(fw.id);
    else sorter.deactivate(fw.id);
    this.syncRole(fw.role);
  }

  /** A role is in the order while one of its frameworks, of any class, may be offered. */
  private syncRole(role: string): void {
    let active = false;
    for (const rank of this.roleRanks.get(role) ?? []) if (this.frameworkSorters.get(sorterKey(rank, role))!.activeCount > 0) active = true;
    if (active) this.roleSorter.activate(role);
    else this.roleSorter.deactivate(role);
  }

  private setClusterTotal(total: Resources): void {
    this.clusterTotal = total;
    this.roleSorter.setTotal(total);
    for (const sorter of this.frameworkSorters.values()) sorter.setTotal(total);
  }

  private agent(agentId: string): AgentEntry {
    const a = this.agents.get(agentId);
    if (a === undefined) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${agentId}'`, 'agentId');
    return a;
  }

  private framework(frameworkId: string): FrameworkEntry {
    const f = this.frameworks.get(frameworkId);
    if (f === undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `no framework '${frameworkId}'`, 'frameworkId');
    return f;
  }
}

function sorterKey(classRank: number, role: string): string {
  return `${classRank}\u0000${role}`;
}
