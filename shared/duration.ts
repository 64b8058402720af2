// Durations as operators write them in flags (`7d`, `12h`, `30m`, `45s`, `500ms`). No
// imports: the command line parses flags with it before loading any daemon code.

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * A duration such as `500ms`, `30s`, `15m`, `12h`, `7d` or `2w`, in milliseconds; undefined
 * when the text is not one. The unit is required: a bare number is not a duration (`90`
 * read as milliseconds once made a 90-second drain deadline kill a task at once).
 */
export function parseDurationMs(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * DURATION_UNITS[m[2]];
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : undefined;
}

/** Why `text` is not a duration, for a flag's error message (it names the flag itself). */
export function durationProblem(text: string): string {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return `needs a unit: write e.g. ${t}s, ${t}m or ${t}ms (ms, s, m, h, d, w).`;
  return 'must be a duration greater than 0 with its unit, such as 500ms, 45s, 30m, 12h or 7d.';
}

/** The other way: `7d`, `12h`, `90s`, in the largest unit (days at most) that says it exactly. */
export function formatDurationMs(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const n = ms / DURATION_UNITS[unit];
    if (Number.isInteger(n) && n > 0) return `${n}${unit}`;
  }
  return `${ms}ms`;
}
