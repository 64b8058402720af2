import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTaskInfo, commandInfo, describeEnding, exitCodeFor, runFrameworkInfo, taskEnvironment, taskIds } from '../../bin/commands/tasks/run-tasks.ts';
import { followLog, LinePrefixer } from '../../bin/commands/common/log-relay.ts';
import { runRun } from '../../bin/commands/tasks/run.ts';
import { agentsTable, membersTable, tasksTable, runKill, runLogs } from '../../bin/commands/tasks/inspect.ts';
import { formatTable } from '../../bin/commands/common/table.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import type { RunOptions } from '../../bin/commands/tasks/options.ts';
import { fitTasks } from '../../shared/sdk/offer-fit.ts';
import { Resources } from '../../shared/resources.ts';
import { encodeRecord } from '../../shared/recordio.ts';
import { MasterHttpError } from '../../shared/sdk/http-error.ts';
import type { LogChunk, StateView } from '../../shared/master-state.ts';
import type { TaskState } from '../../shared/agent-protocol.ts';

describe('run: building tasks', () => {
  it('one argument is a shell command; several run without a shell, argv[0] included', () => {
    expect(commandInfo(['echo $HOME && ls'])).toEqual({ shell: true, value: 'echo $HOME && ls' });
    expect(commandInfo(['python', '-c', 'print(1)'])).toEqual({ shell: false, value: 'python', arguments: ['python', '-c', 'print(1)'] });
    expect(() => commandInfo([])).toThrow();
  });

  it('task ids are <name>-<index>-<suffix>', () => {
    let n = 0;
    expect(taskIds('train', 3, () => `s${n++}`)).toEqual(['train-0-s0', 'train-1-s1', 'train-2-s2']);
  });

  it('the environment has the index, the count, the ports, and --env last (winning)', () => {
    expect(taskEnvironment(2, 5, [31000, 31001], [['X', '1'], ['CAIRN_TASK_COUNT', 'mine']])).toEqual([
      { name: 'CAIRN_TASK_INDEX', value: '2' },
      { name: 'CAIRN_TASK_COUNT', value: 'mine' },
      { name: 'PORT', value: '31000' },
      { name: 'PORT0', value: '31000' },
      { name: 'PORT1', value: '31001' },
      { name: 'X', value: '1' },
    ]);
    expect(taskEnvironment(0, 1, [], [])).toEqual([
      { name: 'CAIRN_TASK_INDEX', value: '0' },
      { name: 'CAIRN_TASK_COUNT', value: '1' },
    ]);
  });

  it('builds a TaskInfo from a placement in an offer', () => {
    const offer = Resources.parse('cpus:1;mem:256;ports:[31000-31005]').toMesos();
    const placed = fitTasks(offer, [{ cpus: 0.5, mem: 64, ports: 1 }]).placed[0];
    const info = buildTaskInfo({ name: 'web', count: 2, command: ['./serve', '--port', '$PORT'], env: [['MODE', 'prod']] }, { index: 1, id: 'web-1-abc' }, 'agent-7', placed);
    expect(info).toEqual({
      name: 'web-1',
      task_id: { value: 'web-1-abc' },
      agent_id: { value: 'agent-7' },
      resources: placed.resources,
      command: {
        shell: false,
        value: './serve',
        arguments: ['./serve', '--port', '$PORT'],
        environment: {
          variables: [
            { name: 'CAIRN_TASK_INDEX', value: '1' },
            { name: 'CAIRN_TASK_COUNT', value: '2' },
            { name: 'PORT', value: '31000' },
            { name: 'PORT0', value: '31000' },
            { name: 'MODE', value: 'prod' },
          ],
        },
      },
    });
  });

  it('subscribes as a named framework in the role asked for', () => {
    expect(runFrameworkInfo({ name: 'x', role: 'ml' }, 'alice')).toMatchObject({ user: 'alice', name: 'cairn-run:x', role: 'ml' });
  });

  it.each<[TaskState, number | undefined, number]>([
    ['TASK_FINISHED', 0, 0],
    ['TASK_FINISHED', undefined, 0],
    ['TASK_FAILED', 3, 3],
    ['TASK_FAILED', 0, 1],
    ['TASK_FAILED', undefined, 1],
    ['TASK_FAILED', 300, 255],
    ['TASK_KILLED', -15, 143],
    ['TASK_KILLED', -9, 137],
    ['TASK_LOST', undefined, 1],
    ['TASK_ERROR', undefined, 1],
  ])('%s with exit code %s exits %i', (state, code, expected) => {
    expect(exitCodeFor(state, code)).toBe(expected);
  });

  it('describes endings for people', () => {
    expect(describeEnding('t', 'TASK_FAILED', 3, 'exited with code 3')).toBe('task t failed (exit code 3): exited with code 3');
    expect(describeEnding('t', 'TASK_KILLED', -15, undefined)).toBe('task t was killed (signal 15)');
    expect(describeEnding('t', 'TASK_LOST', undefined, 'agent gone')).toBe('task t was lost: agent gone');
    expect(describeEnding('t', 'TASK_ERROR', undefined, '')).toBe('task t could not be launched');
  });
});

describe('LinePrefixer', () => {
  it('passes text through untouched without a prefix', () => {
    let out = '';
    const p = new LinePrefixer('', (s) => (out += s));
    p.push('a');
    p.push('b\nc');
    p.flush();
    expect(out).toBe('ab\nc');
  });

  it('prefixes whole lines only, and flushes the rest with a newline', () => {
    const writes: string[] = [];
    const p = new LinePrefixer('[1] ', (s) => writes.push(s));
    p.push('hel');
    expect(writes).toEqual([]);
    p.push('lo\n\nwor');
    p.push('ld\nx');
    p.flush();
    p.flush();
    expect(writes.join('')).toBe('[1] hello\n[1] \n[1] world\n[1] x\n');
    expect(writes).toEqual(['[1] hello\n[1] \n', '[1] world\n', '[1] x\n']);
  });

  it('does not hold back an endless line forever', () => {
    let out = '';
    const p = new LinePrefixer('> ', (s) => (out += s));
    p.push('x'.repeat(20_000));
    expect(out).toBe(`> ${'x'.repeat(20_000)}\n`);
  });
});

/** A log source over a string that grows; eof once `ended` and read to the end. */
function growingLog(pieceBytes = 4) {
  const log = { text: '', ended: false, reads: 0, fail: undefined as Error | undefined };
  const source = {
    logs: async (_id: string, _stream: string, offset: number): Promise<LogChunk> => {
      log.reads++;
      if (log.fail) throw log.fail;
      const data = log.text.slice(offset, offset + pieceBytes);
      const nextOffset = offset + data.length;
      return { data, offset, nextOffset, eof: log.ended && nextOffset >= log.text.length };
    },
  };
  return { log, source };
}

describe('followLog', () => {
  it('reads in pieces as the log grows, and stops at eof', async () => {
    const { log, source } = growingLog();
    let out = '';
    log.text = 'first line\n';
    const done = followLog({ source, taskId: 't', stream: 'stdout', write: (s) => (out += s), pollIntervalMs: 5, giveUpMs: 1000, ended: () => log.ended });
    await new Promise((r) => setTimeout(r, 30));
    expect(out).toBe('first line\n');
    log.text += 'second\n';
    log.ended = true;
    await expect(done).resolves.toBe(18);
    expect(out).toBe('first line\nsecond\n');
  });

  it('retries errors while the task runs; stops at a 404 once it ended', async () => {
    const { log, source } = growingLog();
    log.fail = new Error('agent not ready');
    let ended = false;
    const done = followLog({ source, taskId: 't', stream: 'stderr', write: () => undefined, pollIntervalMs: 5, giveUpMs: 1000, ended: () => ended });
    await new Promise((r) => setTimeout(r, 30));
    expect(log.reads).toBeGreaterThan(2);
    log.fail = new MasterHttpError(404, 'CAIRN_UNKNOWN_TASK', 'no task');
    ended = true;
    await expect(done).resolves.toBe(0);
  });

  it('gives up once the task ended and no data came for giveUpMs', async () => {
    const { log, source } = growingLog();
    log.text = 'abc';
    const started = Date.now();
    await followLog({ source, taskId: 't', stream: 'stdout', write: () => undefined, pollIntervalMs: 5, giveUpMs: 50, ended: () => true });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('with retryErrors false, a failed read ends it with the error', async () => {
    const { log, source } = growingLog();
    log.fail = new Error('nope');
    await expect(followLog({ source, taskId: 't', stream: 'stdout', write: () => undefined, pollIntervalMs: 5, giveUpMs: 0, ended: () => false, retryErrors: false })).rejects.toThrow('nope');
  });
});

describe('tables', () => {
  it('pads columns', () => {
    expect(formatTable(['A', 'BB'], [['xxx', 'y'], ['z', '']])).toBe('A    BB\nxxx  y\nz\n');
  });

  const state: StateView = {
    version: '0.1.0',
    startedAtMs: 0,
    leader: { id: 1, url: 'http://127.0.0.1:5050' },
    master: { id: 1, role: 'leader', term: 1, commitIndex: 0, appliedIndex: 0 },
    members: [],
    agents: [{ id: 'a1', hostname: 'h1', ip: '10.0.0.1', url: 'http://10.0.0.1:5051', reachable: true, connected: true, registeredAtMs: 0, resources: 'cpus:4;mem:1024', used: 'cpus:1', offered: '', attributes: { rack: 'r1' }, isolation: '', draining: null, usage: null }],
    frameworks: [{ id: 'f1', name: 'cairn-run:x', role: '*', user: 'u', connected: true, failoverTimeoutS: 60, registeredAtMs: 0 }],
    tasks: [{ id: 'x-0-abc', name: 'x-0', frameworkId: 'f1', agentId: 'a1', state: 'TASK_FAILED', resources: 'cpus:1', message: '', exitCode: 3, launchedAtMs: 0, updatedAtMs: 0 }],
    offers: [],
  };

  it('lists agents and tasks', () => {
    expect(agentsTable(state, 90_000)).toBe(
      'ID  HOSTNAME  STATUS     RESOURCES        USED    ATTRIBUTES  AGE\n' + 'a1  h1        reachable  cpus:4;mem:1024  cpus:1  rack:r1     90s\n',
    );
    expect(tasksTable(state, 3 * 3600_000)).toBe(
      'ID       STATE   EXIT  AGENT  FRAMEWORK    RESOURCES  AGE\n' + 'x-0-abc  FAILED  3     h1     cairn-run:x  cpus:1     3h\n',
    );
  });

  it('lists gossip members, marking the one that answered', () => {
    expect(membersTable({
      self: 'agent@10.0.0.5:5051',
      members: [
        { name: 'master@10.0.0.1:5050', address: '10.0.0.1:7946', role: 'master', state: 'alive', incarnation: 3, meta: { api: 'http://10.0.0.1:5050', term: '2', leader: '' } },
        { name: 'agent@10.0.0.5:5051', address: '10.0.0.5:7947', role: 'agent', state: 'suspect', incarnation: 0, meta: {} },
      ],
    })).toBe(
      'NAME                   ROLE    STATE    ADDRESS        INCARNATION  API                   METADATA\n' +
      'master@10.0.0.1:5050   master  alive    10.0.0.1:7946  3            http://10.0.0.1:5050  term=2 leader=-\n' +
      'agent@10.0.0.5:5051 *  agent   suspect  10.0.0.5:7947  0            -                     -\n',
    );
  });
});

// ---- a fake master for whole `cairn run` sessions --------------------------------------

interface FakeTask {
  id: string;
  index: number;
  info: any;
  state: TaskState;
  stdout: string;
  stderr: string;
  exitCode?: number;
}

/** What the fake does with a launched task: its output and how it ends (undefined: runs on). */
type Script = (task: FakeTask) => { stdout?: string; stderr?: string; end?: { state: TaskState; exitCode?: number; message?: string } };

class FakeCluster {
  readonly server: http.Server;
  url = '';
  calls: any[] = [];
  tasks = new Map<string, FakeTask>();
  stream: http.ServerResponse | undefined;
  offerResources = Resources.parse('cpus:1;mem:256;ports:[31000-31005]').toMesos();
  offerCount = 0;
  uuidCount = 0;
  script: Script = () => ({ stdout: 'ok\n', end: { state: 'TASK_FINISHED', exitCode: 0 } });

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

  offer(resources = this.offerResources): void {
    const id = `o${++this.offerCount}`;
    this.send({
      type: 'OFFERS',
      offers: { offers: [{ id: { value: id }, framework_id: { value: 'fw' }, agent_id: { value: 'a1' }, hostname: 'h1', url: { scheme: 'http', address: { hostname: 'h1', ip: '127.0.0.1', port: 1 } }, resources, attributes: [] }] },
    });
  }

  update(task: FakeTask, state: TaskState, message?: string): void {
    task.state = state;
    const uuid = Buffer.alloc(16, ++this.uuidCount).toString('base64');
    this.send({ type: 'UPDATE', update: { status: { task_id: { value: task.id }, agent_id: { value: 'a1' }, state, uuid, ...(message ? { message } : {}) } } });
  }

  callsOf(type: string): any[] {
    return this.calls.filter((c) => c.type === type);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/v1/scheduler') {
      const call = JSON.parse(text);
      if (call.type === 'SUBSCRIBE') {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Mesos-Stream-Id': 's1' });
        this.stream = res;
        this.send({ type: 'SUBSCRIBED', subscribed: { framework_id: { value: 'fw' }, heartbeat_interval_seconds: 15 } });
        this.offer();
        return;
      }
      this.calls.push(call);
      res.writeHead(202).end();
      if (call.type === 'ACCEPT') setImmediate(() => this.launch(call));
      if (call.type === 'KILL') {
        const t = this.tasks.get(call.kill.task_id.value);
        if (t) setTimeout(() => this.update(t, 'TASK_KILLED', 'killed on request'), 10);
      }
      return;
    }
    const m = /^\/api\/v1\/tasks\/([^/]+)(\/logs)?$/.exec(url.pathname);
    const task = m ? this.tasks.get(decodeURIComponent(m[1])) : undefined;
    if (!task) {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ code: 'CAIRN_UNKNOWN_TASK', message: 'no such task', field: 'id' }));
      return;
    }
    if (!m![2]) {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ id: task.id, state: task.state, exitCode: task.exitCode }));
      return;
    }
    const stream = url.searchParams.get('stream') === 'stderr' ? 'stderr' : 'stdout';
    const offset = Number(url.searchParams.get('offset') ?? '0');
    const all = Buffer.from(task[stream]);
    // Small pieces, so readers must page.
    const data = all.subarray(offset, offset + 7).toString();
    const nextOffset = offset + Buffer.byteLength(data);
    const terminal = ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR'].includes(task.state);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ data, offset, nextOffset, eof: terminal && nextOffset >= all.length }));
  }

  private launch(call: any): void {
    for (const info of call.accept.operations[0].launch.task_infos) {
      const index = Number(info.command.environment.variables.find((v: any) => v.name === 'CAIRN_TASK_INDEX').value);
      const task: FakeTask = { id: info.task_id.value, index, info, state: 'TASK_STAGING', stdout: '', stderr: '' };
      this.tasks.set(task.id, task);
      this.update(task, 'TASK_RUNNING');
      const plan = this.script(task);
      task.stdout = plan.stdout ?? '';
      task.stderr = plan.stderr ?? '';
      if (plan.end) {
        const end = plan.end;
        setTimeout(() => {
          task.exitCode = end.exitCode;
          this.update(task, end.state, end.message);
        }, 20);
      }
    }
  }
}

const clusters: FakeCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.stop()));
});

async function cluster(): Promise<FakeCluster> {
  const c = await new FakeCluster().start();
  clusters.push(c);
  return c;
}

function io(): { io: CliIo; out: () => string; err: () => string; interrupt: () => void } {
  let out = '';
  let err = '';
  const listeners = new Set<(s: string) => void>();
  return {
    io: {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      env: {},
      onInterrupt: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
    },
    out: () => out,
    err: () => err,
    interrupt: () => [...listeners].forEach((l) => l('SIGINT')),
  };
}

function runOptions(masterUrl: string, extra: Partial<RunOptions> = {}): RunOptions {
  return { masterUrl, name: 'job', instances: 1, cpus: 0.1, mem: 32, gpus: 0, ports: 0, role: '*', env: [], command: ['echo hi'], ...extra };
}

const FAST = { pollIntervalMs: 5, logGiveUpMs: 500, killWaitMs: 2000, waitingNoticeMs: 60_000, user: 'tester', randomSuffix: () => 'r' };

describe('cairn run against a fake master', () => {
  it('runs one task, copies its output as is, acknowledges, and exits 0', async () => {
    const c = await cluster();
    c.script = () => ({ stdout: 'hello, wörld\nno newline', stderr: 'warn\n', end: { state: 'TASK_FINISHED', exitCode: 0 } });
    const t = io();
    const code = await runRun(runOptions(c.url, { env: [['K', 'v']] }), t.io, FAST);
    expect(code).toBe(0);
    expect(t.out()).toBe('hello, wörld\nno newline');
    // The task's stderr as is; besides it, only the line naming the task launched.
    expect(t.err().replace('cairn run: launched job-0-r on h1\n', '')).toBe('warn\n');
    const launched = c.callsOf('ACCEPT')[0].accept.operations[0].launch.task_infos[0];
    expect(launched.task_id.value).toBe('job-0-r');
    expect(launched.command).toMatchObject({ shell: true, value: 'echo hi' });
    expect(launched.command.environment.variables).toContainEqual({ name: 'K', value: 'v' });
    expect(c.callsOf('ACKNOWLEDGE')).toHaveLength(2);
    expect(c.callsOf('SUPPRESS')).toHaveLength(1);
    expect(c.callsOf('TEARDOWN')).toHaveLength(1);
  });

  it('prefixes lines with the index when K > 1 and exits with the first failure’s code', async () => {
    const c = await cluster();
    c.script = (task) =>
      task.index === 1
        ? { stdout: 'one\n', stderr: 'bad things\n', end: { state: 'TASK_FAILED', exitCode: 3, message: 'exited with code 3' } }
        : { stdout: `task ${task.index}\nsecond line\n`, end: { state: 'TASK_FINISHED', exitCode: 0 } };
    const t = io();
    const code = await runRun(runOptions(c.url, { instances: 3, command: ['python', 'x.py'] }), t.io, FAST);
    expect(code).toBe(3);
    const lines = t.out().split('\n').filter(Boolean).sort();
    expect(lines).toEqual(['[0] second line', '[0] task 0', '[1] one', '[2] second line', '[2] task 2']);
    expect(t.err()).toContain('[1] bad things\n');
    expect(t.err()).toContain('[1] cairn run: task job-1-r failed (exit code 3): exited with code 3');
    const infos = c.callsOf('ACCEPT').flatMap((a) => a.accept.operations[0].launch.task_infos);
    expect(infos.map((i: any) => i.task_id.value).sort()).toEqual(['job-0-r', 'job-1-r', 'job-2-r']);
    expect(infos[0].command).toMatchObject({ shell: false, value: 'python', arguments: ['python', 'x.py'] });
  });

  it('declines offers that are too small, with a filter, and launches from one that fits', async () => {
    const c = await cluster();
    c.offerResources = Resources.parse('cpus:0.05;mem:1024').toMesos();
    const t = io();
    const running = runRun(runOptions(c.url, { ports: 2 }), t.io, { ...FAST, declineRefuseSeconds: 2 });
    await until(() => c.callsOf('DECLINE').length === 1);
    expect(c.callsOf('DECLINE')[0].decline).toEqual({ offer_ids: [{ value: 'o1' }], filters: { refuse_seconds: 2 } });
    c.offer(Resources.parse('cpus:1;mem:1024;ports:[40000-40010]').toMesos());
    expect(await running).toBe(0);
    const info = c.callsOf('ACCEPT')[0].accept.operations[0].launch.task_infos[0];
    expect(info.command.environment.variables).toContainEqual({ name: 'PORT1', value: '40001' });
  });

  it('reports TASK_LOST with a message and a non-zero exit', async () => {
    const c = await cluster();
    c.script = () => ({ end: { state: 'TASK_LOST', message: 'agent a1 is unreachable' } });
    const t = io();
    expect(await runRun(runOptions(c.url), t.io, FAST)).toBe(1);
    expect(t.err()).toContain('task job-0-r was lost: agent a1 is unreachable');
  });

  it('on Ctrl-C kills its tasks, tears down and exits 130', async () => {
    const c = await cluster();
    c.script = () => ({ stdout: 'working\n' }); // runs until killed
    const t = io();
    const running = runRun(runOptions(c.url, { instances: 2 }), t.io, FAST);
    await until(() => t.out().split('\n').filter(Boolean).length === 2);
    t.interrupt();
    expect(await running).toBe(130);
    expect(c.callsOf('KILL').map((k) => k.kill.task_id.value).sort()).toEqual(['job-0-r', 'job-1-r']);
    expect(c.callsOf('TEARDOWN')).toHaveLength(1);
    expect(t.err()).toContain('interrupted: killing 2 task(s)');
  });

  it('exits 1 with a message when the master cannot be reached', async () => {
    const c = await cluster();
    const url = c.url;
    await c.stop();
    clusters.length = 0;
    const t = io();
    expect(await runRun(runOptions(url), t.io, FAST)).toBe(1);
    expect(t.err()).toContain(`cannot subscribe to the master at ${url}`);
  });
});

describe('cairn logs and kill against a fake master', () => {
  it('logs prints what there is, across pages', async () => {
    const c = await cluster();
    c.script = () => ({ stdout: 'a fairly long line of output\n', end: { state: 'TASK_FINISHED', exitCode: 0 } });
    expect(await runRun(runOptions(c.url), io().io, FAST)).toBe(0);
    const t2 = io();
    expect(await runLogs({ masterUrl: c.url, taskId: 'job-0-r', stream: 'stdout', follow: false }, t2.io)).toBe(0);
    expect(t2.out()).toBe('a fairly long line of output\n');
  });

  it('logs and kill print the master’s message for an unknown task and exit 1', async () => {
    const c = await cluster();
    const t = io();
    expect(await runLogs({ masterUrl: c.url, taskId: 'nope', stream: 'stdout', follow: true }, t.io)).toBe(1);
    expect(t.err()).toContain('no such task');
    const t2 = io();
    expect(await runKill({ masterUrl: c.url, taskId: 'nope' }, t2.io)).toBe(1);
    expect(t2.err()).toContain('no such task');
  });
});

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
