// kubectl's and Nomad's habits against a real `cairn up` (issue 24, item 4), one test each:
// -f on submit, one -o json shape for every list, get/describe, -w, logs --tail, --timestamps
// and --since, global flags after the command, ids in completion, "No resources found",
// framework names, and the exit codes for a time-out, a refused credential and a refused
// permission.

import { spawn, execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CairnProcess, Cleanup, freePort, runCairn, startCairn, waitFor } from '../harness/processes.ts';
import { authFetch, credentialEnv, TEST_USER } from '../harness/credentials.ts';

const cleanup = new Cleanup();
let up: CairnProcess;
let masterUrl: string;
let dir: string;
let doneId: string;

function cairn(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): ReturnType<typeof runCairn> {
  return runCairn(args, { CAIRN_MASTER: masterUrl, ...env }, timeoutMs);
}

async function state(): Promise<any> {
  return (await authFetch(`${masterUrl}/api/v1/state`)).json();
}

beforeAll(async () => {
  dir = cleanup.dir('cairn-habits-');
  // Everything is permitted but tearing frameworks down: that is refused to the test's user.
  const acls = join(dir, 'acls.json');
  writeFileSync(acls, JSON.stringify({ permissive: true, teardown_frameworks: [{ principals: { values: [TEST_USER.principal] }, framework_principals: { type: 'NONE' } }] }));
  const port = await freePort();
  const agentPort = await freePort();
  masterUrl = `http://127.0.0.1:${port}`;
  up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', String(agentPort), '--data-dir', join(dir, 'data'), '--dns-port', '0', '--resources', 'cpus:2;mem:1024', '--acls', acls], masterUrl));
  await up.waitHealthy();
  await waitFor('agent registered', async () => ((await state()).agents?.some((a: any) => a.connected) ? true : undefined), 30_000);
}, 120_000);

afterAll(async () => {
  await cleanup.run();
});

describe('kubectl and Nomad habits on a real cluster', () => {
  it('an empty list: nothing on stdout, "No resources found" on stderr, exit 0', async () => {
    // Independent reads: run at once, each checked on its own.
    const argvs = [['tasks'], ['job', 'list'], ['get', 'experiments'], ['app', 'list']];
    const results = await Promise.all(argvs.map((argv) => cairn(argv)));
    for (const [i, r] of results.entries()) expect([r.code, r.stdout, r.stderr], argvs[i]!.join(' ')).toEqual([0, '', 'No resources found\n']);
  });

  it('framework names beside ids: a finished cairn run shows its framework by name, after the framework is gone', async () => {
    const r = await cairn(['run', '--name', 'seq', '--', 'seq 1 10']);
    expect(r.code, r.stderr).toBe(0);
    const st = await state();
    const task = st.tasks.find((t: any) => t.id.startsWith('seq-'));
    doneId = task.id;
    // The run's framework is gone from the state's frameworks; its name is still the task's.
    expect(st.frameworks.map((f: any) => f.id)).not.toContain(task.frameworkId);
    const table = await cairn(['tasks']);
    const row = table.stdout.split('\n').find((l) => l.startsWith(doneId))!;
    expect(row.split(/\s{2,}/)[4]).toBe(task.frameworkName);
    expect(task.frameworkName).toMatch(/^cairn-run/);
    expect(row).not.toContain(task.frameworkId);
  });

  it('logs --tail N: the last N lines', async () => {
    const r = await cairn(['logs', doneId, '--tail', '3']);
    expect([r.code, r.stdout]).toEqual([0, '8\n9\n10\n']);
  });

  it('logs --timestamps and --since: the times the agent noted the lines by', async () => {
    const r = await cairn(['run', '--name', 'stamped', '--', 'echo first; sleep 6; echo second']);
    expect(r.code, r.stderr).toBe(0);
    const id = (await state()).tasks.find((t: any) => t.id.startsWith('stamped-')).id;
    const stamped = await cairn(['logs', id, '--timestamps']);
    const lines = stamped.stdout.trimEnd().split('\n').map((l) => /^(\S+Z) (first|second)$/.exec(l));
    expect(lines.map((m) => m?.[2]), stamped.stdout).toEqual(['first', 'second']);
    const [t1, t2] = lines.map((m) => Date.parse(m![1]!));
    // Noted once a second: the 6 s between the lines, give or take a note.
    expect(t2! - t1!).toBeGreaterThanOrEqual(4000);
    expect(t2! - t1!).toBeLessThanOrEqual(9000);
    // A window that starts at least a second after the first line and two before the second.
    const sinceS = Math.floor((Date.now() - t1! - 1000) / 1000);
    const recent = await cairn(['logs', id, '--since', `${sinceS}s`]);
    expect(recent.stdout).toBe('second\n');
  }, 60_000);

  it('-f FILE on job submit; job wait --timeout exits 124', async () => {
    const quick = join(dir, 'quick.yaml');
    writeFileSync(quick, "name: quick\nkind: pytorch\ngroups:\n  - name: master\n    template: {command: 'echo done', cpus: 0.25, mem: 32}\n");
    const submitted = await cairn(['job', 'submit', '-f', quick]);
    expect([submitted.code, submitted.stdout], submitted.stderr).toEqual([0, 'quick\n']);
    expect((await cairn(['job', 'wait', 'quick', '--timeout', '60s'])).code).toBe(0);
    const slow = join(dir, 'slow.yaml');
    writeFileSync(slow, "name: slow\nkind: pytorch\ngroups:\n  - name: master\n    template: {command: 'sleep 600', cpus: 0.25, mem: 32}\n");
    expect((await cairn(['job', 'submit', '-f', slow])).code).toBe(0);
    const waited = await cairn(['job', 'wait', 'slow', '--timeout', '1s']);
    expect(waited.code, waited.stderr).toBe(124);
    expect(waited.stderr).toContain('still');
    expect((await cairn(['job', 'delete', 'slow'])).code).toBe(0);
  }, 120_000);

  it('-o json: every list is a bare array', async () => {
    const lists: Record<string, string[]> = {
      tasks: ['tasks'], agents: ['agents'], jobs: ['job', 'list'], experiments: ['tune', 'list'], apps: ['app', 'list'], deployments: ['app', 'deployments'],
      quotas: ['quota', 'list'], preemptions: ['preemptions'], secrets: ['secret', 'list'],
    };
    // Independent reads: run at once, each checked on its own.
    const results = await Promise.all(Object.entries(lists).map(async ([name, argv]) => ({ name, r: await cairn([...argv, '-o', 'json']) })));
    for (const { name, r } of results) {
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(Array.isArray(JSON.parse(r.stdout)), name).toBe(true);
    }
    const jobs = JSON.parse(results.find((x) => x.name === 'jobs')!.r.stdout);
    expect(jobs.map((j: any) => j.name)).toContain('quick');
  });

  it('get and describe map onto the lists and descriptions', async () => {
    const agent = (await state()).agents[0];
    // Independent reads: run at once, each checked on its own.
    const [jobs, described, taskJson, node, bad] = await Promise.all([
      cairn(['get', 'jobs']), cairn(['describe', 'job', 'quick']), cairn(['get', 'task', doneId, '-o', 'json']), cairn(['describe', 'node', agent.hostname]), cairn(['get', 'widgets']),
    ]);
    expect(jobs.stdout).toMatch(/^NAME\s+KIND\s+PHASE/);
    expect(jobs.stdout).toMatch(/\nquick\s+pytorch\s+Succeeded/);
    expect(described.stdout).toMatch(/Phase:\s+Succeeded/);
    const task = JSON.parse(taskJson.stdout);
    expect(task.id).toBe(doneId);
    expect(node.code, node.stderr).toBe(0);
    expect(node.stdout).toMatch(new RegExp(`^ID:\\s+${agent.id}\\n`));
    expect(bad.code).toBe(2);
  });

  it('global flags after the command: --token there is the one used (a wrong one is refused: exit 67)', async () => {
    const right = await cairn(['agents', '--token', TEST_USER.secret], { CAIRN_TOKEN: 'not-the-token' });
    expect(right.code, right.stderr).toBe(0);
    const wrong = await cairn(['agents', '--token', 'not-the-token']);
    expect(wrong.code, wrong.stderr).toBe(67);
    const jobs = await cairn(['job', 'list', '-o', 'json', '--token', 'not-the-token']);
    expect(jobs.code).toBe(67);
  });

  it('a refused permission exits 77', async () => {
    const st = await state();
    const jobsFramework = st.frameworks.find((f: any) => f.name !== '' && f.connected);
    const r = await cairn(['teardown', jobsFramework.id]);
    expect(r.code, r.stderr).toBe(77);
    expect((await state()).frameworks.map((f: any) => f.id)).toContain(jobsFramework.id);
  });

  it('-w prints the list, then again when it changed; Ctrl-C ends it with 0', async () => {
    const child = spawn(process.execPath, [resolve('bin/cairn.js'), 'get', 'tasks', '-w', '--limit', '0'], { env: { ...process.env, ...credentialEnv(), CAIRN_MASTER: masterUrl } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const watching = cleanup.track(new CairnProcess(child, masterUrl));
    await waitFor('the first snapshot', () => (out.includes(doneId) ? true : undefined), 30_000);
    expect(out).not.toContain('\n\n');
    const r = await cairn(['run', '--name', 'watched', '--', 'true']);
    expect(r.code).toBe(0);
    const second = await waitFor('the second snapshot', () => (out.includes('\n\n') && /\nwatched-/.test(out.split('\n\n')[1]!) ? out.split('\n\n')[1] : undefined), 30_000);
    expect(second).toMatch(/^ID\s+STATE/);
    expect(second).toContain(doneId);
    expect(await watching.kill('SIGINT')).toBe(0);
  }, 90_000);

  const bash = spawnSync('bash', ['--version']).status === 0;
  it.skipIf(!bash && !process.env.CI)('bash completion offers task ids and job names from the master', async () => {
    const c = await cairn(['completion', 'bash']);
    const script = join(dir, 'cairn.bash');
    writeFileSync(script, c.stdout);
    // The cairn the script calls at Tab time: this checkout's.
    const bin = cleanup.dir('cairn-habits-bin-');
    writeFileSync(join(bin, 'cairn'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(resolve('bin/cairn.js'))} "$@"\n`, { mode: 0o755 });
    const complete = (line: string): string[] => {
      const words = line.split(' ');
      const driver = `source ${JSON.stringify(script)}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}\n_cairn\nprintf '%s\\n' "\${COMPREPLY[@]}"`;
      return execFileSync('bash', ['--norc', '--noprofile', '-c', driver], { encoding: 'utf8', env: { ...process.env, ...credentialEnv(), CAIRN_MASTER: masterUrl, PATH: `${bin}:${process.env.PATH}` } }).split('\n').filter((l) => l !== '');
    };
    expect(complete('cairn logs seq')).toEqual([doneId]);
    expect(complete('cairn job wait qu')).toEqual(['quick']);
    expect(complete('cairn describe job qu')).toEqual(['quick']);
    const fish = await cairn(['__complete', '--line', '--', 'task', 'seq']);
    expect(fish.stdout).toBe(`${doneId}\n`);
  }, 60_000);
});
