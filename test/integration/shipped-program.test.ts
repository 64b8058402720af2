// The shipped program: scripts/build.js compiles the sources into a package laid out as
// `npm install -g` leaves it (bin/cairn.js, bin/compiled.js, dist/, no sources), and that
// package answers --version and `cairn version`, runs `cairn up` with plain Node (the proto
// files, the native SQLite module) and serves `cairn agents`. `npm pack` carries that layout
// and nothing else.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { credentialEnv } from '../harness/credentials.ts';
import { CairnProcess, Cleanup, freePort } from '../harness/processes.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Builds into `dir` the package an install holds: the launcher, the build, and the checkout's modules. */
function buildPackage(dir: string): void {
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.js'), '--out', join(dir, 'dist')], { stdio: ['ignore', 'pipe', 'pipe'] });
  mkdirSync(join(dir, 'bin'));
  for (const f of ['bin/cairn.js', 'bin/compiled.js', 'package.json']) copyFileSync(join(ROOT, f), join(dir, f));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
}

function cairn(dir: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(dir, 'bin/cairn.js'), ...args], { encoding: 'utf8', env: { ...process.env, ...credentialEnv() }, timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The commit `cairn version` should name: the checkout's, as the build recorded it. */
function expectedCommit(): string {
  try {
    const hash = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return hash;
  } catch {
    return 'unknown';
  }
}

describe('the compiled program', () => {
  const cleanup = new Cleanup();
  afterEach(() => cleanup.run());

  it('runs from its build alone: --version, version, a daemon and a client', async () => {
    const dir = cleanup.dir('cairn-package-');
    buildPackage(dir);
    // The build carries everything the code reads at run time.
    for (const f of ['dist/bin/cairn.js', 'dist/proto/agent.proto', 'dist/proto/raft.proto', 'dist/proto/gossip.proto', 'dist/package.json', 'dist/build-info.json']) {
      expect(existsSync(join(dir, f)), f).toBe(true);
    }
    expect(readdirSync(join(dir, 'dist/shared')).filter((f) => f.endsWith('.ts'))).toEqual([]);
    // No bin/cairn.ts here: only the build can answer (tsx would find nothing to run).
    expect(existsSync(join(dir, 'bin/cairn.ts'))).toBe(false);

    expect(cairn(dir, ['--version'])).toMatchObject({ status: 0, stdout: `${VERSION}\n` });
    expect(cairn(dir, ['-V'])).toMatchObject({ status: 0, stdout: `${VERSION}\n` });
    const version = cairn(dir, ['version']);
    expect(version.status).toBe(0);
    const [name, commit, node] = version.stdout.trimEnd().split('\n');
    expect(name).toBe(`cairn ${VERSION}`);
    const built = expectedCommit();
    // The tree may have changed between the build and this read: the hash is what must match.
    expect(commit === `commit ${built}` || commit === `commit ${built}-dirty`, `${commit} vs ${built}`).toBe(true);
    expect(node).toBe(`node ${process.version}`);
    // Through the parser too (a flag before the command).
    expect(cairn(dir, ['--token', 'x', 'version']).stdout).toBe(version.stdout);
    expect(cairn(dir, ['up', '--help'])).toMatchObject({ status: 0, stdout: expect.stringContaining('Usage: cairn up') });

    // A real cluster from the build: master (SQLite, agent frames) and agent in one process.
    const port = await freePort();
    const agentPort = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, [join(dir, 'bin/cairn.js'), 'up', '--port', String(port), '--agent-port', String(agentPort), '--data-dir', join(dir, 'data'), '--resources', 'cpus:2;mem:1024'], {
      env: { ...process.env, CAIRN_LOG_LEVEL: 'warn', ...credentialEnv() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const up = cleanup.track(new CairnProcess(child, url));
    await up.waitHealthy(30_000);
    let agents = '';
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const r = spawnSync(process.execPath, [join(dir, 'bin/cairn.js'), 'agents', '--master', url], { encoding: 'utf8', env: { ...process.env, ...credentialEnv() }, timeout: 20_000 });
      agents = `${r.status}\n${r.stdout}${r.stderr}`;
      if (r.status === 0 && r.stdout.includes('cpus:2;mem:1024')) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(agents, up.output).toMatch(/^0\n/);
    expect(agents).toContain('cpus:2;mem:1024');
    expect(await up.kill('SIGTERM')).toBe(0);
  }, 120_000);

  it('is what `npm pack` carries, with no sources or tests', () => {
    if (!existsSync(join(ROOT, 'dist/build-info.json'))) {
      // `npm ci` builds dist/ before the tests run; a checkout installed with --ignore-scripts has none.
      if (process.env.CI) throw new Error('dist/ is missing: `npm ci` should have built it (prepare)');
      console.warn('skipped: no dist/ in this checkout (run `npm run build`)');
      return;
    }
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const files = (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
    // The tuning report clients ship as they are: trials copy them next to their programs.
    const clients = ['clients/python/cairn_report.py', 'clients/node/cairn-report.mjs'];
    for (const f of ['package.json', 'README.md', 'bin/cairn.js', 'bin/compiled.js', 'dist/bin/cairn.js', 'dist/proto/agent.proto', 'dist/build-info.json', 'dist/package.json', ...clients]) {
      expect(files, f).toContain(f);
    }
    const unexpected = files.filter((f) => !['package.json', 'README.md', 'bin/cairn.js', 'bin/compiled.js', ...clients].includes(f) && !f.startsWith('dist/'));
    expect(unexpected).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') || f.startsWith('test/') || f.includes('/test/'))).toEqual([]);
  }, 60_000);
});
