// Marathon's `?label=` selector on app labels: comma-separated terms, each `key`,
// `!key`, `key==value`, `key!=value`, `key in (a, b)` or `key notin (a, b)`; all must hold.
// Pure.

export function matchesLabelSelector(labels: Readonly<Record<string, string>>, selector: string): boolean {
  return splitTerms(selector).every((term) => matchesTerm(labels, term.trim()));
}

/** Splits on commas outside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of s) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  if (cur.trim() !== '') out.push(cur);
  return out;
}

function matchesTerm(labels: Readonly<Record<string, string>>, term: string): boolean {
  if (term === '') return true;
  let m = /^(.+?)\s*(==|!=)\s*(.*)$/.exec(term);
  if (m) {
    const v = labels[m[1]!.trim()];
    return m[2] === '==' ? v === m[3]!.trim() : v !== m[3]!.trim();
  }
  m = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
  if (m) {
    const v = labels[m[1]!];
    const set = m[3]!.split(',').map((x) => x.trim());
    const inSet = v !== undefined && set.includes(v);
    return m[2] === 'in' ? inSet : !inSet;
  }
  if (term.startsWith('!')) return labels[term.slice(1)] === undefined;
  return labels[term] !== undefined;
}
