#!/usr/bin/env node
// Builds the release tarball: the compiled program with every runtime dependency bundled
// inside it, so that `npm install -g ./cairn-VERSION-PLATFORM.tgz` needs no registry (GPU
// clusters are often air-gapped). `npm pack` of the checkout carries the program only and
// fetches its dependencies at install time; this tarball carries them.
//
//   package/bin/cairn.js, bin/compiled.js, dist/, clients/, README.md   as `npm pack` has them
//   package/node_modules/...   the production dependencies (bundleDependencies), taken from
//                              this checkout's node_modules: the versions the tests ran
//
// tsx is left out: it only runs the TypeScript sources, and the tarball has none.
//
// SQLite: a Node with node:sqlite (22.16 and later, 24 LTS) needs no native module at all
// (shared/sqlite/driver.ts). For Node 20 the one native module, better-sqlite3 (an optional
// dependency), travels built for this platform and this Node's ABI. npm runs a bundled
// dependency's install script, and better-sqlite3's would download a prebuilt binary
// (impossible offline) and otherwise compile from source (needs g++, make, python3 and Node's
// headers). The tarball's copy runs its own install step instead (SQLITE_INSTALL): on a Node
// with node:sqlite it does nothing; otherwise it keeps the binary it carries when that loads
// (same platform and Node ABI: nothing compiles) and falls through to the usual
// download-or-compile when not. Should that fail, npm drops the optional module and the
// install still succeeds.
//
// Usage: node scripts/release.js [--out DIR]     (default: the checkout's root)
// Prints the tarball's path on stdout.

import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledEntry } from '../bin/compiled.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const outFlag = args.indexOf('--out');
const outDir = resolve(outFlag >= 0 && args[outFlag + 1] ? args[outFlag + 1] : root);

/** Dependencies the shipped build never loads: the source runner. */
const NOT_SHIPPED = new Set(['tsx']);
/**
 * The bundled better-sqlite3's install step (cairn-install.cjs in its folder). The node:sqlite
 * check is the one shared/sqlite/node-sqlite.ts makes: it exists, and its databases have
 * isTransaction.
 */
const SQLITE_INSTALL_SCRIPT = `// Written by Cairn's scripts/release.js: better-sqlite3's install step in the release tarball.
'use strict';
const { execSync } = require('node:child_process');
function hasNodeSqlite() {
  try {
    const sqlite = process.getBuiltinModule && process.getBuiltinModule('node:sqlite');
    if (!sqlite) return false;
    const db = new sqlite.DatabaseSync(':memory:');
    const usable = typeof db.isTransaction === 'boolean';
    db.close();
    return usable;
  } catch {
    return false;
  }
}
function carriedBinaryLoads() {
  try {
    require('./build/Release/better_sqlite3.node');
    return true;
  } catch {
    return false;
  }
}
if (hasNodeSqlite()) console.log('cairn: this Node has node:sqlite; better-sqlite3 is not needed and is not built');
else if (!carriedBinaryLoads()) execSync('prebuild-install || node-gyp rebuild --release', { stdio: 'inherit' });
`;
const SQLITE_INSTALL = 'node --no-warnings cairn-install.cjs';
/**
 * Bundled packages whose install step only compiles an optional accelerator with node-gyp:
 * ssh2's crypto binding and cpu-features (ssh2's optional dependency). ssh2 serves dockerode
 * only for an ssh:// DOCKER_HOST, and loads both inside try/catch, falling back to Node's own
 * crypto. Installed offline, compiling them took 11 s of a 50 s `npm install -g` here, and
 * where Node's headers are missing node-gyp would try to download them. Their install steps
 * are left out of the tarball (and cpu-features' default `node-gyp rebuild` with them).
 */
const NOT_BUILT_AT_INSTALL = ['ssh2', 'cpu-features'];

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const platform = `${process.platform}-${process.arch}`;
const staging = mkdtempSync(join(tmpdir(), 'cairn-release-'));

function run(cmd, argv, cwd) {
  execFileSync(cmd, argv, { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
}

try {
  if (!existsSync(join(root, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'))) {
    throw new Error('node_modules/better-sqlite3 is not built here: run `npm ci` first');
  }
  const dir = join(staging, 'package');
  mkdirSync(join(dir, 'bin'), { recursive: true });
  // The checkout's build when it is current (`npm ci` made it), a fresh one otherwise.
  if (compiledEntry(root) !== undefined) cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  else run(process.execPath, [join(root, 'scripts', 'build.js'), '--out', join(dir, 'dist')], root);
  for (const f of ['bin/cairn.js', 'bin/compiled.js', 'README.md']) copyFileSync(join(root, f), join(dir, f));
  cpSync(join(root, 'clients'), join(dir, 'clients'), { recursive: true });

  const dependencies = Object.fromEntries(Object.entries(pkg.dependencies).filter(([name]) => !NOT_SHIPPED.has(name)));
  const optionalDependencies = pkg.optionalDependencies ?? {};
  const shipped = {
    name: pkg.name,
    version: pkg.version,
    description: pkg.description,
    type: pkg.type,
    license: pkg.license,
    bin: pkg.bin,
    files: pkg.files,
    engines: pkg.engines,
    // The native module is built for this platform: npm refuses the tarball elsewhere, by name.
    os: [process.platform],
    cpu: [process.arch],
    dependencies,
    optionalDependencies,
    bundleDependencies: [...Object.keys(dependencies), ...Object.keys(optionalDependencies)],
    ...(pkg.overrides ? { overrides: pkg.overrides } : {}),
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(shipped, null, 2)}\n`);

  // The production packages only (what `npm ls --omit=dev` names; a package's nested
  // node_modules travel with it), as real copies: pruning and the install-script edit below
  // must not touch the checkout.
  const listed = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const topLevel = new Set();
  for (const path of listed.split('\n')) {
    const parts = relative(root, path.trim()).split(sep);
    if (parts[0] !== 'node_modules' || parts.length < 2) continue;
    topLevel.add(join(...parts.slice(0, parts[1].startsWith('@') ? 3 : 2)));
  }
  for (const p of topLevel) cpSync(join(root, p), join(dir, p), { recursive: true, verbatimSymlinks: true });
  copyFileSync(join(root, 'package-lock.json'), join(dir, 'package-lock.json'));
  run('npm', ['prune', '--omit=dev', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], dir);
  for (const name of NOT_SHIPPED) {
    if (existsSync(join(dir, 'node_modules', name))) throw new Error(`npm prune left ${name} in the bundle`);
  }

  const sqlitePkgFile = join(dir, 'node_modules', 'better-sqlite3', 'package.json');
  const sqlitePkg = JSON.parse(readFileSync(sqlitePkgFile, 'utf8'));
  sqlitePkg.scripts = { ...sqlitePkg.scripts, install: SQLITE_INSTALL };
  // npm packs an optional bundled dependency by its own `files`, which name neither.
  sqlitePkg.files = [...(sqlitePkg.files ?? []), 'build/Release/better_sqlite3.node', 'cairn-install.cjs'];
  writeFileSync(sqlitePkgFile, `${JSON.stringify(sqlitePkg, null, 2)}\n`);
  writeFileSync(join(dir, 'node_modules', 'better-sqlite3', 'cairn-install.cjs'), SQLITE_INSTALL_SCRIPT);
  for (const name of NOT_BUILT_AT_INSTALL) {
    const file = join(dir, 'node_modules', name, 'package.json');
    if (!existsSync(file)) continue;
    const p = JSON.parse(readFileSync(file, 'utf8'));
    const { install: _install, preinstall: _preinstall, postinstall: _postinstall, ...scripts } = p.scripts ?? {};
    writeFileSync(file, `${JSON.stringify({ ...p, scripts, gypfile: false }, null, 2)}\n`);
  }

  const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', staging], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const filename = JSON.parse(packed)[0].filename;
  mkdirSync(outDir, { recursive: true });
  const target = join(outDir, `${pkg.name}-${pkg.version}-${platform}.tgz`);
  // Across file systems rename fails: copy instead.
  try {
    renameSync(join(staging, filename), target);
  } catch {
    copyFileSync(join(staging, filename), target);
  }
  console.log(target);
} catch (err) {
  console.error(`cairn release: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  rmSync(staging, { recursive: true, force: true });
}
