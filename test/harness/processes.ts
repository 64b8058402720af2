// Real cairn daemons as child processes on loopback, for integration tests: start a
// master or an agent with `bin/cairn.js`, wait until it answers, kill it (gently or with
// SIGKILL), and clean everything up after the test.

import { removeTaskDnsAddressesUnder } from './task-dns-cleanup.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentCgroupName, parseCgroupMounts } from '../../agent/isolation/cgroups.ts';
import { authHeaders, credentialEnv } from './credentials.ts';
import { removeContainersUnder } from './docker-cleanup.ts';

const CAIRN = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether `port` can be bound on `host` (loopback by default) right now. */
function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** The first of `n` consecutive free ports (for `cairn up --masters N`). */
export async function freePortRun(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = await freePort();
    if (first + n - 1 > 65535) continue;
    let ok = true;
    for (let p = first + 1; p < first + n && ok; p++) ok = await portIsFree(p);
    if (ok) return first;
  }
  throw new Error(`no ${n} consecutive free ports found`);
}

/** The first port of the kernel's ephemeral range, where outgoing connections take theirs. */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/**
 * The first of `n` consecutive ports that no one holds on any interface, for an agent's
 * `ports:[FIRST-LAST]` whose tasks listen on them: at random below the ephemeral range (as
 * Mesos' 31000-32000 is, so that no outgoing connection holds one later), and each checked,
 * so that tasks of another cluster or another program on the host are never in the way.
 */
export async function freePortRange(n: number): Promise<number> {
  const high = ephemeralLow() - n;
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 10_000 + Math.floor(Math.random() * (high - 10_000));
    let ok = true;
    for (let p = first; p < first + n && ok; p++) ok = await portIsFree(p, '0.0.0.0');
    if (ok) return first;
  }
  throw new Error(`no ${n} consecutive free ports found below ${high + n}`);
}

export function tempDir(prefix = 'cairn-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}

/** GETs `url` (with the test principal's credential) and parses its JSON body (2 s timeout). */
export async function getJson(url: string): Promise<any> {
  const r = await fetch(url, { headers: authHeaders(), signal: AbortSignal.timeout(2000) });
  return r.json();
}

/** The first of `masters` that says it leads (GET /api/v1/state), waiting until one does. */
export function waitForLeader<T extends { url: string }>(masters: readonly T[], timeoutMs = 20_000): Promise<T> {
  return waitFor('a leader', async () => {
    for (const m of masters) {
      try {
        if ((await getJson(`${m.url}/api/v1/state`)).master.role === 'leader') return m;
      } catch {
        // down or starting
      }
    }
    return undefined;
  }, timeoutMs);
}

export class CairnProcess {
  output = '';
  private exited: Promise<number | null>;

  constructor(readonly child: ChildProcess, readonly url: string) {
    child.stdout?.on('data', (d) => (this.output += d));
    child.stderr?.on('data', (d) => (this.output += d));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  }

  async waitHealthy(timeoutMs = 20_000): Promise<void> {
    await waitFor(`${this.url}/health (output so far: ${this.output.slice(-500)})`, async () => {
      if (this.child.exitCode !== null) throw new Error(`exited with ${this.child.exitCode}: ${this.output.slice(-2000)}`);
      const r = await fetch(`${this.url}/health`);
      return r.ok ? true : undefined;
    }, timeoutMs);
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}

export function startCairn(args: string[], url: string, env: Record<string, string> = {}, opts: { cwd?: string } = {}): CairnProcess {
  const child = spawn(process.execPath, [CAIRN, ...args], {
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    env: { ...process.env, CAIRN_LOG_LEVEL: process.env.CAIRN_LOG_LEVEL ?? 'warn', ...credentialEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new CairnProcess(child, url);
}

/** Runs one `cairn` command line to its end (killed after timeoutMs), as a user would. */
export function runCairn(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CAIRN, ...args], { env: { ...process.env, CAIRN_LOG_LEVEL: 'warn', ...credentialEnv(), ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Kills the process groups of tasks whose CAIRN_SANDBOX is under one of `dirs`. */
export function killTasksUnder(dirs: readonly string[]): void {
  if (dirs.length === 0) return;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let env: string;
    try {
      env = readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      continue;
    }
    const sandbox = env.split('\0').find((e) => e.startsWith('CAIRN_SANDBOX='))?.slice('CAIRN_SANDBOX='.length);
    if (!sandbox || !dirs.some((d) => sandbox.startsWith(d))) continue;
    try {
      process.kill(-Number(pid), 'SIGKILL');
    } catch {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/**
 * Removes the cgroups agents with these work dirs made under the default root (`cairn`),
 * in every mounted hierarchy: an agent killed or stopped without killing its tasks leaves
 * them for the next agent process, which a test never starts. Their tasks must be gone
 * (killTasksUnder); a cgroup still emptying is retried for a moment.
 */
export async function removeAgentCgroups(workDirs: readonly string[]): Promise<void> {
  if (workDirs.length === 0) return;
  let mounts: string[];
  try {
    const found = parseCgroupMounts(readFileSync('/proc/self/mountinfo', 'utf8'));
    mounts = [...new Set(found.v1.values()), ...found.v2];
  } catch {
    return;
  }
  const names = new Set(workDirs.map((d) => agentCgroupName(d)));
  const roots = mounts.flatMap((m) => [...names].map((n) => join(m, 'cairn', n))).filter((d) => existsSync(d));
  /** Directories below `dir`, deepest first, then `dir`. */
  const tree = (dir: string): string[] => [
    ...readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).flatMap((e) => tree(join(dir, e.name))),
    dir,
  ];
  for (let attempt = 0; attempt < 20; attempt++) {
    let left = 0;
    for (const root of roots) {
      if (!existsSync(root)) continue;
      for (const dir of tree(root)) {
        try {
          rmdirSync(dir);
        } catch {
          left++;
        }
      }
    }
    if (left === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Tracks what a test started and removes it all afterwards. */
export class Cleanup {
  private readonly procs: CairnProcess[] = [];
  private readonly dirs: string[] = [];

  track(p: CairnProcess): CairnProcess {
    this.procs.push(p);
    return p;
  }

  dir(prefix?: string): string {
    const d = tempDir(prefix);
    this.dirs.push(d);
    return d;
  }

  async run(): Promise<void> {
    await Promise.all(this.procs.splice(0).map((p) => p.kill('SIGKILL')));
    // Tasks run in their own process groups and outlive an agent killed with SIGKILL;
    // end those whose sandbox lies in this test's directories.
    killTasksUnder(this.dirs);
    await removeContainersUnder(this.dirs);
    await removeAgentCgroups(this.dirs);
    removeTaskDnsAddressesUnder(this.dirs);
    for (const d of this.dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }
}

export async function startMasterProcess(cleanup: Cleanup, opts: { dataDir?: string; port?: number; extra?: string[]; env?: Record<string, string> } = {}): Promise<CairnProcess> {
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? cleanup.dir('cairn-master-');
  // DNS on a port from the OS unless the test names one: never the host's 53 or 8053.
  const dns = opts.extra?.includes('--dns-port') ? [] : ['--dns-port', '0'];
  const p = cleanup.track(startCairn(['master', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, ...dns, ...(opts.extra ?? [])], `http://127.0.0.1:${port}`, opts.env));
  await p.waitHealthy();
  return p;
}

export async function startAgentProcess(cleanup: Cleanup, masterUrl: string, opts: { workDir?: string; port?: number; resources?: string; extra?: string[]; env?: Record<string, string> } = {}): Promise<CairnProcess> {
  const port = opts.port ?? (await freePort());
  const workDir = opts.workDir ?? cleanup.dir('cairn-agent-');
  const args = ['agent', '--master', masterUrl, '--port', String(port), '--work-dir', workDir, '--hostname', 'localhost'];
  if (opts.resources) args.push('--resources', opts.resources);
  const p = cleanup.track(startCairn([...args, ...(opts.extra ?? [])], `http://127.0.0.1:${port}`, opts.env));
  await p.waitHealthy();
  return p;
}
