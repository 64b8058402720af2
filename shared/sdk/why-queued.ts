// Why a queued gang (a job's replicas, a trial, an app's instance) does not start, in words a
// person can act on: what is short, by how much, on the agent that comes closest, who holds
// it there, and whether the waiting work's class may preempt them. Pure: the caller passes
// each agent's total, what every running task on it holds (ClusterView.holders), and the
// waiting work's class; it gets one sentence, or undefined when the gang fits in what is free
// now (offers will come).
//
// "worker-0 needs cpus 0.5; the best agent, h1, has cpus 0.3 free (after the gang's other
//  replicas); /dev/web holds cpus 0.2 there; research class may preempt it: no (it is
//  research class too)"
//
// The gang is packed on what is free by the placement pipeline as the frameworks pack it
// (largest first, each on the first agent where it fits), so the replica named is the one
// that does not fit, and the agent named is where it misses by the least.

import { Resources } from '../resources.ts';
import { agentCandidate, type Candidate } from '../placement/candidate.ts';
import { firstFailure, RESOURCE_CHECKS } from '../placement/checks.ts';
import { demandOf, type TaskRequirement } from '../placement/demand.ts';
import { place } from '../placement/pipeline.ts';
import { largestFirst } from '../placement/rank.ts';
import { amountsOf, neededAmounts, readableResources, type WaitResource } from './why-waiting.ts';

type Amounts = Record<WaitResource, number>;

/** What one running task holds on its agent, and who it is. */
export interface RoomHolder {
  /** As people name it: an app's id, `job mnist`. */
  name: string;
  /** Its priority class, canonical. */
  priorityClass: string;
  preemptible: boolean;
  /** What it holds (`cpus:0.2;mem:32;ports:[31000-31000]`). */
  resources: string;
}

/** An agent as the explanation reads it. */
export interface RoomAgent {
  id: string;
  hostname: string;
  /** Its total resources (`cpus:2;mem:1024;ports:[...]`). */
  resources: string;
  /** Offers can come from it (reachable, not draining). */
  available: boolean;
  holders: readonly RoomHolder[];
}

/** One replica or instance of the waiting gang. */
export interface WaitingMember extends TaskRequirement {
  /** How it is named in the sentence: `worker-0`, `instance 3`. */
  label: string;
}

/** The class of the waiting work, and how classes rank (higher preempts lower). */
export interface WaiterClass {
  name: string;
  rank(className: string): number;
}

/** A resources text as the amounts a wait is told in; undefined when it cannot be read. */
function amounts(text: string): Amounts | undefined {
  const r = readableResources(text);
  return r && amountsOf(r);
}

function plus(a: Amounts, b: Amounts): Amounts {
  return { cpus: a.cpus + b.cpus, mem: a.mem + b.mem, disk: a.disk + b.disk, gpus: a.gpus + b.gpus, ports: a.ports + b.ports };
}

/** `cpus 0.5`, `mem 512 MiB`, `ports 2`. */
export function amountText(name: WaitResource, amount: number): string {
  const n = String(Number(Math.max(0, amount).toFixed(3)));
  return name === 'mem' || name === 'disk' ? `${name} ${n} MiB` : `${name} ${n}`;
}

/**
 * `free` less what `held` holds of it. A holder's record may claim more than the agent's
 * total says is left (a task reported before the agent's new total), so each amount stops at
 * zero rather than refusing the whole agent.
 */
function lessHeld(free: Resources, held: Resources): Resources {
  if (free.contains(held)) return free.subtract(held);
  const heldPorts = new Set(held.portList());
  return Resources.of({
    cpus: Math.max(0, free.cpus - held.cpus),
    mem: Math.max(0, free.mem - held.mem),
    disk: Math.max(0, free.disk - held.disk),
    gpus: Math.max(0, free.gpus - held.gpus),
    ports: free.portList().filter((p) => !heldPorts.has(p)).map((p) => ({ begin: p, end: p })),
  });
}

interface Room {
  agent: RoomAgent;
  /** The agent's total, as a candidate (asking whether the member could ever fit there). */
  whole: Candidate;
  /** What is free now, as the candidate the gang is packed on. */
  now: Candidate;
}

/** How far `need` misses on `free`: the sum of each short resource's missing fraction. */
function missBy(free: Amounts, need: Map<WaitResource, number>): number {
  let miss = 0;
  for (const [name, amount] of need) miss += Math.max(0, amount - free[name]) / amount;
  return miss;
}

/**
 * The sentence for a gang that does not fit in what the agents have free; undefined when it
 * does, when no available agent could ever hold its member (the caller says that with
 * explainUnfit), or when there are no agents.
 */
export function explainQueued(members: readonly WaitingMember[], agents: readonly RoomAgent[], waiter: WaiterClass): string | undefined {
  const rooms: Room[] = [];
  for (const agent of agents) {
    if (!agent.available) continue;
    const total = readableResources(agent.resources);
    if (!total) continue;
    let free = total;
    for (const h of agent.holders) {
      const held = readableResources(h.resources);
      if (held) free = lessHeld(free, held);
    }
    rooms.push({ agent, whole: agentCandidate(agent, total), now: agentCandidate(agent, free) });
  }
  // Packed as the frameworks pack a gang: largest first, each on the first agent it fits.
  const demands = largestFirst(members.map((m, i) => demandOf(m, i, m.label)));
  const { placed, unplaced } = place({ demands, candidates: rooms.map((r) => r.now), stopAtFirstMiss: true });
  const miss = unplaced[0];
  if (miss === undefined) return undefined;
  const m = members[miss.demand.key]!;
  const need = neededAmounts(m);
  // Agents whose total could hold it: the best is the one it misses by the least.
  const could = rooms.filter((r) => firstFailure(miss.demand, r.whole, RESOURCE_CHECKS) === undefined);
  if (could.length === 0) return undefined;
  const best = could.reduce((a, b) => (missBy(amountsOf(b.now.left), need) < missBy(amountsOf(a.now.left), need) ? b : a));
  const packed = placed.some((p) => p.candidate === best.now);
  return sentence(m, need, best.agent, amountsOf(best.now.left), packed, members.length > 1, waiter);
}

function sentence(m: WaitingMember, need: Map<WaitResource, number>, agent: RoomAgent, free: Amounts, packed: boolean, gang: boolean, waiter: WaiterClass): string {
  const short = [...need].filter(([name, amount]) => free[name] + 1e-9 < amount).map(([name]) => name);
  const needs = short.map((name) => amountText(name, need.get(name)!)).join(' and ');
  const has = short.map((name) => amountText(name, free[name])).join(' and ');
  const host = agent.hostname || agent.id;
  const after = packed ? ' after the gang\'s other replicas' : '';
  const who = gang ? `${m.label} needs` : 'needs';
  let text = `${who} ${needs}; the best agent, ${host}, has ${has} free${after}`;
  const holders = holdersOf(agent, short);
  if (holders.length === 0) return text;
  const shown = holders.slice(0, 3).map((h) => `${h.name} holds ${short.map((name) => amountText(name, h.held[name])).join(' and ')}${h.tasks > 1 ? ` (${h.tasks} tasks)` : ''}`);
  const more = holders.length > 3 ? `, and ${holders.length - 3} more` : '';
  text += `; ${shown.join(', ')}${more} there`;
  return `${text}; ${preemptionText(holders, waiter)}`;
}

interface HolderGroup {
  name: string;
  held: Amounts;
  tasks: number;
  classes: Set<string>;
  preemptible: boolean;
}

/** The holders of any short resource on the agent, one per name, the largest first. */
function holdersOf(agent: RoomAgent, short: readonly WaitResource[]): HolderGroup[] {
  const groups = new Map<string, HolderGroup>();
  for (const h of agent.holders) {
    const held = amounts(h.resources);
    if (!held || !short.some((name) => held[name] > 0)) continue;
    const g = groups.get(h.name);
    if (g) {
      g.held = plus(g.held, held);
      g.tasks++;
      g.classes.add(h.priorityClass);
      g.preemptible &&= h.preemptible;
    } else {
      groups.set(h.name, { name: h.name, held, tasks: 1, classes: new Set([h.priorityClass]), preemptible: h.preemptible });
    }
  }
  const first = short[0]!;
  return [...groups.values()].sort((a, b) => b.held[first] - a.held[first] || (a.name < b.name ? -1 : 1));
}

/** Whether the waiting class may take them back: only from a strictly lower class, and only what may be preempted. */
function preemptionText(holders: readonly HolderGroup[], waiter: WaiterClass): string {
  const rank = waiter.rank(waiter.name);
  const why = (h: HolderGroup): string | undefined => {
    if (!h.preemptible) return 'it is not preemptible';
    const highest = [...h.classes].sort((a, b) => waiter.rank(b) - waiter.rank(a))[0]!;
    if (waiter.rank(highest) === rank) return `it is ${highest} class too`;
    if (waiter.rank(highest) > rank) return `it is ${highest} class, higher`;
    return undefined;
  };
  const lead = `${waiter.name} class may preempt`;
  if (holders.length === 1) {
    const no = why(holders[0]!);
    return no === undefined ? `${lead} it: yes` : `${lead} it: no (${no})`;
  }
  const may = holders.filter((h) => why(h) === undefined).map((h) => h.name);
  if (may.length === 0) return `${lead} them: no (none is of a lower class and preemptible)`;
  if (may.length === holders.length) return `${lead} them: yes`;
  return `${lead} them: only ${may.join(', ')}`;
}
