// Which code `cairn` runs: the compiled build in dist/ (scripts/build.js), or nothing when
// the sources must run instead. Plain JavaScript, loaded before anything is compiled.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What the build compiles or copies: a change to any of these makes a build out of date. */
const SOURCES = ['bin', 'master', 'agent', 'shared', 'proto', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** Whether a file under `path` (or `path` itself) was changed after `at` (ms since the epoch). */
function changedSince(path, at) {
  let st;
  try {
    st = statSync(path);
  } catch {
    return false;
  }
  if (!st.isDirectory()) return st.mtimeMs > at;
  for (const entry of readdirSync(path)) {
    if (changedSince(join(path, entry), at)) return true;
  }
  return false;
}

/**
 * The entry point of the build under `root` (the package's directory) when it should run:
 * present, and in a source checkout (bin/cairn.ts beside bin/cairn.js) no older than every
 * source. An installed package carries no sources, so its build is current by definition.
 * Undefined when there is no build, or the sources changed after it was made.
 */
export function compiledEntry(root) {
  let info;
  try {
    info = JSON.parse(readFileSync(join(root, 'dist', 'build-info.json'), 'utf8'));
  } catch {
    return undefined;
  }
  const entry = join(root, 'dist', 'bin', 'cairn.js');
  try {
    statSync(entry);
  } catch {
    return undefined;
  }
  try {
    statSync(join(root, 'bin', 'cairn.ts'));
  } catch {
    return entry;
  }
  if (typeof info.sourcesAt !== 'number') return undefined;
  return SOURCES.some((s) => changedSince(join(root, s), info.sourcesAt)) ? undefined : entry;
}
