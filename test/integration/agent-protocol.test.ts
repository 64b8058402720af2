// The agent against a fake master speaking the agent protocol over a real WebSocket:
// registration (and the stored id on restart), ping/pong and liveness, launches, kills,
// reliable status updates, bad frames, reconnects, the HTTP endpoint and stop().

import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  decodeAgentToMaster,
  encodeMasterToAgent,
  type AgentToMaster,
  type MasterToAgent,
  type Register,
  type StatusUpdate,
  type TaskInfo,
} from '../../shared/agent-protocol.ts';
import { startAgent, type AgentHandle, type AgentOptions } from '../../agent/agent.ts';
import { uuidKey } from '../../agent/status-updates.ts';
import { waitFor } from '../harness/processes.ts';
import { shellTask } from '../harness/tasks.ts';

/** A master that records what the agent says and answers only when told. */
class FakeMaster {
  readonly frames: { msg: AgentToMaster; ws: WebSocket }[] = [];
  autoAck = false;
  private wss!: WebSocketServer;
  private listeners: (() => void)[] = [];
  port = 0;

  static async start(port = 0): Promise<FakeMaster> {
    const m = new FakeMaster();
    await m.listen(port);
    return m;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listen(port: number): Promise<void> {
    this.wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/api/v1/agent' });
    await new Promise<void>((r) => this.wss.once('listening', () => r()));
    this.port = (this.wss.address() as AddressInfo).port;
    this.wss.on('connection', (ws) => {
      ws.on('message', (data) => {
        const msg = decodeAgentToMaster(data as Buffer);
        this.frames.push({ msg, ws });
        if (this.autoAck && 'statusUpdate' in msg) this.ack(msg.statusUpdate, ws);
        for (const l of [...this.listeners]) l();
      });
    });
  }

  /** Drops every connection and stops listening, like a master that died. */
  async kill(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }

  send(msg: MasterToAgent, ws = this.latestSocket()): void {
    ws.send(encodeMasterToAgent(msg));
  }

  sendRaw(bytes: Uint8Array | string, ws = this.latestSocket()): void {
    ws.send(bytes);
  }

  ack(update: StatusUpdate, ws = this.latestSocket()): void {
    this.send({ ack: { uuid: update.uuid, taskId: update.taskId } }, ws);
  }

  latestSocket(): WebSocket {
    const ws = this.frames.at(-1)?.ws ?? [...this.wss.clients].at(-1);
    if (!ws) throw new Error('no agent connected');
    return ws;
  }

  /** Waits for the n-th (1-based) frame from index `from` that matches. */
  async waitFor<T>(pick: (m: AgentToMaster) => T | undefined, opts: { from?: number; nth?: number; timeoutMs?: number } = {}): Promise<{ value: T; index: number }> {
    const { from = 0, nth = 1, timeoutMs = 5000 } = opts;
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        let seen = 0;
        for (let i = from; i < this.frames.length; i++) {
          const v = pick(this.frames[i].msg);
          if (v !== undefined && ++seen === nth) {
            cleanup();
            resolve({ value: v, index: i });
            return true;
          }
        }
        return false;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for a frame; got ${JSON.stringify(this.frames.slice(from).map((f) => Object.keys(f.msg)[0]))}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== listener);
      };
      const listener = () => void check();
      this.listeners.push(listener);
      check();
    });
  }

  register(from = 0): Promise<{ value: Register; index: number }> {
    return this.waitFor((m) => ('register' in m ? m.register : undefined), { from });
  }

  update(taskId: string, state: string, from = 0, nth = 1): Promise<{ value: StatusUpdate; index: number }> {
    return this.waitFor((m) => ('statusUpdate' in m && m.statusUpdate.taskId === taskId && m.statusUpdate.state === state ? m.statusUpdate : undefined), { from, nth });
  }

  updatesSince(from: number): StatusUpdate[] {
    return this.frames.slice(from).flatMap((f) => ('statusUpdate' in f.msg ? [f.msg.statusUpdate] : []));
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-agent-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function fakeMaster(): Promise<FakeMaster> {
  const m = await FakeMaster.start();
  cleanups.push(() => m.kill());
  return m;
}

/** A logger whose lines the test can read. */
function captureLogger(): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      out.push(chunk.toString());
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines: () => out.flatMap((s) => s.split('\n')).filter(Boolean).map((s) => JSON.parse(s)) };
}

async function agentFor(master: FakeMaster, dir: string, extra: Partial<AgentOptions> = {}): Promise<AgentHandle> {
  const agent = await startAgent({
    masterUrl: master.url,
    workDir: dir,
    resources: 'cpus:2;mem:1024;disk:2048;gpus:1;ports:[31000-31009]',
    attributes: 'rack:r1;zone:west',
    hostname: 'agent-host.test',
    httpPort: 0,
    logger: pino({ level: 'silent' }),
    reconnectMaxMs: 400,
    statusResendMs: 300,
    ...extra,
  });
  cleanups.push(() => agent.stop({ killTasks: true }));
  return agent;
}

const task = (id: string, script: string, extra: Partial<TaskInfo> = {}) =>
  shellTask(id, script, { resources: 'cpus:0.1;mem:16;ports:[31000-31001]', command: { shell: true, value: script, arguments: [], environment: [{ name: 'FROM_FRAMEWORK', value: 'yes' }] }, ...extra });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('agent protocol', () => {
  it('registers without an id, stores the one it is given, and re-registers with it after a restart', async () => {
    const master = await fakeMaster();
    const dir = workDir();
    const agent = await agentFor(master, dir);
    expect(agent.agentId()).toBeUndefined();
    expect(agent.resources.toString()).toBe('cpus:2;mem:1024;disk:2048;gpus:1;ports:[31000-31009]');

    const { value: reg } = await master.register();
    expect(reg).toMatchObject({
      agentId: '',
      hostname: 'agent-host.test',
      ip: '127.0.0.1',
      resources: 'cpus:2;mem:1024;disk:2048;gpus:1;ports:[31000-31009]',
      attributes: [{ name: 'rack', value: 'r1' }, { name: 'zone', value: 'west' }],
      tasks: [],
    });
    expect(reg.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(agent.httpUrl).toBe(`http://127.0.0.1:${reg.httpPort}`);

    master.send({ registered: { agentId: 'agent-0001', lostTaskIds: [], pingIntervalMs: 1000 } });
    for (let i = 0; i < 500 && agent.agentId() !== 'agent-0001'; i++) await sleep(10);
    expect(agent.agentId()).toBe('agent-0001');
    // The id is taken in memory at once and written to the work dir a moment later.
    const stored = () => {
      try {
        return readFileSync(join(dir, 'agent-id'), 'utf8').trim();
      } catch {
        return undefined;
      }
    };
    for (let i = 0; i < 500 && stored() !== 'agent-0001'; i++) await sleep(10);
    expect(stored()).toBe('agent-0001');
    const health = await (await fetch(`${agent.httpUrl}/health`)).json();
    expect(health).toMatchObject({ status: 'ok', agentId: 'agent-0001' });
    // Whether tasks are isolated is said, never assumed.
    expect(typeof health.isolation.cgroups).toBe('boolean');
    if (!health.isolation.cgroups) expect(health.isolation.reason).toEqual(expect.any(String));

    await agent.stop();
    const from = master.frames.length;
    const again = await agentFor(master, dir);
    expect(again.agentId()).toBe('agent-0001');
    const { value: reg2 } = await master.register(from);
    expect(reg2.agentId).toBe('agent-0001');
  });

  it('answers ping with pong carrying the same sentMs', async () => {
    const master = await fakeMaster();
    await agentFor(master, workDir());
    await master.register();
    master.send({ registered: { agentId: 'a1', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.send({ ping: { sentMs: 1712345678901.5 } });
    const { value } = await master.waitFor((m) => ('pong' in m ? m.pong : undefined));
    expect(value.sentMs).toBe(1712345678901.5);
  });

  it('launches a task, sends RUNNING then FINISHED, and re-sends them until acknowledged', async () => {
    const master = await fakeMaster();
    const dir = workDir();
    const agent = await agentFor(master, dir);
    await master.register();
    master.send({ registered: { agentId: 'a1', lostTaskIds: [], pingIntervalMs: 1000 } });
    // Registration done once pings are answered.
    master.send({ ping: { sentMs: 1 } });
    await master.waitFor((m) => ('pong' in m ? m : undefined));

    const from = master.frames.length;
    master.send({ launch: { tasks: [task('t1', 'echo "$PORT $PORTS $FROM_FRAMEWORK"; sleep 0.2')] } });
    const running = (await master.update('t1', 'TASK_RUNNING', from)).value;
    expect(running.uuid).toHaveLength(16);
    // A second launch of a running task is ignored.
    master.send({ launch: { tasks: [task('t1', 'exit 9')] } });
    const finished = (await master.update('t1', 'TASK_FINISHED', from)).value;
    expect(finished).toMatchObject({ frameworkId: 'fw-1', hasExitCode: true, exitCode: 0 });
    expect(uuidKey(finished.uuid)).not.toBe(uuidKey(running.uuid));
    expect(master.updatesSince(from).some((u) => u.state === 'TASK_FAILED')).toBe(false);

    // Not acknowledged: both come again, same uuids, in order.
    const resent = (await master.update('t1', 'TASK_FINISHED', from, 2)).value;
    expect(uuidKey(resent.uuid)).toBe(uuidKey(finished.uuid));
    const states = master.updatesSince(from).map((u) => u.state);
    expect(states.filter((s) => s === 'TASK_RUNNING').length).toBeGreaterThanOrEqual(2);
    expect(states.indexOf('TASK_RUNNING')).toBeLessThan(states.indexOf('TASK_FINISHED'));

    master.ack(running);
    master.ack(finished);
    await sleep(100);
    const quiet = master.frames.length;
    await sleep(700); // more than two resend periods
    expect(master.updatesSince(quiet)).toEqual([]);

    // The output went to the sandbox, readable over HTTP.
    const res = await fetch(`${agent.httpUrl}/api/v1/tasks/t1/logs?stream=stdout&offset=0`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: '31000 31000,31001 yes\n', offset: 0, nextOffset: 22, eof: true });
    const part = await (await fetch(`${agent.httpUrl}/api/v1/tasks/t1/logs?offset=6&length=5`)).json();
    expect(part).toEqual({ data: '31000', offset: 6, nextOffset: 11, eof: false });
    const bad = await fetch(`${agent.httpUrl}/api/v1/tasks/t1/logs?stream=stdlog`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'stream' });
    const badOffset = await fetch(`${agent.httpUrl}/api/v1/tasks/t1/logs?offset=-3`);
    expect(badOffset.status).toBe(400);
    expect(await badOffset.json()).toMatchObject({ field: 'offset' });
    expect((await fetch(`${agent.httpUrl}/api/v1/tasks/nope/logs`)).status).toBe(404);
  });

  it('kills a task (KILLED) and answers a kill of an unknown task with TASK_LOST', async () => {
    const master = await fakeMaster();
    await agentFor(master, workDir());
    await master.register();
    master.autoAck = true;
    master.send({ registered: { agentId: 'a1', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.send({ launch: { tasks: [task('long', 'sleep 30')] } });
    await master.update('long', 'TASK_RUNNING');
    master.send({ kill: { taskId: 'long', frameworkId: 'fw-1', graceMs: 500 } });
    const killed = (await master.update('long', 'TASK_KILLED')).value;
    expect(killed).toMatchObject({ hasExitCode: true, exitCode: -15 });

    master.send({ kill: { taskId: 'ghost', frameworkId: 'fw-9', graceMs: 0 } });
    const lost = (await master.update('ghost', 'TASK_LOST')).value;
    expect(lost).toMatchObject({ frameworkId: 'fw-9', message: 'unknown task' });
  });

  it('logs and ignores a garbage frame, and keeps working', async () => {
    const master = await fakeMaster();
    const { logger, lines } = captureLogger();
    await agentFor(master, workDir(), { logger });
    await master.register();
    master.send({ registered: { agentId: 'a1', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.sendRaw(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]));
    master.sendRaw(new Uint8Array([]));
    master.sendRaw('not even binary');
    master.send({ ping: { sentMs: 42 } });
    const { value } = await master.waitFor((m) => ('pong' in m ? m.pong : undefined));
    expect(value.sentMs).toBe(42);
    const warnings = lines().filter((l) => l.level === 40).map((l) => String(l.msg));
    expect(warnings).toContain('undecodable frame from master ignored');
    expect(warnings).toContain('text frame from master ignored (frames are binary protobuf)');
  });

  it('reconnects after the master restarts, registers again and re-sends pending updates in order', async () => {
    const master = await FakeMaster.start();
    const dir = workDir();
    await agentFor(master, dir);
    await master.register();
    master.send({ registered: { agentId: 'a-77', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.send({ launch: { tasks: [task('r1', 'sleep 0.1')] } });
    await master.update('r1', 'TASK_FINISHED');
    const port = master.port;
    await master.kill();

    // The master comes back on the same address.
    const reborn = await FakeMaster.start(port);
    cleanups.push(() => reborn.kill());
    const { value: reg, index } = await reborn.register();
    expect(reg.agentId).toBe('a-77');
    // r1 ended but its end is not acknowledged: it is listed with its last active state,
    // so the master keeps it until the pending TASK_FINISHED arrives.
    expect(reg.tasks).toEqual([{ taskId: 'r1', frameworkId: 'fw-1', state: 'TASK_RUNNING', resources: expect.any(String) }]);
    reborn.send({ registered: { agentId: 'a-77', lostTaskIds: [], pingIntervalMs: 1000 } });
    await reborn.update('r1', 'TASK_FINISHED', index);
    const states = reborn.updatesSince(index).map((u) => u.state);
    expect(states.slice(0, 2)).toEqual(['TASK_RUNNING', 'TASK_FINISHED']);
  });

  it('lists running tasks when it registers again', async () => {
    const master = await FakeMaster.start();
    await agentFor(master, workDir());
    await master.register();
    master.send({ registered: { agentId: 'a-5', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.send({ launch: { tasks: [task('keeps', 'sleep 30')] } });
    await master.update('keeps', 'TASK_RUNNING');
    const port = master.port;
    await master.kill();
    const reborn = await FakeMaster.start(port);
    cleanups.push(() => reborn.kill());
    const { value: reg } = await reborn.register();
    expect(reg.tasks).toEqual([{ taskId: 'keeps', frameworkId: 'fw-1', state: 'TASK_RUNNING', resources: 'cpus:0.1;mem:16;ports:[31000-31001]' }]);
  });

  it('drops a silent master after missed pings and connects again', async () => {
    const master = await fakeMaster();
    await agentFor(master, workDir());
    await master.register();
    master.send({ registered: { agentId: 'a1', lostTaskIds: [], pingIntervalMs: 60 } });
    const t0 = Date.now();
    const { value } = await master.register(1);
    expect(value.agentId).toBe('a1');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250); // 5 × 60 ms of silence
  });

  it('stop({ killTasks }) kills running tasks and delivers their terminal updates first', async () => {
    const master = await fakeMaster();
    const agent = await agentFor(master, workDir());
    await master.register();
    master.autoAck = true;
    master.send({ registered: { agentId: 'a1', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.send({ launch: { tasks: [task('s1', "trap 'exit 0' TERM; while true; do sleep 0.05; done")] } });
    await master.update('s1', 'TASK_RUNNING');
    await agent.stop({ killTasks: true });
    expect(master.updatesSince(0).filter((u) => u.taskId === 's1').map((u) => u.state)).toEqual(['TASK_RUNNING', 'TASK_KILLED']);
  });

  it('drains when the master says so: drops new launches, lets tasks finish, kills the rest at the deadline, keeps draining across a restart until the master ends it', async () => {
    const master = await fakeMaster();
    const dir = workDir();
    const agent = await agentFor(master, dir);
    const first = await master.register();
    master.autoAck = true;
    master.send({ registered: { agentId: 'a-d', lostTaskIds: [], pingIntervalMs: 1000 } });
    master.send({ launch: { tasks: [task('short', 'sleep 0.3'), task('long', 'sleep 30', { resources: 'cpus:0.1;mem:16' })] } });
    await master.update('long', 'TASK_RUNNING');

    const health = async (url: string) => ((await (await fetch(`${url}/health`)).json()) as { draining: unknown }).draining;
    const t0 = Date.now();
    master.send({ drain: { draining: true, hasDeadline: true, deadlineAtMs: t0 + 1000 } });
    await waitFor('draining', async () => ((await health(agent.httpUrl)) ? true : undefined));
    expect(await health(agent.httpUrl)).toMatchObject({ deadlineAtMs: t0 + 1000, drained: false });

    master.send({ launch: { tasks: [task('late', 'true')] } });
    const { value: dropped } = await master.update('late', 'TASK_DROPPED');
    expect(dropped).toMatchObject({ reason: 'REASON_AGENT_DRAINING', message: expect.stringMatching(/draining/) });
    await master.update('short', 'TASK_FINISHED');
    const { value: killed } = await master.update('long', 'TASK_KILLED');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(killed.message).toMatch(/drained and its deadline passed/);
    expect(await health(agent.httpUrl)).toMatchObject({ runningTasks: 0, drained: true });

    // A restarted agent goes on draining (its checkpoint) until the master registers it
    // without a drain: the registry's word wins.
    await agent.stop();
    const again = await agentFor(master, dir);
    expect(await health(again.httpUrl)).toMatchObject({ drained: true });
    await master.register(first.index + 1);
    master.send({ registered: { agentId: 'a-d', lostTaskIds: [], pingIntervalMs: 1000, drain: { draining: true, hasDeadline: false, deadlineAtMs: 0 } } });
    await waitFor('deadline dropped', async () => {
      const h = (await health(again.httpUrl)) as { deadlineAtMs: number | null } | false;
      return h !== false && h.deadlineAtMs === null;
    });
    master.send({ drain: { draining: false, hasDeadline: false, deadlineAtMs: 0 } });
    await waitFor('drain ended', async () => (await health(again.httpUrl)) === false);
    master.send({ launch: { tasks: [task('after', 'true')] } });
    await master.update('after', 'TASK_FINISHED');
  });

  it('rejects bad --resources and --attributes before connecting', async () => {
    const base = { masterUrl: 'http://127.0.0.1:1', workDir: workDir(), logger: pino({ level: 'silent' }), httpPort: 0 };
    await expect(startAgent({ ...base, resources: 'cpus:many' })).rejects.toMatchObject({ code: 'CAIRN_BAD_RESOURCES', field: 'resources.cpus' });
    await expect(startAgent({ ...base, attributes: 'rack' })).rejects.toMatchObject({ code: 'CAIRN_BAD_FLAG', field: 'attributes' });
    await expect(startAgent({ ...base, masterUrl: 'nonsense' })).rejects.toMatchObject({ field: 'masterUrl' });
  });
});
