// Hints the command line adds to its errors (pure): what a person most likely got wrong and
// what to do about it. The commands do the I/O (a look at the URL's /health, the task list);
// these functions only decide.

/** Above this many MiB (4 TiB), a `--mem` value is far likelier bytes than MiB. */
export const MEM_LOOKS_LIKE_BYTES_MIB = 4 * 1024 * 1024;

const MEM_UNITS: Record<string, number> = { k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 };

/**
 * Why a `--mem` value is refused, with the MiB it probably meant: a unit (`2G`, `512Mi`,
 * `100MB`) or a number of bytes (`2147483648`). Undefined when it reads as MiB.
 */
export function memHint(value: string): string | undefined {
  const v = value.trim();
  const unit = /^(\d+(?:\.\d+)?)\s*([kmgt])(i?b?)$/i.exec(v);
  if (unit) {
    const mib = Number(unit[1]) * MEM_UNITS[unit[2]!.toLowerCase()]!;
    return `mem is in MiB: ${formatMiB(mib)}?`;
  }
  if (/^\d+\s*b$/i.test(v)) return `mem is in MiB: ${formatMiB(Number(v.replace(/b$/i, '')) / (1024 * 1024))}?`;
  if (/^\d+$/.test(v) && Number(v) >= MEM_LOOKS_LIKE_BYTES_MIB) {
    return `mem is in MiB (${v} MiB is more than any host has); if that was bytes: ${formatMiB(Number(v) / (1024 * 1024))}?`;
  }
  return undefined;
}

function formatMiB(mib: number): string {
  const rounded = mib >= 1 ? Math.round(mib) : Math.ceil(mib);
  return String(Math.max(1, rounded));
}

/** The hint for a master that cannot be reached at all. */
export function unreachableHint(masterUrl: string): string {
  return `is a master running at ${masterUrl}? start one with \`cairn up\` or set CAIRN_MASTER (or --master) to where one runs`;
}

/** Whether an error says the master could not be reached (no HTTP answer at all). */
export function isUnreachable(message: string): boolean {
  return /cannot reach (the|any) master/.test(message);
}

/**
 * Whether a `/health` answer is an agent's: agents answer `{status, agentId, ...}`, masters
 * `{status, role}`.
 */
export function isAgentHealth(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'agentId' in body && !('role' in body);
}

export function agentUrlHint(url: string, agentId: string | null): string {
  return `${url} is an agent's URL${agentId ? ` (agent ${agentId})` : ''}, not a master's: give a master's URL with --master or CAIRN_MASTER (e.g. http://MASTER:5050)`;
}

/** The known ids closest to an unknown one: those it begins (a prefix), else those within a small edit distance. */
export function similarIds(unknown: string, known: Iterable<string>, max = 3): string[] {
  const ids = [...new Set(known)];
  const prefixed = ids.filter((id) => unknown.length > 0 && id.startsWith(unknown)).sort();
  if (prefixed.length > 0) return prefixed.slice(0, max);
  // Typos: within a third of the id's length (at least 1, at most 3 edits).
  const limit = Math.min(3, Math.max(1, Math.floor(unknown.length / 3)));
  return ids
    .map((id) => ({ id, d: editDistance(unknown, id, limit) }))
    .filter((x) => x.d <= limit)
    .sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1))
    .slice(0, max)
    .map((x) => x.id);
}

/** "did you mean X?" / "did you mean X or Y?", or undefined when nothing is close. */
export function didYouMean(unknown: string, known: Iterable<string>): string | undefined {
  const close = similarIds(unknown, known);
  if (close.length === 0) return undefined;
  return `did you mean ${close.length === 1 ? close[0] : `${close.slice(0, -1).join(', ')} or ${close.at(-1)}`}?`;
}

/** Levenshtein distance, stopping early once it is past `limit` (returns limit + 1 then). */
export function editDistance(a: string, b: string, limit = Number.MAX_SAFE_INTEGER): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > limit) return limit + 1;
    prev = cur;
  }
  return prev[b.length]!;
}
