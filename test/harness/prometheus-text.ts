// Reading the Prometheus text the daemons' /metrics answer, in tests: `promtool check
// metrics` on it (Debian's prometheus package; .ci/run installs it, a machine without it
// skips the check with a warning), one sample's value, and the names it has.

import { spawnSync } from 'node:child_process';

export const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
if (!promtool && process.env.CI) throw new Error('promtool is missing (Debian package prometheus): .ci/run installs it');
if (!promtool) console.warn('skipping the promtool checks: promtool is not installed (apt-get install prometheus)');

/** `promtool check metrics` on the text: its problems, '' when none. */
export function promtoolProblems(text: string): string {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return r.status === 0 ? '' : `${r.stdout}${r.stderr}`.trim() || `exit ${r.status}`;
}

/** The value of one sample line (`name{labels} value`), undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every metric name a sample line of the text has (a histogram's `_bucket`, `_sum`, `_count` included). */
export function sampleNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (m) names.add(m[1]!);
  }
  return names;
}

/** The families the text declares (`# TYPE name type`), with their types. */
export function familyTypes(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}
