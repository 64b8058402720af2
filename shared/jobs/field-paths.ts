// Where a field of a job document lives, for error messages. The checks (spec-validate) speak
// of Cairn's own fields (`groups[1].replicas`); a document in another format (a TFJob, a
// Volcano Job) is translated first, and a Locate turns the Cairn field back into the path the
// user wrote (`spec.tfReplicaSpecs.Chief.replicas`), so an error names a line of their file.

import { CairnError } from '../errors.ts';

/** From a field of Cairn's job document (relative: `groups[0].name`) to the path to report. */
export type Locate = (field: string) => string;

/** `a` then `b`, as a field path: `spec` + `name` is `spec.name`, `groups` + `[1]` is `groups[1]`. */
export function joinPath(a: string, b: string): string {
  if (a === '') return b;
  if (b === '') return a;
  return b.startsWith('[') ? `${a}${b}` : `${a}.${b}`;
}

/** A key as a path segment: `.key`, or `["key"]` when it is not a plain identifier. */
export function keyPath(base: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? joinPath(base, key) : `${base}[${JSON.stringify(key)}]`;
}

/** Fields of a document written in Cairn's own format, under `prefix`. */
export function prefixLocator(prefix: string): Locate {
  return (field) => joinPath(prefix, field);
}

/**
 * Fields of a translated document: the longest mapped prefix of the field (whole segments)
 * gives the source path, and the rest of the field is appended as it is. Unmapped fields
 * fall back to `fallback` (the document's root as the user wrote it).
 */
export function mappedLocator(map: ReadonlyMap<string, string>, fallback = ''): Locate {
  return (field) => {
    let prefix = field;
    for (;;) {
      const found = map.get(prefix);
      if (found !== undefined) return joinPath(found, field.slice(prefix.length).replace(/^\./, ''));
      const cut = Math.max(prefix.lastIndexOf('.'), prefix.lastIndexOf('['));
      if (cut <= 0) return joinPath(fallback, field);
      prefix = prefix.slice(0, cut);
    }
  };
}

/** The one error every refused job document gets: its code, and the field to fix. */
export function invalidJob(field: string, message: string): CairnError {
  return new CairnError('CAIRN_INVALID_JOB', message, field);
}
