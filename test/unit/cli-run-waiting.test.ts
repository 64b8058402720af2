// `cairn run` saying why it waits, `--timeout`, `--detach`, `--image`, and `cairn attach`,
// against a fake master that serves the scheduler API, the state and the tasks' logs.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runRun, type RunTuning } from '../../bin/commands/tasks/run.ts';
import { runAttach } from '../../bin/commands/tasks/attach.ts';
import { DETACH_FAILOVER_TIMEOUT_S } from '../../bin/commands/tasks/run-tasks.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import type { RunOptions } from '../../bin/commands/tasks/options.ts';
import { Resources, type MesosResource } from '../../shared/resources.ts';
import { encodeRecord } from '../../shared/recordio.ts';
import type { AgentView, FrameworkView, StateView } from '../../shared/master-state.ts';
import { isTerminal, type TaskState } from '../../shared/agent-messages.ts';

interface FakeTask {
  id: string;
  frameworkId: string;
  state: TaskState;
  stdout: string;
  stderr: string;
  exitCode?: number;
  message?: string;
  info?: any;
}

function agentView(resources: string, extra: Partial<AgentView> = {}): AgentView {
  return { id: 'a1', hostname: 'h1', ip: '127.0.0.1', url: 'http://127.0.0.1:1', reachable: true, connected: true, registeredAtMs: 0, resources, used: '', offered: '', attributes: {}, isolation: '', draining: null, usage: null, ...extra };
}

class FakeMaster {
  readonly server: http.Server;
  url = '';
  calls: any[] = [];
  rest: { method: string; path: string }[] = [];
  tasks = new Map<string, FakeTask>();
  agents: AgentView[] = [agentView('cpus:2;mem:1024;ports:[31000-31005]')];
  frameworks: FrameworkView[] = [];
  subscribeInfo: any;
  stream: http.ServerResponse | undefined;
  offerCount = 0;
  uuidCount = 0;
  /** What a launched task does: undefined runs on until killed. */
  script: (t: FakeTask) => { stdout?: string; end?: { state: TaskState; exitCode?: number } } = () => ({ stdout: 'ok\n', end: { state: 'TASK_FINISHED', exitCode: 0 } });
  /** The first offer, sent on SUBSCRIBE. */
  firstOffer: string | undefined = 'cpus:2;mem:1024;ports:[31000-31005]';
  /** How long a scripted task runs before it ends. */
  endAfterMs = 20;

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString()));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.stream?.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  send(event: object): void {
    this.stream?.write(encodeRecord(event));
  }

  offer(text: string): void {
    const resources: MesosResource[] = Resources.parse(text).toMesos();
    const id = `o${++this.offerCount}`;
    this.send({
      type: 'OFFERS',
      offers: { offers: [{ id: { value: id }, framework_id: { value: 'fw' }, agent_id: { value: 'a1' }, hostname: 'h1', url: { scheme: 'http', address: { hostname: 'h1', ip: '127.0.0.1', port: 1 } }, resources, attributes: [] }] },
    });
  }

  update(task: FakeTask, state: TaskState): void {
    task.state = state;
    const uuid = Buffer.alloc(16, ++this.uuidCount).toString('base64');
    this.send({ type: 'UPDATE', update: { status: { task_id: { value: task.id }, agent_id: { value: 'a1' }, state, uuid } } });
  }

  callsOf(type: string): any[] {
    return this.calls.filter((c) => c.type === type);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, body: unknown): void => void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/api/v1/scheduler') {
      const call = JSON.parse(text);
      if (call.type === 'SUBSCRIBE') {
        this.subscribeInfo = call.subscribe.framework_info;
        res.writeHead(200, { 'Content-Type': 'application/json', 'Mesos-Stream-Id': 's1' });
        this.stream = res;
        this.send({ type: 'SUBSCRIBED', subscribed: { framework_id: { value: 'fw' }, heartbeat_interval_seconds: 15 } });
        if (this.firstOffer) this.offer(this.firstOffer);
        return;
      }
      this.calls.push(call);
      res.writeHead(202).end();
      if (call.type === 'ACCEPT') setImmediate(() => this.launch(call));
      if (call.type === 'KILL') {
        const t = this.tasks.get(call.kill.task_id.value);
        if (t && !isTerminal(t.state)) setTimeout(() => this.update(t, 'TASK_KILLED'), 10);
      }
      return;
    }
    this.rest.push({ method: req.method ?? 'GET', path: url.pathname });
    if (url.pathname === '/api/v1/state') {
      const state: Partial<StateView> = {
        agents: this.agents,
        frameworks: this.frameworks,
        tasks: [...this.tasks.values()].map((t) => ({ id: t.id, name: t.id, frameworkId: t.frameworkId, agentId: 'a1', state: t.state, resources: '', message: '', launchedAtMs: 0, updatedAtMs: 0 })),
        offers: [],
      };
      return json(200, state);
    }
    const teardown = /^\/api\/v1\/frameworks\/([^/]+)\/teardown$/.exec(url.pathname);
    if (teardown) {
      this.frameworks = this.frameworks.filter((f) => f.id !== teardown[1]);
      return void res.writeHead(202).end();
    }
    const m = /^\/api\/v1\/tasks\/([^/]+)(\/logs)?$/.exec(url.pathname);
    const task = m ? this.tasks.get(decodeURIComponent(m[1])) : undefined;
    if (!task) return json(404, { code: 'CAIRN_UNKNOWN_TASK', message: 'no such task', field: 'id' });
    if (!m![2]) return json(200, { id: task.id, frameworkId: task.frameworkId, state: task.state, exitCode: task.exitCode, message: task.message ?? '' });
    const stream = url.searchParams.get('stream') === 'stderr' ? 'stderr' : 'stdout';
    const offset = Number(url.searchParams.get('offset') ?? '0');
    const chunk = () => {
      const all = Buffer.from(task[stream]);
      const data = all.subarray(offset).toString();
      return { data, offset, nextOffset: all.length, eof: isTerminal(task.state) };
    };
    if (url.searchParams.get('follow') !== 'true') return json(200, chunk());
    // Followed: everything once the task has ended, in one chunk with eof.
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    const poll = setInterval(() => {
      if (!isTerminal(task.state)) return;
      clearInterval(poll);
      res.end(`${JSON.stringify(chunk())}\n`);
    }, 5);
    res.on('close', () => clearInterval(poll));
  }

  private launch(call: any): void {
    for (const info of call.accept.operations[0].launch.task_infos) {
      const task: FakeTask = { id: info.task_id.value, frameworkId: 'fw', info, state: 'TASK_STAGING', stdout: '', stderr: '' };
      this.tasks.set(task.id, task);
      this.update(task, 'TASK_RUNNING');
      const plan = this.script(task);
      task.stdout = plan.stdout ?? '';
      if (plan.end) {
        const end = plan.end;
        setTimeout(() => {
          task.exitCode = end.exitCode;
          this.update(task, end.state);
        }, this.endAfterMs);
      }
    }
  }
}

const masters: FakeMaster[] = [];
afterEach(async () => {
  await Promise.all(masters.splice(0).map((m) => m.stop()));
});

async function master(): Promise<FakeMaster> {
  const m = await new FakeMaster().start();
  masters.push(m);
  return m;
}

function io(): { io: CliIo; out: () => string; err: () => string; lines: { at: number; text: string }[] } {
  let out = '';
  let err = '';
  const lines: { at: number; text: string }[] = [];
  return {
    io: {
      stdout: { write: (s: string) => (out += s) },
      stderr: {
        write: (s: string) => {
          err += s;
          lines.push({ at: Date.now(), text: s });
        },
      },
      env: {},
      onInterrupt: () => () => undefined,
    },
    out: () => out,
    err: () => err,
    lines,
  };
}

function runOptions(masterUrl: string, extra: Partial<RunOptions> = {}): RunOptions {
  return { masterUrl, name: 'job', instances: 1, cpus: 0.1, mem: 32, gpus: 0, ports: 0, role: '*', env: [], command: ['echo hi'], ...extra };
}

const FAST: RunTuning = { pollIntervalMs: 5, logGiveUpMs: 500, killWaitMs: 2000, waitingNoticeMs: 60_000, stateCheckMs: 100, user: 'tester', randomSuffix: () => 'r' };

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('cairn run says why it waits', () => {
  it('says at once that no agent has 64 cpus, and --timeout ends the wait with 124', async () => {
    const m = await master();
    const t = io();
    const started = Date.now();
    const code = await runRun(runOptions(m.url, { cpus: 64, timeoutMs: 1500 }), t.io, FAST);
    expect(code).toBe(124);
    const said = t.lines.find((l) => l.text.includes('no agent has 64 cpus; the largest has 2'));
    expect(said?.text).toBe('cairn run: cannot launch job-0-r: no agent has 64 cpus; the largest has 2\n');
    expect(said!.at - started).toBeLessThan(2000);
    // Said once, though the state was read again many times; the declined offer adds nothing.
    expect(t.err().split('no agent has 64 cpus').length - 1).toBe(2); // the line, and the timeout's reason
    expect(t.err()).not.toContain('every offer so far');
    expect(t.err()).toContain('cairn run: timed out after 1500ms waiting for offers for 1 of 1 task(s), each cpus:64;mem:32 (no agent has 64 cpus; the largest has 2)');
    expect(m.callsOf('DECLINE')).toHaveLength(1);
    expect(m.callsOf('ACCEPT')).toHaveLength(0);
    expect(m.callsOf('TEARDOWN')).toHaveLength(1);
    expect(m.rest.filter((r) => r.path === '/api/v1/state').length).toBeGreaterThan(2);
  });

  it('says when the agent that could fit it is draining', async () => {
    const m = await master();
    m.agents = [agentView('cpus:1;mem:1024'), agentView('cpus:8;mem:4096', { id: 'a2', hostname: 'big', draining: { sinceMs: 1, deadlineAtMs: null } })];
    m.firstOffer = 'cpus:1;mem:1024';
    const t = io();
    const code = await runRun(runOptions(m.url, { cpus: 4, timeoutMs: 1000 }), t.io, FAST);
    expect(code).toBe(124);
    expect(t.err()).toContain('cairn run: cannot launch job-0-r: the 1 agent that could fit it is draining\n');
  });

  it('says once that offers are too small right now, again when that changes, then launches and names the task', async () => {
    const m = await master();
    m.firstOffer = 'cpus:2;mem:32';
    const t = io();
    const running = runRun(runOptions(m.url, { mem: 512 }), t.io, { ...FAST, declineRefuseSeconds: 1 });
    await until(() => t.err().includes('every offer so far'));
    m.offer('cpus:2;mem:32');
    m.offer('cpus:1;mem:32');
    await until(() => m.callsOf('DECLINE').length === 3);
    m.offer('cpus:2;mem:64');
    await until(() => m.callsOf('DECLINE').length === 4);
    m.offer('cpus:2;mem:1024');
    expect(await running).toBe(0);
    const waiting = t.err().split('\n').filter((l) => l.includes('every offer so far'));
    expect(waiting).toEqual([
      'cairn run: waiting: every offer so far had too little mem: 32 MiB free, 512 MiB needed',
      'cairn run: waiting: every offer so far had too little mem: at most 64 MiB free, 512 MiB needed',
    ]);
    expect(t.err()).toContain('cairn run: launched job-0-r on h1\n');
    expect(t.out()).toBe('ok\n');
    expect(t.err()).not.toContain('cannot launch');
  });

  it('--timeout kills what it launched when the rest did not fit in time', async () => {
    const m = await master();
    m.firstOffer = 'cpus:1;mem:1024';
    m.script = () => ({ stdout: 'working\n' }); // runs until killed
    const t = io();
    const code = await runRun(runOptions(m.url, { cpus: 1, instances: 2, timeoutMs: 1000 }), t.io, FAST);
    expect(code).toBe(124);
    expect(t.err()).toContain('launched job-0-r on h1');
    expect(t.err()).toContain('timed out after 1s waiting for offers for 1 of 2 task(s), each cpus:1;mem:32');
    expect(m.callsOf('KILL').map((k) => k.kill.task_id.value)).toEqual(['job-0-r']);
    expect(m.tasks.get('job-0-r')!.state).toBe('TASK_KILLED');
    expect(m.callsOf('TEARDOWN')).toHaveLength(1);
  });

  it('--timeout bounds the wait only: tasks that all launched run past it', async () => {
    const m = await master();
    m.script = () => ({ stdout: 'slow\n', end: { state: 'TASK_FINISHED', exitCode: 0 } });
    m.endAfterMs = 800;
    const t = io();
    expect(await runRun(runOptions(m.url, { timeoutMs: 200 }), t.io, FAST)).toBe(0);
    expect(t.out()).toBe('slow\n');
  });
});

describe('cairn run --detach and --image, cairn attach', () => {
  it('--detach prints the ids once launched and leaves the framework, with its long failover timeout', async () => {
    const m = await master();
    m.script = () => ({ stdout: 'never copied\n' });
    const t = io();
    let n = 0;
    const code = await runRun(runOptions(m.url, { instances: 2, detach: true }), t.io, { ...FAST, randomSuffix: () => `s${n++}` });
    expect(code).toBe(0);
    expect(t.out()).toBe('job-0-s0\njob-1-s1\n');
    expect(m.subscribeInfo.failover_timeout).toBe(DETACH_FAILOVER_TIMEOUT_S);
    expect(m.callsOf('TEARDOWN')).toHaveLength(0);
    expect(m.callsOf('KILL')).toHaveLength(0);
    expect([...m.tasks.values()].every((task) => task.state === 'TASK_RUNNING')).toBe(true);
  });

  it('--image runs the command in a Docker container', async () => {
    const m = await master();
    const t = io();
    expect(await runRun(runOptions(m.url, { image: 'busybox:1.36' }), t.io, FAST)).toBe(0);
    const info = m.callsOf('ACCEPT')[0].accept.operations[0].launch.task_infos[0];
    expect(info.container).toEqual({ type: 'DOCKER', docker: { image: 'busybox:1.36', network: 'HOST' } });
    expect(info.command).toMatchObject({ shell: true, value: 'echo hi' });
  });

  it('attach copies the output, exits with the first failure, and tears the finished detached framework down', async () => {
    const m = await master();
    m.frameworks = [{ id: 'fw', name: 'cairn-run:job', role: '*', user: 'u', connected: false, failoverTimeoutS: DETACH_FAILOVER_TIMEOUT_S, registeredAtMs: 0 }];
    const one: FakeTask = { id: 'job-0-r', frameworkId: 'fw', state: 'TASK_RUNNING', stdout: 'one\n', stderr: '' };
    const two: FakeTask = { id: 'job-1-r', frameworkId: 'fw', state: 'TASK_RUNNING', stdout: 'two\n', stderr: 'bad\n' };
    m.tasks.set(one.id, one).set(two.id, two);
    const t = io();
    const attached = runAttach({ masterUrl: m.url, taskIds: [one.id, two.id] }, t.io);
    await new Promise((r) => setTimeout(r, 50));
    expect(t.out()).toBe(''); // nothing until the tasks write (the fake sends it all at the end)
    one.state = 'TASK_FINISHED';
    Object.assign(two, { state: 'TASK_FAILED', exitCode: 3, message: 'exited with code 3' });
    expect(await attached).toBe(3);
    expect(t.out().split('\n').filter(Boolean).sort()).toEqual(['[0] one', '[1] two']);
    expect(t.err()).toContain('[1] bad\n');
    expect(t.err()).toContain('[1] cairn attach: task job-1-r failed (exit code 3): exited with code 3');
    expect(m.rest).toContainEqual({ method: 'POST', path: '/api/v1/frameworks/fw/teardown' });
  });

  it('attach leaves a framework alone while another of its tasks runs, and refuses an unknown task', async () => {
    const m = await master();
    m.frameworks = [{ id: 'fw', name: 'cairn-run:job', role: '*', user: 'u', connected: false, failoverTimeoutS: DETACH_FAILOVER_TIMEOUT_S, registeredAtMs: 0 }];
    m.tasks.set('a', { id: 'a', frameworkId: 'fw', state: 'TASK_FINISHED', stdout: 'done\n', stderr: '' });
    m.tasks.set('b', { id: 'b', frameworkId: 'fw', state: 'TASK_RUNNING', stdout: '', stderr: '' });
    const t = io();
    expect(await runAttach({ masterUrl: m.url, taskIds: ['a'] }, t.io)).toBe(0);
    expect(t.out()).toBe('done\n');
    expect(m.rest.some((r) => r.path.endsWith('/teardown'))).toBe(false);
    const t2 = io();
    expect(await runAttach({ masterUrl: m.url, taskIds: ['a', 'nope'] }, t2.io)).toBe(1);
    expect(t2.err()).toBe('cairn attach: no task nope is known to the master\n');
  });
});
