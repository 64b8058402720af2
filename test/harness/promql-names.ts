// The metric names a PromQL expression reads, for checking a dashboard against what the
// master exports: strings, label matchers, ranges and the label lists of by/without/on/
// ignoring/group_left/group_right are taken out, then every identifier that is not a
// function call, a keyword or a Grafana variable is a metric name.

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan']);

export function promqlMetricNames(expr: string): Set<string> {
  let e = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  e = e.replace(/\{[^}]*\}/g, ' ');
  e = e.replace(/\[[^\]]*\]/g, ' ');
  e = e.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  e = e.replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const m of e.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, id, call] = m;
    if (call !== undefined || KEYWORDS.has(id!.toLowerCase())) continue;
    // A number's exponent or a duration's unit ("1e3", "5m") starts after a digit.
    if (m.index! > 0 && /[0-9.]/.test(e[m.index! - 1]!)) continue;
    names.add(id!);
  }
  return names;
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every PromQL expression of a Grafana dashboard's panels (rows' panels included), with its panel's title. */
export function dashboardExpressions(dashboard: { panels?: Panel[] }): { panel: string; expr: string }[] {
  const out: { panel: string; expr: string }[] = [];
  const walk = (panels: Panel[] | undefined) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) if (typeof t.expr === 'string') out.push({ panel: p.title ?? '', expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}
