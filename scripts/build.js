#!/usr/bin/env node
// Builds the shipped program: compiles the TypeScript sources with the project's own
// compiler (tsconfig.build.json) and lays out beside them what they read at run time, so
// that dist/ runs with plain Node. `npm install` (prepare) and `npm pack` (prepack) run it.
//
//   dist/{bin,master,agent,shared}/**/*.js   the compiled sources, same layout
//   dist/proto/*.proto                       loaded by the wire modules (../proto from shared/)
//   dist/master/ui/static/**                 the web dashboard's files, served as they are at /ui
//   dist/package.json                        the version shared/version.ts reads; "type": "module"
//   dist/build-info.json                     the commit built and when the sources were read
//
// The output is built beside its destination and renamed into place, so a `cairn` started
// during a build runs either the old build or the new one, never half of one.
//
// Usage: node scripts/build.js [--out DIR] [--unless-no-compiler]
//   --out DIR             where the build goes (default: dist)
//   --unless-no-compiler  without TypeScript installed (`npm ci --omit=dev`), build nothing
//                         and succeed: `cairn` then runs its sources through tsx. `npm install`
//                         runs the build this way; `npm pack` insists on one.

import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const outFlag = args.indexOf('--out');
const out = resolve(outFlag >= 0 && args[outFlag + 1] ? args[outFlag + 1] : join(root, 'dist'));

/** The commit being built: short hash, `-dirty` when tracked files differ from it; 'unknown' outside a git checkout. */
function gitCommit() {
  const git = (...a) => execFileSync('git', a, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const hash = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? hash : `${hash}-dirty`;
  } catch {
    return 'unknown';
  }
}

// A build started now covers every source saved before now: bin/cairn.js runs the build
// only while no source is newer than this.
const sourcesAt = Date.now();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const staging = join(dirname(out), `.${basename(out)}-building-${process.pid}`);
rmSync(staging, { recursive: true, force: true });

let tsc;
try {
  tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
} catch {
  if (args.includes('--unless-no-compiler')) {
    console.error('cairn build: TypeScript is not installed (no development dependencies); nothing built, `cairn` runs its sources through tsx');
    process.exit(0);
  }
  console.error('cairn build: TypeScript is not installed: run `npm install` (development dependencies included) first');
  process.exit(1);
}

try {
  const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', staging], { stdio: 'inherit' });
  if (compiled.status !== 0) throw new Error(`tsc exited with ${compiled.status ?? compiled.signal}`);

  mkdirSync(join(staging, 'proto'), { recursive: true });
  for (const f of readdirSync(join(root, 'proto'))) {
    if (f.endsWith('.proto')) copyFileSync(join(root, 'proto', f), join(staging, 'proto', f));
  }
  // The dashboard's page: plain ES modules, no build step; served beside master/ui/*.js.
  if (existsSync(join(root, 'master', 'ui', 'static'))) cpSync(join(root, 'master', 'ui', 'static'), join(staging, 'master', 'ui', 'static'), { recursive: true });
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify({ name: `${pkg.name}-dist`, version: pkg.version, private: true, type: 'module' }, null, 2)}\n`);
  writeFileSync(join(staging, 'build-info.json'), `${JSON.stringify({ version: pkg.version, commit: gitCommit(), sourcesAt }, null, 2)}\n`);

  // Swap: the old build moves aside before the new one takes its name.
  const old = `${staging}-old`;
  if (existsSync(out)) renameSync(out, old);
  renameSync(staging, out);
  rmSync(old, { recursive: true, force: true });
} catch (err) {
  rmSync(staging, { recursive: true, force: true });
  console.error(`cairn build: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
