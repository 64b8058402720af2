// Whether one task of a submission can never fit: bigger than every agent's total resources,
// so that waiting cannot help (a busy cluster is no reason; what others hold is let go one
// day). Said at submit, naming the largest agent and its size, so that the submitter sees
// at once what a queue would hide. Pure: the caller passes the agents' totals.

import { agentCandidate } from '../placement/candidate.ts';
import { demandOf, type TaskRequirement } from '../placement/demand.ts';
import { place } from '../placement/pipeline.ts';
import { WAIT_RESOURCES, amountsOf, neededAmounts, readableResources } from './why-waiting.ts';
import { amountText } from './why-queued.ts';

export interface AgentSize {
  id: string;
  hostname: string;
  /** Its total resources (`cpus:2;mem:1024;...`). */
  resources: string;
}

/**
 * Why `req` fits on no agent's total, naming the largest agent (most gpus, then cpus, then
 * memory) and what it has of each resource asked for; undefined when some agent could hold
 * it, or no agent is known (a cluster still starting is not judged).
 */
export function neverFitsAnyAgent(req: TaskRequirement, agents: readonly AgentSize[]): string | undefined {
  const need = neededAmounts(req);
  const known = agents.flatMap((a) => {
    const resources = readableResources(a.resources);
    return resources ? [{ a, resources, total: amountsOf(resources) }] : [];
  });
  if (known.length === 0) return undefined;
  // Whether some agent's total could hold it is the placement pipeline's question.
  const totals = known.map(({ a, resources }) => agentCandidate(a, resources));
  if (place({ demands: [demandOf(req, 0)], candidates: totals }).placed.length > 0) return undefined;
  const largest = known.reduce((x, y) => (y.total.gpus - x.total.gpus || y.total.cpus - x.total.cpus || y.total.mem - x.total.mem) > 0 ? y : x);
  const asked = WAIT_RESOURCES.filter((name) => need.has(name));
  const needs = asked.map((name) => amountText(name, need.get(name)!)).join(', ');
  const has = asked.map((name) => amountText(name, largest.total[name])).join(', ');
  const who = largest.a.hostname && largest.a.hostname !== largest.a.id ? `${largest.a.hostname} (${largest.a.id})` : largest.a.id;
  const of = known.length === 1 ? 'the only agent' : `the largest of ${known.length} agents`;
  return `needs ${needs}, more than any agent has in all: ${of}, ${who}, has ${has}`;
}
