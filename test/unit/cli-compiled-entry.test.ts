// Which code bin/cairn.js runs (bin/compiled.js): the build while it is present and no
// source changed after it; the sources (through tsx) otherwise. An installed package has no
// sources, so its build always runs.

import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const { compiledEntry } = (await import(pathToFileURL(join(import.meta.dirname, '../../bin/compiled.js')).href)) as {
  compiledEntry: (root: string) => string | undefined;
};

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const BUILT_AT = 1_700_000_000_000;

/** A package root; `sources` adds a checkout's files, all saved a minute before the build. */
function root(opts: { sources: boolean; build?: boolean; sourcesAt?: unknown }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-entry-'));
  dirs.push(dir);
  const write = (path: string, text = '') => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
    const at = new Date(BUILT_AT - 60_000);
    utimesSync(join(dir, path), at, at);
  };
  write('package.json', '{}');
  write('bin/cairn.js');
  if (opts.sources) for (const f of ['bin/cairn.ts', 'bin/commands/program.ts', 'shared/raft/raft.ts', 'proto/agent.proto', 'tsconfig.json']) write(f);
  if (opts.build !== false) {
    write('dist/bin/cairn.js');
    write('dist/build-info.json', JSON.stringify({ commit: 'abc', sourcesAt: 'sourcesAt' in opts ? opts.sourcesAt : BUILT_AT }));
  }
  return dir;
}

function touch(path: string, at: number): void {
  utimesSync(path, new Date(at), new Date(at));
}

describe('compiledEntry', () => {
  it('runs the build of a checkout whose sources are all older than it', () => {
    const dir = root({ sources: true });
    expect(compiledEntry(dir)).toBe(join(dir, 'dist/bin/cairn.js'));
  });

  it('runs the sources once any of them, however deep, changed after the build', () => {
    for (const f of ['shared/raft/raft.ts', 'bin/commands/program.ts', 'proto/agent.proto', 'tsconfig.json', 'package.json']) {
      const dir = root({ sources: true });
      touch(join(dir, f), BUILT_AT + 1000);
      expect(compiledEntry(dir), f).toBeUndefined();
    }
  });

  it('runs the sources when a checkout has no build, or a build without its stamp or entry', () => {
    expect(compiledEntry(root({ sources: true, build: false }))).toBeUndefined();
    expect(compiledEntry(root({ sources: true, sourcesAt: undefined }))).toBeUndefined();
    const noEntry = root({ sources: true });
    rmSync(join(noEntry, 'dist/bin/cairn.js'));
    expect(compiledEntry(noEntry)).toBeUndefined();
  });

  it('always runs the build of an installed package (no sources beside it)', () => {
    const dir = root({ sources: false });
    touch(join(dir, 'package.json'), BUILT_AT + 60_000);
    expect(compiledEntry(dir)).toBe(join(dir, 'dist/bin/cairn.js'));
    expect(compiledEntry(root({ sources: false, build: false }))).toBeUndefined();
  });
});
