// Why a framework's tasks are still waiting, in words a person can act on. Pure: it reads
// the agents of the master's state (`GET /api/v1/state`) and the offers a framework declined,
// and returns sentences; the framework decides when to say them.
//
// Three cases, from worst to normal:
// - no agent could ever fit one task (its total is too small): "no agent has 64 cpus; the
//   largest has 2" — waiting will not help;
// - the agents that could fit it are draining or unreachable: "the 1 agent that could fit it
//   is draining" — waiting helps once an operator acts;
// - offers come but are too small right now (other tasks hold the rest): "waiting: every
//   offer so far had too little mem: 32 MiB free, 512 needed" — waiting is normal.

import { Resources, type MesosResource } from '../resources.ts';
import type { AgentView } from '../master-state.ts';
import { agentCandidate } from '../placement/candidate.ts';
import { NOT_DRAINING, REACHABLE, RESOURCE_CHECKS, RESOURCE_NAMES, shortfall, type ResourceName } from '../placement/checks.ts';
import { demandOf, type TaskRequirement } from '../placement/demand.ts';
import { countReasons, place } from '../placement/pipeline.ts';

/** The resources a task can ask for, in the order they are named (the placement pipeline's). */
export const WAIT_RESOURCES = RESOURCE_NAMES;
export type WaitResource = ResourceName;

/** How much of each resource a task needs (ports: how many), leaving out what it does not ask for. */
export function neededAmounts(req: TaskRequirement): Map<WaitResource, number> {
  const need = new Map<WaitResource, number>();
  const amounts: Record<WaitResource, number> = { cpus: req.cpus, mem: req.mem, disk: req.disk ?? 0, gpus: req.gpus ?? 0, ports: req.ports ?? 0 };
  for (const name of WAIT_RESOURCES) if (amounts[name] > 0) need.set(name, amounts[name]);
  return need;
}

/** How much of each resource a Resources value holds (ports: how many). */
export function amountsOf(r: Resources): Record<WaitResource, number> {
  return { cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus, ports: r.portCount() };
}

/** "64 cpus", "512 MiB of mem", "2 ports". */
export function formatAmount(name: WaitResource, amount: number): string {
  const n = String(Number(amount.toFixed(3)));
  switch (name) {
    case 'mem':
    case 'disk':
      return `${n} MiB of ${name}`;
    case 'ports':
      return `${n} port${amount === 1 ? '' : 's'}`;
    default:
      return `${n} ${name}`;
  }
}

/** The amount alone, with its unit where it has one: "32 MiB", "0.5". */
function bareAmount(name: WaitResource, amount: number): string {
  const n = String(Number(amount.toFixed(3)));
  return name === 'mem' || name === 'disk' ? `${n} MiB` : n;
}

/** A resources text as Resources; undefined when it cannot be read (a wait is explained from what can). */
export function readableResources(text: string): Resources | undefined {
  try {
    return Resources.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Why no offer will fit one task of `req`, judged from the agents' totals and conditions;
 * undefined when some agent that could fit it is available (offers will come, or other
 * tasks hold its resources for now). The placement pipeline judges it, with the resource
 * checks first and the node filters after them, so an agent too small counts as too small
 * whatever its condition.
 */
export function explainUnfit(req: TaskRequirement, agents: readonly AgentView[]): string | undefined {
  const known = agents.map((agent) => ({ agent, total: readableResources(agent.resources) })).filter((a): a is { agent: AgentView; total: Resources } => a.total !== undefined);
  if (known.length === 0) return 'no agent is registered with the master';

  const candidates = known.map(({ agent, total }) => agentCandidate(agent, total, { unreachable: !agent.reachable, draining: agent.draining !== null }));
  const r = place({ demands: [demandOf(req, 0)], candidates, checks: [...RESOURCE_CHECKS, REACHABLE, NOT_DRAINING] });
  if (r.placed.length > 0) return undefined;
  const reasons = countReasons(r.unplaced);
  const unreachable = reasons.get('unreachable') ?? 0;
  const draining = reasons.get('draining') ?? 0;
  const n = unreachable + draining;
  if (n === 0) return noAgentHas(neededAmounts(req), known);
  const subject = n === 1 ? 'the 1 agent that could fit it is' : `the ${n} agents that could fit it are`;
  if (unreachable === 0) return `${subject} draining`;
  if (draining === 0) return `${subject} unreachable`;
  return `${subject} draining (${draining}) or unreachable (${unreachable})`;
}

/** No agent's total holds the task: which resources are short, or which are short together. */
function noAgentHas(need: Map<WaitResource, number>, known: readonly { agent: AgentView; total: Resources }[]): string {
  const short = [...need].flatMap(([name, amount]) => {
    const largest = Math.max(...known.map((a) => amountsOf(a.total)[name]));
    return largest + 1e-9 >= amount ? [] : [{ name, amount, largest }];
  });
  const most = (s: { name: WaitResource; largest: number }) => (s.largest === 0 ? 'none has any' : `the largest has ${bareAmount(s.name, s.largest)}`);
  if (short.length === 1) return `no agent has ${formatAmount(short[0].name, short[0].amount)}; ${most(short[0])}`;
  if (short.length > 1) return `no agent has ${short.map((s) => `${formatAmount(s.name, s.amount)} (${most(s)})`).join(' or ')}`;
  // Each resource is somewhere, but never all of them on one agent.
  const wanted = [...need].map(([name, amount]) => formatAmount(name, amount)).join(' and ');
  const shown = known.slice(0, 3).map((a) => {
    const has = amountsOf(a.total);
    return `${a.agent.hostname || a.agent.id} has ${[...need.keys()].map((name) => formatAmount(name, has[name])).join(' and ')}`;
  });
  const more = known.length > 3 ? `, and ${known.length - 3} more` : '';
  return `no agent has ${wanted} together: ${shown.join(', ')}${more}`;
}

/** What one declined offer lacked: for each short resource, how much it had and how much was needed. */
export function offerShortfall(req: TaskRequirement, offer: readonly MesosResource[] | Resources): Map<WaitResource, { free: number; needed: number }> {
  try {
    return shortfall(demandOf(req, 0), offer instanceof Resources ? offer : Resources.fromMesos(offer));
  } catch {
    return new Map();
  }
}

/**
 * The offers declined as too small since the framework last launched something, summed up
 * in one sentence. `add` records an offer and returns the sentence when it differs from
 * the last one said (so a framework says it once, and again only when it changes);
 * `reset` starts over after a launch.
 */
export class DeclinedOffers {
  private offers = 0;
  private readonly short = new Map<WaitResource, { count: number; mostFree: number; leastFree: number; needed: number }>();
  private lastSaid: string | undefined;

  constructor(private readonly req: TaskRequirement) {}

  /** Records a declined offer; the sentence to say now, or undefined when nothing changed. */
  add(offer: readonly MesosResource[] | Resources): string | undefined {
    const lacking = offerShortfall(this.req, offer);
    if (lacking.size === 0) return undefined;
    this.offers++;
    for (const [name, { free, needed }] of lacking) {
      const s = this.short.get(name);
      if (s) {
        s.count++;
        s.mostFree = Math.max(s.mostFree, free);
        s.leastFree = Math.min(s.leastFree, free);
      } else {
        this.short.set(name, { count: 1, mostFree: free, leastFree: free, needed });
      }
    }
    const text = this.sentence();
    if (text === this.lastSaid) return undefined;
    this.lastSaid = text;
    return text;
  }

  reset(): void {
    this.offers = 0;
    this.short.clear();
    this.lastSaid = undefined;
  }

  /** The summary of what was declined so far; undefined before any offer was. */
  sentence(): string | undefined {
    if (this.offers === 0) return undefined;
    const part = (name: WaitResource) => {
      const s = this.short.get(name)!;
      const free = s.mostFree === s.leastFree ? bareAmount(name, s.mostFree) : `at most ${bareAmount(name, s.mostFree)}`;
      return `${name}: ${free} free, ${bareAmount(name, s.needed)} needed`;
    };
    // No count in the sentence: it would change with every offer, and be said every time.
    const every = 'every offer so far';
    // A resource every offer lacked explains them all; else name each that some lacked.
    const always = WAIT_RESOURCES.filter((name) => this.short.get(name)?.count === this.offers);
    if (always.length > 0) return `waiting: ${every} had too little ${always.map(part).join('; and too little ')}`;
    const some = WAIT_RESOURCES.filter((name) => this.short.has(name));
    return `waiting: ${every} was too small: too little ${some.map(part).join(', or too little ')}`;
  }
}
