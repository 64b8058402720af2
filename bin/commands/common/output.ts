// `-o json|yaml|wide` of the listing commands, as kubectl has it: json and yaml print the
// objects as the master's API gives them (so scripts read the same fields as the REST API);
// wide is the table with more columns; without -o, the table.
//
// YAML is written by the `yaml` package (eemeli/yaml): it follows YAML 1.2 closely, quotes
// strings that would otherwise read back as numbers, booleans or nulls ("0", "yes", "~"),
// has no dependencies, and ships its own types; hand-written YAML gets exactly those cases wrong.

import { stringify } from 'yaml';

export const OUTPUT_FORMATS = ['json', 'yaml', 'wide'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** `describe`-like commands have no wider table. */
export const OBJECT_FORMATS = ['json', 'yaml'] as const;

/** The objects as JSON (two-space indent) or YAML, ending in a newline. */
export function formatObjects(format: 'json' | 'yaml', value: unknown): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  // Keys in the API's order; long strings (commands, messages) kept on one line.
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

/**
 * What stderr says for a list with nothing in it, as kubectl says it. Stdout stays empty, so
 * `cairn tasks | wc -l` counts nothing, and the exit code is 0: an empty list is an answer.
 */
export const NO_RESOURCES = 'No resources found\n';

/**
 * How every list command prints (agents, tasks, jobs, experiments, apps, secrets, quotas,
 * preemptions): with -o json or yaml, a bare array of the API's objects — one shape for every
 * list, so `jq '.[]'` reads them all; otherwise the table `table` builds, or, when the list is
 * empty, NO_RESOURCES on stderr and nothing on stdout.
 */
export function printList<T>(
  io: { stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown } },
  output: OutputFormat | undefined,
  items: readonly T[],
  table: () => string,
): void {
  if (output === 'json' || output === 'yaml') io.stdout.write(formatObjects(output, items));
  else if (items.length === 0) io.stderr.write(NO_RESOURCES);
  else io.stdout.write(table());
}
