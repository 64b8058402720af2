// Tenants apart (issue 22, finding 2): under strict ACLs, with principals alice and bob, a
// master and a real root agent in this process. Alice's job replica keeps a secret in its
// environment, a file in its sandbox, output in its stdout and a checkpoint in its job dir.
// Bob's job replica, given every path and her pid, tries to read her stdout, her file and
// /proc/PID/environ, to list and write her sandbox, to SIGKILL her task and to read and
// overwrite her checkpoint: each fails with the kernel's EACCES or EPERM, and her task runs
// on unharmed. Their tasks run under different uids from the agent's range (bob's scheduler
// framework gets the same uid as bob's job: a uid per principal); sandboxes and job dirs are
// 0700, logs 0600. Bob's framework labelling a task `cairn.job` with alice's job is refused,
// naming the label. The master's data dir, made 0755 as older installers left it, is 0700
// with a 0600 registry.sqlite once the master has started.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { startAgent, type AgentHandle } from '../../agent/agent.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { parseAcls } from '../../master/auth/acls.ts';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { parseUidRange } from '../../agent/task-uids.ts';
import { AGENT_DEFAULTS } from '../../shared/agent-defaults.ts';
import type { JobView } from '../../shared/jobs/model.ts';
import { RawScheduler, autoAck, taskInfo } from '../harness/raw-scheduler.ts';
import { removeAgentCgroups, tempDir, waitFor } from '../harness/processes.ts';

const PYTHON = '/usr/bin/python3';
const whyNot = process.getuid?.() !== 0 ? 'not running as root' : spawnSync(PYTHON, ['-c', '1']).status !== 0 ? `no ${PYTHON}` : undefined;
if (whyNot !== undefined && process.env.CI) throw new Error(`tenant uids cannot be tested here: ${whyNot}`);
if (whyNot !== undefined) console.warn(`skipping the tenant uid tests: ${whyNot}`);

const USERS = ['alice', 'bob'] as const;
type User = (typeof USERS)[number];
const secret = (name: string) => `${name}-secret-0123456789abcdef`;
const bearer = (u: User) => ({ authorization: `Bearer ${secret(u)}` });
const AGENT = { principal: 'agent-1', secret: secret('agent-1'), agent: true };
const RANGE = parseUidRange(AGENT_DEFAULTS.taskUidRange)!;

/** Alice's replica: a secret in its environment, a file and output in its sandbox, a checkpoint; then it waits. */
const ALICE_CMD = 'echo $$ > pid; echo "alice-stdout-secret"; echo mine > private.txt; echo precious > "$CAIRN_JOB_DIR/ckpt"; exec sleep 600';

/** Bob's replica: every crossing into alice's task, each printing the errno the kernel gave. */
const BOB_PY = [
  'import errno, os, signal',
  'S, P, J = os.environ["ALICE_SANDBOX"], int(os.environ["ALICE_PID"]), os.environ["ALICE_JOB_DIR"]',
  'def attempt(name, fn):',
  '    try:',
  '        fn()',
  '        print(f"{name}=OK", flush=True)',
  '    except OSError as e:',
  '        print(f"{name}={errno.errorcode.get(e.errno, e.errno)}", flush=True)',
  'attempt("read-stdout", lambda: open(S + "/stdout").read())',
  'attempt("read-file", lambda: open(S + "/private.txt").read())',
  'attempt("list-sandbox", lambda: os.listdir(S))',
  'attempt("read-environ", lambda: open(f"/proc/{P}/environ").read())',
  'attempt("write-sandbox", lambda: open(S + "/planted", "w").write("x"))',
  'attempt("kill", lambda: os.kill(P, signal.SIGKILL))',
  'attempt("read-job-dir", lambda: open(J + "/ckpt").read())',
  'attempt("write-job-dir", lambda: open(J + "/ckpt", "w").write("overwritten"))',
  'print(f"uid={os.getuid()}", flush=True)',
].join('\n');

let master: MasterHandle | undefined;
let agent: AgentHandle | undefined;
let dir: string;
let masterDir: string;
let workDir: string;
const schedulers: RawScheduler[] = [];

async function send(u: User, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${master!.url}${path}`, {
    method,
    headers: { ...bearer(u), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

const job = (name: string, command: string, env: Record<string, string> = {}) => ({
  name, kind: 'batch', role: '*',
  groups: [{ name: 'w', replicas: 1, restartPolicy: 'Never', template: { command, cpus: 0.1, mem: 64, env } }],
});

async function runningTask(u: User, name: string): Promise<string> {
  return waitFor(`${name}'s replica running`, async () => {
    const j = (await send(u, 'GET', `/api/v1/jobs/${name}`)).body as JobView;
    const r = j.replicas[0];
    return r?.state === 'Running' && r.taskId ? r.taskId : undefined;
  }, 60_000, 200);
}

beforeAll(async () => {
  if (whyNot !== undefined) return;
  dir = tempDir('cairn-tenant-uids-');
  // Tasks pass through; the master's dir as an older installer left it (0755, its registry dir too).
  chmodSync(dir, 0o711);
  masterDir = join(dir, 'master');
  mkdirSync(join(masterDir, 'registry'), { recursive: true, mode: 0o755 });
  chmodSync(masterDir, 0o755);
  chmodSync(join(masterDir, 'registry'), 0o755);
  workDir = join(dir, 'agent');
  const credentials = parseCredentials(JSON.stringify({ credentials: [...USERS.map((u) => ({ principal: u, secret: secret(u) })), AGENT] }), 'test');
  const acls = parseAcls(JSON.stringify({
    permissive: false,
    register_frameworks: [{ principals: { values: ['alice', 'bob'] }, roles: { values: ['*'] } }],
    run_tasks: [{ principals: { type: 'ANY' }, users: { type: 'ANY' } }],
  }), 'acls');
  const silent = pino({ level: 'silent' });
  master = await startMaster({ auth: MasterAuth.on({ credentials, acls }), dataDir: masterDir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silent, allocationIntervalMs: 50 });
  agent = await startAgent({
    masterUrl: master.url, workDir, httpPort: 0, ip: '127.0.0.1', hostname: 'tenant-host', resources: 'cpus:4;mem:2048;disk:1000;ports:[31000-31099]',
    credential: { principal: AGENT.principal, secret: AGENT.secret }, taskDns: false, logger: silent,
  });
  await waitFor('the agent registered', () => (agent!.agentId() !== undefined && master!.master.registry.state.agents.has(agent!.agentId()!)) || undefined, 30_000);
}, 120_000);

afterAll(async () => {
  for (const s of schedulers) s.close();
  await agent?.stop({ killTasks: true });
  await master?.stop();
  if (dir) {
    await removeAgentCgroups([workDir]);
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe.skipIf(whyNot !== undefined)('tenants apart: a uid per principal', { timeout: 180_000 }, () => {
  it("bob's task can read, write, list and signal nothing of alice's; her task runs on; their uids differ", async () => {
    expect((await send('alice', 'POST', '/api/v1/jobs', job('alice-train', ALICE_CMD, { ALICE_SECRET: 'alice-env-secret' }))).status).toBe(201);
    const aliceTask = await runningTask('alice', 'alice-train');
    const sandbox = sandboxDir(workDir, aliceTask);
    const jobDir = join(workDir, 'job-dirs', 'alice-train');
    const pid = await waitFor("alice's pid", () => {
      try {
        const text = readFileSync(join(sandbox, 'pid'), 'utf8').trim();
        return existsSync(join(jobDir, 'ckpt')) && /^\d+$/.test(text) ? Number(text) : undefined;
      } catch {
        return undefined;
      }
    }, 30_000);
    const aliceUid = statSync(`/proc/${pid}`).uid;
    expect(readFileSync(`/proc/${pid}/environ`, 'latin1')).toContain('ALICE_SECRET=alice-env-secret');

    const bobCmd = `echo ${Buffer.from(BOB_PY).toString('base64')} | base64 -d > bob.py && ${PYTHON} bob.py`;
    expect((await send('bob', 'POST', '/api/v1/jobs', job('bob-probe', bobCmd, { ALICE_SANDBOX: sandbox, ALICE_PID: String(pid), ALICE_JOB_DIR: jobDir }))).status).toBe(201);
    const ended = await waitFor('bob-probe ended', async () => {
      const j = (await send('bob', 'GET', '/api/v1/jobs/bob-probe')).body as JobView;
      return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
    }, 60_000, 200);
    const bobTask = ended.replicas[0]!.taskId!;
    const out = readFileSync(join(sandboxDir(workDir, bobTask), 'stdout'), 'utf8');
    const said = Object.fromEntries(out.trim().split('\n').map((l) => l.split('=') as [string, string]));
    expect(said).toMatchObject({
      'read-stdout': 'EACCES',
      'read-file': 'EACCES',
      'list-sandbox': 'EACCES',
      'read-environ': 'EACCES',
      'write-sandbox': 'EACCES',
      kill: 'EPERM',
      'read-job-dir': 'EACCES',
      'write-job-dir': 'EACCES',
    });
    expect(ended.phase).toBe('Succeeded');

    // Two principals, two uids, both from the agent's range.
    const bobUid = Number(said.uid);
    expect(bobUid).not.toBe(aliceUid);
    for (const uid of [aliceUid, bobUid]) expect(uid >= RANGE.first && uid <= RANGE.last, `uid ${uid} in the range`).toBe(true);

    // Alice's task runs on, unharmed: same process, her checkpoint and files as she left them.
    expect(statSync(`/proc/${pid}`).uid).toBe(aliceUid);
    expect(((await send('alice', 'GET', '/api/v1/jobs/alice-train')).body as JobView).replicas[0]!.state).toBe('Running');
    expect(master!.master.registry.state.tasks.get(aliceTask)?.state).toBe('TASK_RUNNING');
    expect(readFileSync(join(jobDir, 'ckpt'), 'utf8')).toBe('precious\n');
    expect(existsSync(join(sandbox, 'planted'))).toBe(false);

    // Private: sandboxes and job dirs 0700 of their task's uid, logs 0600.
    for (const [path, uid] of [[sandbox, aliceUid], [sandboxDir(workDir, bobTask), bobUid], [jobDir, aliceUid]] as const) {
      expect(statSync(path).mode & 0o777, path).toBe(0o700);
      expect(statSync(path).uid, path).toBe(uid);
    }
    for (const stream of ['stdout', 'stderr']) expect(statSync(join(sandbox, stream)).mode & 0o777).toBe(0o600);

    // Alice still reads her own log through the master (the agent, root, serves it).
    const log = await send('alice', 'GET', `/api/v1/tasks/${encodeURIComponent(aliceTask)}/logs?stream=stdout&offset=0`);
    expect(log.body.data).toContain('alice-stdout-secret');

    // Bob's own framework: a task labelled with alice's job is refused on its own, as Mesos
    // answers an unauthorized task (TASK_ERROR, REASON_TASK_UNAUTHORIZED, naming the label),
    // while the plain task beside it in the same ACCEPT runs, under bob's uid (the same as his
    // job's: a uid per principal, not per framework).
    const s = new RawScheduler(master!.url, bearer('bob'));
    schedulers.push(s);
    autoAck(s);
    expect((await s.subscribe({ user: '', name: 'bob-fw', role: '*' })).status).toBe(200);
    const offer = (await s.next((e) => e.type === 'OFFERS', 30_000)).offers.offers[0];
    const accept = (tasks: unknown[]) => s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }] } });
    const stolen = taskInfo('bob-steals', offer.agent_id.value, { cpus: 0.1, mem: 32 }, 'echo "$CAIRN_JOB_DIR"', { labels: { labels: [{ key: 'cairn.job', value: 'alice-train' }] } });
    const plain = taskInfo('bob-plain', offer.agent_id.value, { cpus: 0.1, mem: 32 }, 'id -u');
    const accepted = await accept([stolen, plain]);
    expect(accepted.status, accepted.body).toBe(202);
    const error = await s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'bob-steals', 30_000);
    expect(error.update.status).toMatchObject({ state: 'TASK_ERROR', reason: 'REASON_TASK_UNAUTHORIZED', source: 'SOURCE_MASTER' });
    expect(error.update.status.message).toContain("label 'cairn.job' belongs to the built-in jobs framework");
    expect(master!.master.registry.state.tasks.has('bob-steals')).toBe(false);
    await waitFor('bob-plain finished', () => s.events.some((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'bob-plain' && e.update.status.state === 'TASK_FINISHED') || undefined, 30_000);
    expect(s.events.some((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'bob-steals' && e.update.status.state !== 'TASK_ERROR')).toBe(false);
    expect(readFileSync(join(sandboxDir(workDir, 'bob-plain'), 'stdout'), 'utf8').trim()).toBe(String(bobUid));
  });

  it("a started master's data dir is 0700 and its registry 0600, though it was made 0755", () => {
    expect(statSync(masterDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(masterDir, 'registry')).mode & 0o777).toBe(0o700);
    expect(statSync(join(masterDir, 'registry', 'registry.sqlite')).mode & 0o777).toBe(0o600);
    // The agent keeps what it decided where no task reads it.
    expect(statSync(join(workDir, 'meta', 'task-uids.json')).mode & 0o777).toBe(0o600);
    expect(Object.keys(JSON.parse(readFileSync(join(workDir, 'meta', 'task-uids.json'), 'utf8')).uids).sort()).toEqual(['alice', 'bob']);
  });
});
