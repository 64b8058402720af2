// The README's tour as a test: `cairn up` in one process, `cairn run`, `cairn logs`,
// `cairn kill`, `cairn tasks` in others, exactly as a user types them.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cleanup, freePort, runCairn, startCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
let up: CairnProcess;
let masterUrl: string;

function cairn(args: string[], timeoutMs = 30_000): ReturnType<typeof runCairn> {
  return runCairn(args, { CAIRN_MASTER: masterUrl }, timeoutMs);
}

beforeAll(async () => {
  const port = await freePort();
  const agentPort = await freePort();
  masterUrl = `http://127.0.0.1:${port}`;
  up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', String(agentPort), '--data-dir', cleanup.dir('cairn-up-'), '--dns-port', '0', '--resources', 'cpus:2;mem:1024'], masterUrl));
  await up.waitHealthy();
  await waitFor('agent registered', async () => {
    const st = await (await authFetch(`${masterUrl}/api/v1/state`)).json();
    return st.agents.length === 1 && st.agents[0].connected ? true : undefined;
  });
});

afterAll(async () => {
  await cleanup.run();
});

describe('the cairn command against `cairn up`', () => {
  it("cairn run prints the task's output and exits 0", async () => {
    const r = await cairn(['run', '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'echo hello']);
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.stdout).toBe('hello\n');
    expect(r.code).toBe(0);
  });

  it('a failing command exits with its code', async () => {
    const r = await cairn(['run', '--name', 'failing', '--', 'sh', '-c', 'echo oops >&2; exit 3']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('oops');
  });

  it('runs several instances with their index and count', async () => {
    const r = await cairn(['run', '--instances', '3', '--name', 'many', '--', 'sh', '-c', 'echo "i=$CAIRN_TASK_INDEX n=$CAIRN_TASK_COUNT"']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n').sort();
    expect(lines).toEqual(['[0] i=0 n=3', '[1] i=1 n=3', '[2] i=2 n=3']);
  });

  it("cairn logs shows a finished task's output; cairn tasks lists it", async () => {
    const r = await cairn(['run', '--name', 'logged', '--', 'sh', '-c', 'echo out-line; echo err-line >&2']);
    expect(r.code).toBe(0);
    const st = await (await authFetch(`${masterUrl}/api/v1/state`)).json();
    const task = st.tasks.find((t: any) => t.name.startsWith('logged') || t.id.startsWith('logged'));
    expect(task.state).toBe('TASK_FINISHED');
    const out = await cairn(['logs', task.id]);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe('out-line\n');
    const err = await cairn(['logs', task.id, '--stderr']);
    expect(err.stderr).toBe('err-line\n'); // the task's stderr goes to our stderr, as docker logs does
    const tasks = await cairn(['tasks']);
    expect(tasks.stdout).toContain(task.id);
    expect(tasks.stdout).toContain('FINISHED');
  });

  it('cairn kill ends a running task as KILLED', async () => {
    const run = cairn(['run', '--name', 'sleeper', '--', 'sleep', '60'], 60_000);
    const task = await waitFor('sleeper running', async () => {
      const st = await (await authFetch(`${masterUrl}/api/v1/state`)).json();
      return st.tasks.find((t: any) => t.id.startsWith('sleeper') && t.state === 'TASK_RUNNING');
    });
    const k = await cairn(['kill', task.id]);
    expect(k.code).toBe(0);
    const r = await run;
    expect(r.code).not.toBe(0);
    const after = await (await authFetch(`${masterUrl}/api/v1/tasks/${task.id}`)).json();
    expect(after.state).toBe('TASK_KILLED');
    const again = await cairn(['kill', task.id]);
    expect(again.code).toBe(1);
  });

  it('refuses bad flags naming the flag', async () => {
    const r = await cairn(['run', '--cpus', 'many', '--', 'true']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--cpus');
  });

  it('cairn up stops cleanly on Ctrl-C', async () => {
    const code = await up.kill('SIGINT');
    expect(code).toBe(0);
  });
});
