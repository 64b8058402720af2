// Tasks reach their sandboxes whatever the data dir, as root with tasks running as `nobody`:
// `cairn up --data-dir "$(mktemp -d)"` (mode 0700) and `cairn up` in a directory under /root
// (mode 0700, as Debian makes home directories) with the default data dir (./.cairn). On each,
// a tuning trial runs a shipped Python file and a job replica runs a program from its sandbox
// and keeps a checkpoint in CAIRN_JOB_DIR; both succeed, and so does a task of another user. The directories in the way are opened
// to the task's user only, for search only: nobody still cannot list /root, the data dir or the
// sandboxes, and /root's mode is what it was. Where the way cannot be opened (no setfacl),
// `cairn up` does not start, naming the directory and the fix. /root's ACL is put back as it
// was afterwards.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UserDb } from '../../agent/task-users.ts';
import { authFetch } from '../harness/credentials.ts';
import { Cleanup, freePort, killTasksUnder, removeAgentCgroups, runCairn, startCairn, waitFor } from '../harness/processes.ts';
import type { ExperimentView } from '../../shared/tuning/views.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const PYTHON = '/usr/bin/python3';
const nobody = new UserDb().lookup('nobody');
const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const whyNot = process.getuid?.() !== 0
  ? 'not running as root'
  : !nobody ? 'no user nobody on this host'
  : !has('setfacl') || !has('getfacl') ? 'no setfacl/getfacl (apt-get install acl)'
  : spawnSync(PYTHON, ['-c', '1']).status !== 0 ? `no ${PYTHON}`
  : undefined;
if (whyNot !== undefined && process.env.CI) throw new Error(`sandbox reach cannot be tested here: ${whyNot}`);
if (whyNot !== undefined) console.warn(`skipping the sandbox reach tests: ${whyNot}`);

const cleanup = new Cleanup();
/** Directories made outside the temporary directory (under /root), removed at the end. */
const ownDirs: string[] = [];
/** /root's ACL before the tests (getfacl's text), put back afterwards. */
const rootAcl = whyNot === undefined ? spawnSync('getfacl', ['-c', '-p', '/root'], { encoding: 'utf8' }).stdout : undefined;
const rootMode = statSync('/root').mode & 0o7777;

afterAll(async () => {
  await cleanup.run();
  killTasksUnder(ownDirs);
  await removeAgentCgroups(ownDirs.map((d) => join(d, '.cairn', 'agent')));
  for (const d of ownDirs.splice(0)) rmSync(d, { recursive: true, force: true });
  if (rootAcl !== undefined) spawnSync('setfacl', ['--set-file=-', '/root'], { input: rootAcl });
}, 60_000);

/** Whether `nobody` can run `cmd args` (exit status 0). */
function asNobody(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { uid: nobody!.uid, gid: nobody!.gid, stdio: 'ignore' }).status === 0;
}

const TRIAL_PY = [
  'import json, sys',
  'lr = float(sys.argv[1])',
  'params = json.load(open("params.json"))',
  'assert params["lr"] == lr, params',
  'print(f"accuracy={lr}")',
].join('\n');

/** Python 3.11 opens a script by its absolute path: a sandbox nobody can reach fails here. */
const REPLICA_SH = [
  `printf '%s\\n' 'import os, pathlib' 'd = pathlib.Path(os.environ["CAIRN_JOB_DIR"])' '(d / "ckpt").write_text("7")' 'print("step", (d / "ckpt").read_text())' > train.py`,
  `${PYTHON} train.py`,
].join(' && ');

async function runTrialAndReplica(url: string, name: string): Promise<void> {
  const experiment = {
    apiVersion: 'kubeflow.org/v1beta1', kind: 'Experiment', metadata: { name },
    spec: {
      objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
      algorithm: { algorithmName: 'random' },
      parallelTrialCount: 1, maxTrialCount: 1, maxFailedTrialCount: 1,
      parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.9' } }],
      trialTemplate: {
        command: `${PYTHON} trial.py \${lr}`,
        resources: { cpus: 0.25, memory: '64M' },
        files: [{ name: 'trial.py', base64: Buffer.from(TRIAL_PY).toString('base64') }],
      },
    },
  };
  const posted = await authFetch(`${url}/api/v1/experiments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(experiment) });
  expect(posted.status, await posted.clone().text()).toBe(201);
  const job = { name, kind: 'batch', groups: [{ name: 'worker', replicas: 1, template: { command: REPLICA_SH, cpus: 0.25, mem: 64 } }] };
  const submitted = await authFetch(`${url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(job) });
  expect(submitted.status, await submitted.clone().text()).toBe(201);

  const stderr = async (taskId: string | undefined) => taskId === undefined ? '' : ((await (await authFetch(`${url}/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=stderr&offset=0`)).json()).data as string);
  const tuned = await waitFor(`experiment ${name} ended`, async () => {
    const r = await authFetch(`${url}/api/v1/experiments/${name}`);
    const v = r.status === 200 ? ((await r.json()) as ExperimentView) : undefined;
    return v && v.phase !== 'Running' ? v : undefined;
  }, 60_000, 200);
  const trial = tuned.trials[0]!;
  expect(trial.state, `${trial.message}: ${await stderr(trial.taskId)}`).toBe('Succeeded');
  expect(tuned.phase).toBe('Succeeded');
  expect(trial.value).toBeCloseTo(trial.params.lr as number, 10);

  const ran = await waitFor(`job ${name} ended`, async () => {
    const j = (await (await authFetch(`${url}/api/v1/jobs/${name}`)).json()) as JobView;
    return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
  }, 60_000, 200);
  const replica = ran.replicas[0]!;
  expect(ran.phase, `${ran.message}: ${await stderr(replica.taskId)}`).toBe('Succeeded');
  const out = (await (await authFetch(`${url}/api/v1/tasks/${encodeURIComponent(replica.taskId!)}/logs?stream=stdout&offset=0`)).json()).data as string;
  expect(out).toBe('step 7\n');
}

/** Starts `cairn up` (in `cwd`, with `args`), waits for its agent, runs the trial and the replica, stops it. */
async function upAndRun(name: string, cwd: string, args: string[], dataDir: string, more?: (url: string) => Promise<void>): Promise<void> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--resources', 'cpus:2;mem:1024;ports:[31000-31099]', ...args], url, {}, { cwd }));
  await up.waitHealthy(30_000);
  await waitFor('the agent registered', async () => {
    const s = await (await authFetch(`${url}/api/v1/state`)).json();
    return s.agents?.[0]?.connected ? true : undefined;
  }, 30_000);
  await runTrialAndReplica(url, name);
  await more?.(url);

  // Open to the task's user for search only: it cannot list the data dir nor the sandboxes.
  const sandboxes = join(dataDir, 'agent', 'sandboxes');
  expect(asNobody('ls', [dataDir])).toBe(false);
  expect(asNobody('ls', [sandboxes])).toBe(false);
  expect(asNobody('test', ['-x', sandboxes])).toBe(true);
  expect(statSync(sandboxes).mode & 0o777).toBe(0o711);
  // The checkpoints of tasks (their environment) are the agent's alone.
  expect(asNobody('ls', [join(dataDir, 'agent', 'meta', 'tasks')])).toBe(false);
  expect(await up.kill('SIGINT'), up.output).toBe(0);
}

describe.skipIf(whyNot !== undefined)('sandboxes reachable by the task user whatever the data dir', () => {
  it('cairn up --data-dir "$(mktemp -d)": a trial and a replica run their files', async () => {
    const dataDir = cleanup.dir('cairn-private-');
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    await upAndRun('private', dataDir, ['--data-dir', dataDir], dataDir, async (url) => {
      // Another user than the default one gets the way opened before its first task.
      const other = new UserDb().lookup('daemon');
      if (!other) return;
      const r = await runCairn(['run', '--master', url, '--user', 'daemon', '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'echo mine > "$CAIRN_SANDBOX/f" && cat "$CAIRN_SANDBOX/f"']);
      expect(r.stdout, r.stderr).toBe('mine\n');
      expect(spawnSync('getfacl', ['-c', '-n', '-p', dataDir], { encoding: 'utf8' }).stdout).toContain(`user:${other.uid}:--x`);
    });
    // Only the tasks' users were granted anything: the mode others see is unchanged.
    expect(statSync(dataDir).mode & 0o007).toBe(0);
  }, 120_000);

  it('refuses to start, naming the directory and the fix, when it cannot open the way', async () => {
    const dataDir = cleanup.dir('cairn-closed-');
    const port = await freePort();
    // No setfacl on the PATH: the agent cannot grant, and says so before any task fails.
    const up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--data-dir', dataDir], `http://127.0.0.1:${port}`, { PATH: '/nonexistent' }));
    await waitFor('cairn up to exit', () => (up.child.exitCode !== null ? true : undefined), 30_000);
    expect(up.child.exitCode, up.output).toBe(1);
    expect(up.output).toContain(`tasks running as nobody (uid ${nobody!.uid}) cannot reach ${join(dataDir, 'agent', 'sandboxes')}`);
    expect(up.output).toContain(`may not search ${dataDir}`);
    expect(up.output).toContain('setfacl is not installed');
    expect(up.output).toContain(`setfacl -m u:${nobody!.uid}:x ${dataDir}`);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  }, 60_000);

  it('cairn up in a directory under /root (mode 0700), with the default data dir', async () => {
    const home = mkdtempSync('/root/.cairn-test-');
    ownDirs.push(home);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    await upAndRun('rooted', home, [], join(home, '.cairn'));
    expect(statSync('/root').mode & 0o7007).toBe(rootMode & 0o7007);
    expect(asNobody('ls', ['/root'])).toBe(false);
    const acl = spawnSync('getfacl', ['-c', '-n', '-p', '/root'], { encoding: 'utf8' }).stdout;
    expect(acl).toContain(`user:${nobody!.uid}:--x`);
  }, 120_000);
});
