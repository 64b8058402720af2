// The release tarball installs where no registry can be reached. scripts/release.js packs the
// compiled program with its runtime dependencies bundled; here it is installed with `npm
// install -g` inside a network namespace that has only a loopback device (no route anywhere,
// so the registry cannot answer), and the installed `cairn` runs a whole `cairn up` there and
// answers `cairn agents` — on the machine's own Node where that is another major version than
// the suite's (Node 20 beside the suite's 24: the install still starts there), then on the
// suite's Node. A Node with node:sqlite (22.16 and later) needs no native module: the install
// builds nothing, and the cluster runs with the bundled better-sqlite3 removed. On Node 20 the
// program runs on the better-sqlite3 binary the tarball carries (.ci/run builds the checkout's
// for the machine's own Node, the one Node that uses it).

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { credentialEnv } from '../harness/credentials.ts';
import { Cleanup, freePort, waitFor } from '../harness/processes.ts';
import { netnsUnusable } from '../harness/netns.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SYSTEM_NODE = '/usr/bin/node';

const why = netnsUnusable();
if (why !== undefined && process.env.CI) throw new Error(`the offline install test needs a network namespace: ${why}`);
if (why !== undefined) console.warn(`skipped the offline install test: ${why}`);

/** Whether `node` has the node:sqlite Cairn uses (the check shared/sqlite/node-sqlite.ts makes). */
function hasNodeSqlite(node: string): boolean {
  const probe = "const s = process.getBuiltinModule?.('node:sqlite'); const db = s && new s.DatabaseSync(':memory:'); process.exit(typeof db?.isTransaction === 'boolean' ? 0 : 1)";
  return spawnSync(node, ['--no-warnings', '-e', probe]).status === 0;
}

function nodeMajor(node: string): number | undefined {
  const r = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim().split('.')[0]) : undefined;
}

/** The Nodes the installed program runs on: the machine's own when its major differs, then this suite's. */
function runNodes(): string[] {
  const own = existsSync(SYSTEM_NODE) ? nodeMajor(SYSTEM_NODE) : undefined;
  return own !== undefined && own !== nodeMajor(process.execPath) ? [SYSTEM_NODE, process.execPath] : [process.execPath];
}

/** The environment `npm` and `cairn` run with under `node`: that Node first on PATH, its own headers for node-gyp. */
function envFor(node: string, home: string): NodeJS.ProcessEnv {
  const prefix = dirname(dirname(node));
  const env: NodeJS.ProcessEnv = { ...process.env, ...credentialEnv(), HOME: home, PATH: `${dirname(node)}:${process.env.PATH ?? ''}`, CAIRN_LOG_LEVEL: 'warn' };
  // A Node's headers lie beside it (/usr/include/node, or the registry package's include/):
  // compiling against another version's would build a module this Node cannot load.
  if (existsSync(join(prefix, 'include', 'node', 'node_version.h'))) env.npm_config_nodedir = prefix;
  else delete env.npm_config_nodedir;
  return env;
}

describe.skipIf(why !== undefined)('the release tarball, installed with no registry', () => {
  const cleanup = new Cleanup();
  const namespaces: string[] = [];
  afterEach(async () => {
    await cleanup.run();
    for (const ns of namespaces.splice(0)) spawnSync('ip', ['netns', 'del', ns]);
  });

  it('installs offline and runs a cluster, on the machine\'s own Node and on the suite\'s', async () => {
    const work = cleanup.dir('cairn-offline-');
    const release = spawnSync(process.execPath, [join(ROOT, 'scripts/release.js'), '--out', work], { encoding: 'utf8', timeout: 240_000 });
    expect(release.status, release.stderr).toBe(0);
    const tarball = release.stdout.trim();
    expect(tarball).toMatch(/cairn-\d+\.\d+\.\d+-linux-x64\.tgz$/);
    // Everything it needs at run time is inside; the source runner is not.
    const listing = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8', maxBuffer: 64 << 20 });
    // better-sqlite3 travels for Node 20 hosts, with the install step that skips it elsewhere.
    const carried = ['package/node_modules/better-sqlite3/build/Release/better_sqlite3.node', 'package/node_modules/better-sqlite3/cairn-install.cjs'];
    for (const f of [...carried, 'package/node_modules/fastify/package.json', 'package/dist/bin/cairn.js']) {
      expect(listing, f).toContain(f);
    }
    expect(listing).not.toContain('package/node_modules/tsx/');
    expect(listing).not.toContain('package/node_modules/typescript/');

    const ns = `cairn-offline-${randomBytes(3).toString('hex')}`;
    execFileSync('ip', ['netns', 'add', ns]);
    namespaces.push(ns);
    execFileSync('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
    // Offline for real: no route at all, so no registry, mirror or proxy can be reached.
    expect(execFileSync('ip', ['netns', 'exec', ns, 'ip', '-4', 'route', 'show'], { encoding: 'utf8' }).trim()).toBe('');
    expect(execFileSync('ip', ['netns', 'exec', ns, 'ip', '-6', 'route', 'show'], { encoding: 'utf8' })).not.toMatch(/default/);

    // One install, with the suite's Node, as an operator would run it.
    const home = cleanup.dir('cairn-offline-home-');
    const prefix = join(home, 'prefix');
    const npm = spawnSync('ip', ['netns', 'exec', ns, 'npm', 'install', '-g', '--prefix', prefix, '--cache', join(home, 'npm-cache'), '--fetch-retries=0', '--no-audit', '--no-fund', '--loglevel=warn', tarball], {
      encoding: 'utf8', env: envFor(process.execPath, home), timeout: 360_000,
    });
    expect(npm.status, `npm install: ${npm.stdout}${npm.stderr}`).toBe(0);
    expect(npm.stderr).not.toMatch(/EBADENGINE/);
    const cairn = join(prefix, 'bin', 'cairn');
    const installedSqlite = join(prefix, 'lib', 'node_modules', 'cairn', 'node_modules', 'better-sqlite3');
    if (hasNodeSqlite(process.execPath)) {
      // node-gyp did not run (it leaves its objects under build/).
      expect(existsSync(join(installedSqlite, 'package.json')), 'the bundled better-sqlite3 is installed').toBe(true);
      expect(existsSync(join(installedSqlite, 'build', 'Release', 'obj.target')), 'the install compiled better-sqlite3').toBe(false);
    }

    for (const node of runNodes()) {
      const major = nodeMajor(node)!;
      const env = envFor(node, home);
      if (hasNodeSqlite(node)) {
        // The program runs without better-sqlite3 at all: on this Node no native module is needed.
        rmSync(installedSqlite, { recursive: true, force: true });
      } else {
        const loads = spawnSync(node, ['-e', `require(${JSON.stringify(join(installedSqlite, 'build', 'Release', 'better_sqlite3.node'))})`], { encoding: 'utf8' });
        expect(loads.status, `the bundled better-sqlite3 loads on node ${major}: ${loads.stderr}`).toBe(0);
      }

      const version = spawnSync('ip', ['netns', 'exec', ns, cairn, 'version'], { encoding: 'utf8', env, timeout: 30_000 });
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout).toMatch(new RegExp(`^node v${major}\\.`, 'm'));

      // A whole cluster from the installed program, inside the namespace (its own loopback).
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const up = spawn('ip', ['netns', 'exec', ns, cairn, 'up', '--port', String(port), '--agent-port', String(await freePort()), '--data-dir', join(home, `data-${major}`), '--resources', 'cpus:1;mem:512'], {
        env, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      up.stdout.on('data', (d) => (output += d));
      up.stderr.on('data', (d) => (output += d));
      const exited = new Promise<number | null>((res) => up.once('exit', (code) => res(code)));
      try {
        const agents = await waitFor(`cairn agents on node ${major} (cairn up says: ${output.slice(-1000)})`, () => {
          if (up.exitCode !== null) throw new Error(`cairn up exited with ${up.exitCode}: ${output.slice(-2000)}`);
          const r = spawnSync('ip', ['netns', 'exec', ns, cairn, 'agents', '--master', url], { encoding: 'utf8', env, timeout: 20_000 });
          return r.status === 0 && r.stdout.includes('cpus:1;mem:512') ? r.stdout : undefined;
        }, 90_000, 300);
        expect(agents).toContain('cpus:1;mem:512');
      } finally {
        if (up.exitCode === null) up.kill('SIGTERM');
      }
      expect(await exited, output).toBe(0);
    }
  }, 900_000);
});
