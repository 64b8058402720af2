// `cairn version`, `cairn --version` and `cairn -V`. bin/cairn.ts answers them before it loads
// the command line's parser and the commands, so that asking costs little more than Node's
// own start; `cairn version` is also a command of the parser (for --help and for tests).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CAIRN_VERSION } from '../../../shared/version.ts';

/**
 * The commit this code was built from. Compiled code reads what the build recorded beside it
 * (dist/build-info.json, scripts/build.js); sources run through tsx ask git about their own
 * checkout. 'unknown' outside a checkout; `-dirty` when tracked files differed from the commit.
 */
export function cairnCommit(): string {
  try {
    const info = JSON.parse(readFileSync(new URL('../../../build-info.json', import.meta.url), 'utf8')) as { commit?: unknown };
    if (typeof info.commit === 'string' && info.commit !== '') return info.commit;
  } catch {
    // No build beside this code: the sources themselves are running.
  }
  const cwd = fileURLToPath(new URL('../../..', import.meta.url));
  const git = (...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const hash = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? hash : `${hash}-dirty`;
  } catch {
    return 'unknown';
  }
}

/** What `cairn version` prints: the version, the commit and the Node version, one per line. */
export function versionReport(): string {
  return `cairn ${CAIRN_VERSION}\ncommit ${cairnCommit()}\nnode ${process.version}\n`;
}

/**
 * The answer to a command line that only asks for the version, or undefined for any other
 * (which the parser then handles, `cairn --token T version` included).
 */
export function versionAnswer(argv: readonly string[]): string | undefined {
  if (argv.length !== 1) return undefined;
  if (argv[0] === '--version' || argv[0] === '-V') return `${CAIRN_VERSION}\n`;
  if (argv[0] === 'version') return versionReport();
  return undefined;
}
