// Tasks as a user, their pids limit, and logs that never leave the sandbox, against a real
// master and agents (separate processes, real tasks, real cgroups), as root:
// - a task whose framework names no user runs as its principal's own uid from the agent's
//   range (no account: its HOME is its sandbox), owns its sandbox (0700) and cannot read a
//   file only root may; a task whose framework asks for root fails, naming
//   --allow-root-tasks, and runs as root on an agent started with that flag;
// - a fork bomb stops at the task's pids limit, the agent stays up, the task can be killed,
//   and nothing of it is left;
// - a task that replaces its stdout with a symlink to a file outside its sandbox gets a
//   refusal from the logs API (the master's and the agent's), and never the file's content.

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentCgroupName, parseCgroupMounts } from '../../agent/isolation/cgroups.ts';
import { sandboxDir, sanitizeTaskId } from '../../agent/executors/process/sandbox.ts';
import { UserDb } from '../../agent/task-users.ts';
import { parseUidRange } from '../../agent/task-uids.ts';
import { AGENT_DEFAULTS } from '../../shared/agent-defaults.ts';
import { agentAuthHeaders, authFetch } from '../harness/credentials.ts';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo, type RawEvent } from '../harness/raw-scheduler.ts';

const nobody = new UserDb().lookup('nobody');
const pidsMount = (() => {
  try {
    const mounts = parseCgroupMounts(readFileSync('/proc/self/mountinfo', 'utf8'));
    const v1 = mounts.v1.get('pids');
    if (v1 !== undefined) return { dir: v1, file: 'pids.current' };
    const v2 = mounts.v2.find((m) => (() => {
      try {
        return readFileSync(join(m, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('pids');
      } catch {
        return false;
      }
    })());
    return v2 !== undefined ? { dir: v2, file: 'pids.current' } : undefined;
  } catch {
    return undefined;
  }
})();

const whyNot = process.getuid?.() !== 0 ? 'not running as root' : !nobody ? 'no user nobody on this host' : undefined;
const whyNoPids = whyNot ?? (pidsMount === undefined ? 'no pids cgroup controller on this host' : undefined);
for (const why of [whyNot, whyNoPids]) {
  if (why === undefined) continue;
  if (process.env.CI) throw new Error(`tasks as a user cannot be tested here: ${why}`);
  console.warn(`skipping tests of tasks as a user: ${why}`);
}

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
/** Files only root may read, made by the tests. */
const secrets: string[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});
afterAll(() => {
  for (const d of secrets.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A file of mode 0600 owned by root, in a directory anyone may enter, with a content no log may show. */
function rootOnlyFile(): { path: string; content: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-secret-'));
  secrets.push(dir);
  chmodSync(dir, 0o755);
  const content = `TOP-SECRET-${process.pid}-${Date.now()}`;
  const path = join(dir, 'secret');
  writeFileSync(path, `${content}\n`, { mode: 0o600 });
  return { path, content };
}

function updatesOf(s: RawScheduler, taskId: string): any[] {
  return s.events.filter((e: RawEvent) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e: RawEvent) => e.update.status);
}

const TERMINAL = ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_GONE'];

async function ended(s: RawScheduler, taskId: string, timeoutMs = 30_000): Promise<any> {
  return waitFor(`${taskId} ended`, () => updatesOf(s, taskId).find((u) => TERMINAL.includes(u.state)), timeoutMs);
}

interface Cluster {
  master: CairnProcess;
  agent: CairnProcess;
  workDir: string;
  s: RawScheduler;
  agentId: string;
  offer: any;
}

/** A master, one agent with `agentFlags`, and a framework subscribed as `user` holding an offer. */
async function cluster(user: string, agentFlags: string[] = []): Promise<Cluster> {
  const master = await startMasterProcess(cleanup);
  const workDir = cleanup.dir('cairn-agent-');
  const agent = await startAgentProcess(cleanup, master.url, { workDir, resources: 'cpus:2;mem:1024', extra: agentFlags });
  const s = new RawScheduler(master.url);
  schedulers.push(s);
  expect((await s.subscribe({ user, name: 'users', failover_timeout: 3600 })).status).toBe(200);
  autoAck(s);
  const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
  return { master, agent, workDir, s, agentId: offer.agent_id.value as string, offer };
}

async function launch(c: Cluster, tasks: [id: string, cmd: string][]): Promise<void> {
  const infos = tasks.map(([id, cmd]) => taskInfo(id, c.agentId, { cpus: 0.1, mem: 64 }, cmd));
  const r = await c.s.call({ type: 'ACCEPT', accept: { offer_ids: [c.offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }] } });
  expect(r.status).toBe(202);
}

async function masterLog(c: Cluster, taskId: string, stream: 'stdout' | 'stderr', extra = ''): Promise<{ status: number; text: string }> {
  const r = await authFetch(`${c.master.url}/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=${stream}${extra}`);
  return { status: r.status, text: await r.text() };
}

async function agentLog(c: Cluster, taskId: string, stream: 'stdout' | 'stderr', extra = ''): Promise<{ status: number; text: string }> {
  const r = await fetch(`${c.agent.url}/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=${stream}${extra}`, { headers: agentAuthHeaders() });
  return { status: r.status, text: await r.text() };
}

describe.skipIf(whyNot !== undefined)('tasks as a user (real processes)', () => {
  it("runs a task as its principal's own uid, in a sandbox only that uid enters, unable to read root's files", async () => {
    const secret = rootOnlyFile();
    const c = await cluster('');
    await launch(c, [
      ['as-principal', `id -u; stat -c '%u %a' .; printf '%s\\n' "$HOME"; cat ${secret.path}`],
    ]);
    const end = await ended(c.s, 'as-principal');
    // cat was refused: the task failed.
    expect(end.state).toBe('TASK_FAILED');
    const out = await waitFor('stdout', async () => {
      const r = await masterLog(c, 'as-principal', 'stdout');
      return r.status === 200 && JSON.parse(r.text).data !== '' ? (JSON.parse(r.text).data as string) : undefined;
    });
    const sandbox = sandboxDir(c.workDir, 'as-principal');
    const [uidText, sandboxStat, home] = out.split('\n');
    const uid = Number(uidText);
    const range = parseUidRange(AGENT_DEFAULTS.taskUidRange)!;
    expect(uid >= range.first && uid <= range.last, `uid ${uid} from the range`).toBe(true);
    expect(sandboxStat).toBe(`${uid} 700`);
    expect(home).toBe(sandbox);
    expect(out).not.toContain(secret.content);
    expect(JSON.parse((await masterLog(c, 'as-principal', 'stderr')).text).data).toMatch(/Permission denied/);
    expect(statSync(sandbox).uid).toBe(uid);
    expect(statSync(join(sandbox, 'stdout')).uid).toBe(uid);
    expect(statSync(join(sandbox, 'stdout')).mode & 0o777).toBe(0o600);
    // The agent says whom tasks run as.
    const health = await (await fetch(`${c.agent.url}/health`)).json();
    expect(health.taskUsers).toEqual({ switchUsers: true, defaultTaskUser: 'nobody', allowRootTasks: false, taskUidRange: AGENT_DEFAULTS.taskUidRange, principalsWithUids: 1 });
  });

  it('fails at once a task whose framework asks for root, on an agent without --allow-root-tasks', async () => {
    const secret = rootOnlyFile();
    const c = await cluster('root');
    await launch(c, [['as-root', `cat ${secret.path}`]]);
    const refused = await ended(c.s, 'as-root');
    expect(refused.state).toBe('TASK_FAILED');
    expect(refused.message).toMatch(/uid 0, root/);
    expect(refused.message).toContain('--allow-root-tasks');
    expect(updatesOf(c.s, 'as-root').map((u) => u.state)).not.toContain('TASK_RUNNING');
  });

  it('runs a root task on an agent started with --allow-root-tasks', async () => {
    const secret = rootOnlyFile();
    const c = await cluster('root', ['--allow-root-tasks']);
    await launch(c, [['really-root', `id -u; cat ${secret.path}`]]);
    expect((await ended(c.s, 'really-root')).state).toBe('TASK_FINISHED');
    const out = JSON.parse((await masterLog(c, 'really-root', 'stdout')).text).data as string;
    expect(out).toBe(`0\n${secret.content}\n`);
  });

  it('fails a task whose user does not exist, naming the user', async () => {
    const c = await cluster('no-such-user-anywhere');
    await launch(c, [['ghost', 'true']]);
    const end = await ended(c.s, 'ghost');
    expect(end.state).toBe('TASK_FAILED');
    expect(end.message).toContain("'no-such-user-anywhere' does not exist");
  });

  it('refuses to serve a stdout the task replaced with a symlink out of its sandbox, through the master and the agent', async () => {
    const secret = rootOnlyFile();
    const c = await cluster('');
    // Not even a file nobody may not read: the agent (root) could, and must not.
    await launch(c, [['sneaky', `rm stdout && ln -s ${secret.path} stdout && echo linked >&2; sleep 300`]]);
    await waitFor('the symlink in place', async () => {
      const r = await masterLog(c, 'sneaky', 'stderr');
      return r.status === 200 && (JSON.parse(r.text).data as string).includes('linked');
    });
    for (const read of [masterLog, agentLog]) {
      for (const extra of ['', '&offset=0&length=100', '&follow=true']) {
        const r = await read(c, 'sneaky', 'stdout', extra);
        expect(r.status, `${read.name} ${extra}`).toBe(403);
        expect(r.text).not.toContain(secret.content);
        expect(JSON.parse(r.text)).toMatchObject({ code: 'CAIRN_LOG_REFUSED', message: expect.stringContaining('symbolic link') });
      }
    }
    // Its stderr, a regular file of the sandbox, is served as ever.
    expect((await agentLog(c, 'sneaky', 'stderr')).status).toBe(200);
    const kill = await c.s.call({ type: 'KILL', kill: { task_id: { value: 'sneaky' }, agent_id: { value: c.agentId } } });
    expect(kill.status).toBe(202);
    expect((await ended(c.s, 'sneaky')).state).toBe('TASK_KILLED');
  });
});

describe.skipIf(whyNoPids !== undefined)('the pids limit (real processes, real cgroups)', () => {
  it('bounds a fork bomb; the agent stays up, the task is killed and nothing of it is left', { timeout: 120_000 }, async () => {
    const c = await cluster('', ['--task-pids-max', '64']);
    // Far more processes than the limit allows, each meant to live for minutes. (perl, which
    // goes on when a fork fails; a POSIX shell gives up at the first.)
    const bomb = String.raw`$| = 1; my $n = 0; for (1 .. 400) { my $p = fork; if (!defined $p) { print STDERR "fork failed: $!
"; next } if ($p == 0) { exec 'sleep', '600'; exit 0 } $n++ } print "spawned $n
"; sleep 600`;
    await launch(c, [['bomb', `exec perl -e '${bomb}'`]]);
    await waitFor('bomb running', () => updatesOf(c.s, 'bomb').some((u) => u.state === 'TASK_RUNNING'));
    const cgroup = join(pidsMount!.dir, 'cairn', agentCgroupName(c.workDir), sanitizeTaskId('bomb'));
    expect(readFileSync(join(cgroup, 'pids.max'), 'utf8').trim()).toBe('64');
    expect((await (await fetch(`${c.agent.url}/health`)).json()).isolation.pids).toEqual({ limited: true, max: 64 });
    // The loop ran to its end: forks past the limit failed, and it said so.
    await waitFor('the loop done', async () => {
      const r = await agentLog(c, 'bomb', 'stdout');
      const m = r.status === 200 ? /spawned (\d+)/.exec(JSON.parse(r.text).data as string) : null;
      return m ? Number(m[1]) : undefined;
    }, 30_000).then((spawned) => {
      expect(spawned).toBeGreaterThan(32);
      expect(spawned).toBeLessThan(64);
    });
    const pids = Number(readFileSync(join(cgroup, pidsMount!.file), 'utf8'));
    expect(pids).toBeGreaterThan(32);
    expect(pids).toBeLessThanOrEqual(64);
    expect(JSON.parse((await agentLog(c, 'bomb', 'stderr')).text).data).toMatch(/fork/i);
    // The agent still answers.
    expect((await fetch(`${c.agent.url}/health`)).status).toBe(200);
    const members = readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter((l) => l !== '').map(Number);
    const kill = await c.s.call({ type: 'KILL', kill: { task_id: { value: 'bomb' }, agent_id: { value: c.agentId } } });
    expect(kill.status).toBe(202);
    expect((await ended(c.s, 'bomb')).state).toBe('TASK_KILLED');
    await waitFor('its cgroup removed', () => !existsSync(cgroup), 20_000);
    const alive = new Set(readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number));
    expect(members.filter((p) => alive.has(p) && isSleep(p))).toEqual([]);
    expect((await fetch(`${c.agent.url}/health`)).status).toBe(200);
  });
});

/** Whether a pid (perhaps reused since) is one of the bomb's `sleep 600`. */
function isSleep(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\x00600');
  } catch {
    return false;
  }
}
