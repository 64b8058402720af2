// What `cairn job wait` says while it waits: each new condition, each change of the job's
// message within a phase (why it is queued, what it restarts for), and the replicas running.
// Pure: the previous and the latest view of the job in, the lines to print out.

import type { JobView } from '../../../shared/jobs/model.ts';

/**
 * The message as it is compared: without the retry's countdown and attempt number, which
 * change at every gathering window while the reason stays the same.
 */
function gist(message: string): string {
  return message.replace(/; (trying again in .*|gathering offers)$/, '');
}

/** The lines for the change from `prev` (undefined: the first look) to `next`. */
export function jobProgress(prev: JobView | undefined, next: JobView): string[] {
  const lines: string[] = [];
  const seen = prev?.conditions.length ?? 0;
  const fresh = next.conditions.slice(prev && next.conditions.length >= seen ? seen : 0);
  // The first look shows where the job stands, not its whole story.
  const shown = prev === undefined ? fresh.slice(-1) : fresh;
  for (const c of shown) lines.push(`${next.name}: ${c.type} (${c.reason}): ${c.message}`);
  const latest = next.conditions.at(-1)?.message ?? '';
  const said = shown.length > 0 ? latest : prev?.message ?? '';
  if (next.message !== '' && gist(next.message) !== gist(said)) lines.push(`${next.name}: ${next.phase}: ${next.message}`);
  const running = next.replicas.filter((r) => r.state === 'Running').length;
  const before = prev?.replicas.filter((r) => r.state === 'Running').length ?? 0;
  if (running !== before) lines.push(`${next.name}: replicas ${running}/${next.replicas.length} running`);
  return lines;
}
