// The kubectl habits against a real `cairn up`: -o json|yaml on the lists, `cairn task ID`
// with its state history, the filters and limit of `cairn tasks`, DRAINING in `cairn agents`,
// the exit code of a killed task as the shell sees it, and the hints in errors.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { Cleanup, freePort, runCairn, startCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
let up: CairnProcess;
let masterUrl: string;
let agentUrl: string;
let finishedId: string;
let killedId: string;

function cairn(args: string[], timeoutMs = 60_000): ReturnType<typeof runCairn> {
  return runCairn(args, { CAIRN_MASTER: masterUrl }, timeoutMs);
}

async function state(): Promise<any> {
  return (await authFetch(`${masterUrl}/api/v1/state`)).json();
}

beforeAll(async () => {
  const port = await freePort();
  const agentPort = await freePort();
  masterUrl = `http://127.0.0.1:${port}`;
  agentUrl = `http://127.0.0.1:${agentPort}`;
  up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', String(agentPort), '--data-dir', cleanup.dir('cairn-kubectl-'), '--dns-port', '0', '--resources', 'cpus:2;mem:1024'], masterUrl));
  await up.waitHealthy();
  await waitFor('agent registered', async () => {
    const st = await state();
    return st.agents.length === 1 && st.agents[0].connected ? true : undefined;
  }, 30_000);

  // One task that finishes, one that is killed while it runs.
  const done = await cairn(['run', '--name', 'done', '--', 'true']);
  expect(done.code).toBe(0);
  finishedId = (await state()).tasks.find((t: any) => t.id.startsWith('done-')).id;
  const sleeper = cairn(['run', '--name', 'sleeper', '--', 'sleep', '600']);
  const running = await waitFor('sleeper running', async () => (await state()).tasks.find((t: any) => t.id.startsWith('sleeper-') && t.state === 'TASK_RUNNING'), 30_000);
  killedId = running.id;
  // A running task is described with its sandbox, as its agent reports it.
  const described = await cairn(['task', killedId]);
  expect(described.stdout).toMatch(new RegExp(`Sandbox:\\s+/\\S+${killedId}`));
  expect((await cairn(['kill', killedId])).code).toBe(0);
  expect((await sleeper).code).not.toBe(0);
  await waitFor('sleeper killed', async () => ((await state()).tasks.find((t: any) => t.id === killedId).state === 'TASK_KILLED' ? true : undefined), 30_000);
}, 120_000);

afterAll(async () => {
  await cleanup.run();
});

describe('cairn lists and describes like kubectl', () => {
  it('-o json and -o yaml print the objects as the API gives them', async () => {
    const st = await state();
    const json = await cairn(['tasks', '-o', 'json']);
    expect(json.code).toBe(0);
    const tasks = JSON.parse(json.stdout);
    expect(tasks.map((t: any) => t.id)).toEqual([killedId, finishedId]); // newest first
    expect(tasks).toEqual([killedId, finishedId].map((id) => st.tasks.find((t: any) => t.id === id)));
    const yaml = await cairn(['agents', '-o', 'yaml']);
    expect(yaml.code).toBe(0);
    // What changes from one read to the next (offers, usage samples) aside, the same agents.
    const steady = (a: any) => ({ id: a.id, hostname: a.hostname, url: a.url, resources: a.resources, reachable: a.reachable, attributes: a.attributes });
    expect(parseYaml(yaml.stdout).map(steady)).toEqual(st.agents.map(steady));
    const wide = await cairn(['tasks', '-o', 'wide']);
    expect(wide.stdout.split('\n')[0]).toMatch(/REASON\s+UPDATED\s+MESSAGE$/);
  });

  it('shows the exit code of a task killed by SIGTERM as 143, with why', async () => {
    const table = await cairn(['tasks']);
    const line = table.stdout.split('\n').find((l) => l.startsWith(killedId))!;
    expect(line).toMatch(/KILLED\s+143 \(killed\)/);
    expect(table.stdout.split('\n').find((l) => l.startsWith(finishedId))).toMatch(/FINISHED\s+0\s/);
  });

  it('cairn task ID: the state history with its sources, the agent, resources, exit code', async () => {
    const text = await cairn(['task', killedId]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/State:\s+KILLED/);
    expect(text.stdout).toMatch(/Exit code:\s+143 \(killed\)/);
    expect(text.stdout).toMatch(/Agent:\s+\S+ \(\S+, http:\/\/127\.0\.0\.1:\d+\)/);
    expect(text.stdout).toMatch(/Resources:\s+cpus:0\.1;mem:32/);
    expect(text.stdout).toMatch(/Usage:\s+none \(the task is not running\)/);
    expect(text.stdout).toMatch(/STAGING\s+-\s+master/);
    expect(text.stdout).toMatch(/RUNNING\s+-\s+agent/);
    expect(text.stdout).toMatch(/KILLED\s+\S+\s+agent\s+killed on request/);
    const json = JSON.parse((await cairn(['task', killedId, '-o', 'json'])).stdout);
    expect(json.id).toBe(killedId);
    expect(json.history.map((h: any) => h.state)).toEqual(expect.arrayContaining(['TASK_STAGING', 'TASK_RUNNING', 'TASK_KILLED']));
    expect(json.history[0].state).toBe('TASK_STAGING');
    expect(json.history.at(-1)).toMatchObject({ state: 'TASK_KILLED', source: 'SOURCE_AGENT' });
    const yaml = parseYaml((await cairn(['task', finishedId, '-o', 'yaml'])).stdout);
    expect(yaml.history.at(-1)).toMatchObject({ state: 'TASK_FINISHED' });
  });

  it('filters by state, framework and agent; a limit says how many more there are', async () => {
    const st = await state();
    const killed = await cairn(['tasks', '--state', 'killed', '-o', 'json']);
    expect(JSON.parse(killed.stdout).map((t: any) => t.id)).toEqual([killedId]);
    const both = await cairn(['tasks', '--state', 'killed,finished', '--agent', st.agents[0].hostname, '-o', 'json']);
    expect(JSON.parse(both.stdout)).toHaveLength(2);
    const none = await cairn(['tasks', '--agent', 'no-such-host', '-o', 'json']);
    expect(JSON.parse(none.stdout)).toEqual([]);
    // Each `cairn run` is a framework of its own (torn down at its end, so named by id only).
    const fw = st.tasks.find((t: any) => t.id === finishedId).frameworkId;
    expect(JSON.parse((await cairn(['tasks', '--framework', fw, '-o', 'json'])).stdout).map((t: any) => t.id)).toEqual([finishedId]);
    const limited = await cairn(['tasks', '--limit', '1']);
    expect(limited.code).toBe(0);
    expect(limited.stdout).toContain(killedId);
    expect(limited.stdout).not.toContain(finishedId);
    expect(limited.stderr).toContain('1 more task not shown');
  });

  it('cairn agents shows a drained agent as draining, and reachable again after', async () => {
    const host = (await state()).agents[0].hostname;
    expect((await cairn(['agent', 'drain', host])).code).toBe(0);
    try {
      const agents = await cairn(['agents']);
      expect(agents.stdout.split('\n')[1]).toMatch(/\sdraining\s/);
      expect(JSON.parse((await cairn(['agents', '-o', 'json'])).stdout)[0].draining).not.toBeNull();
    } finally {
      expect((await cairn(['agent', 'undrain', host])).code).toBe(0);
    }
    expect((await cairn(['agents'])).stdout.split('\n')[1]).toMatch(/\sreachable\s/);
  });

  it('hints: no master there, an agent URL, a task id that is close', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const none = await runCairn(['tasks'], { CAIRN_MASTER: nobody });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`cannot reach the master at ${nobody}`);
    expect(none.stderr).toContain('start one with `cairn up` or set CAIRN_MASTER');
    const agent = await cairn(['tasks', '--master', agentUrl]);
    expect(agent.code).toBe(1);
    expect(agent.stderr).toContain(`${agentUrl} is an agent's URL`);
    const prefix = killedId.slice(0, killedId.length - 3);
    const close = await cairn(['task', prefix]);
    expect(close.code).toBe(1);
    expect(close.stderr).toContain(`did you mean ${killedId}?`);
    const logs = await cairn(['logs', `${killedId}x`]);
    expect(logs.code).toBe(1);
    expect(logs.stderr).toContain(`did you mean ${killedId}?`);
  });
});
