// A simulated agent speaking the real wire protocol but running nothing: it registers,
// answers pings, and reports each launched task RUNNING at once (and, if asked, FINISHED).
// Used by protocol tests and by the launch benchmark (many agents in one process).

import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import {
  decodeMasterToAgent,
  encodeAgentToMaster,
  type AgentToMaster,
  type MasterToAgent,
  type TaskInfo,
  type TaskState,
} from '../../shared/agent-protocol.ts';

export interface FakeAgentOptions {
  masterUrl: string;
  hostname?: string;
  resources?: string;
  agentId?: string;
  /** Report tasks FINISHED right after RUNNING. */
  finishTasks?: boolean;
  /** Do not answer pings (to make the master declare the agent unreachable). */
  silent?: boolean;
  /** TLS options of the connection (a wss:// master): the CA, a client certificate (shared/tls.ts connectOptions). */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  /** Headers of the WebSocket upgrade: the agent's credential, when the master asks for one. */
  headers?: Record<string, string>;
  /** The port its HTTP API is said to be on (a test's stand-in for the agent's usage); default 1. */
  httpPort?: number;
  /** Tasks to report as running in the registration. */
  running?: { taskId: string; frameworkId: string; state: TaskState; resources: string }[];
}

export class FakeAgent {
  agentId = '';
  readonly launched: TaskInfo[] = [];
  readonly killed: string[] = [];
  readonly received: MasterToAgent[] = [];
  readonly acked = new Set<string>();
  private ws: WebSocket | undefined;

  constructor(readonly opts: FakeAgentOptions) {}

  connect(): Promise<string> {
    const url = this.opts.masterUrl.replace(/^http/, 'ws') + '/api/v1/agent';
    const ws = new WebSocket(url, { ...this.opts.tls, ...(this.opts.headers ? { headers: this.opts.headers } : {}) });
    this.ws = ws;
    return new Promise((resolve, reject) => {
      ws.on('open', () =>
        this.send({
          register: {
            agentId: this.opts.agentId ?? this.agentId,
            hostname: this.opts.hostname ?? 'fake',
            ip: '127.0.0.1',
            httpPort: this.opts.httpPort ?? 1,
            resources: this.opts.resources ?? 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]',
            attributes: [],
            tasks: this.opts.running ?? [],
            version: 'fake',
          },
        }),
      );
      ws.on('error', reject);
      // Refused after the upgrade (an error frame, then the close): the promise says so.
      ws.on('close', (code: number, reason: Buffer) => reject(new Error(`closed by the master: ${code} ${reason.toString()}`)));
      ws.on('message', (data: Buffer) => {
        const msg = decodeMasterToAgent(data);
        this.received.push(msg);
        if ('registered' in msg) {
          this.agentId = msg.registered.agentId;
          resolve(this.agentId);
        } else if ('ping' in msg) {
          if (!this.opts.silent) this.send({ pong: { sentMs: msg.ping.sentMs } });
        } else if ('launch' in msg) {
          for (const t of msg.launch.tasks) {
            this.launched.push(t);
            this.update(t.taskId, t.frameworkId, 'TASK_RUNNING');
            if (this.opts.finishTasks) this.update(t.taskId, t.frameworkId, 'TASK_FINISHED');
          }
        } else if ('kill' in msg) {
          this.killed.push(msg.kill.taskId);
          this.update(msg.kill.taskId, msg.kill.frameworkId, 'TASK_KILLED');
        } else if ('ack' in msg) {
          this.acked.add(Buffer.from(msg.ack.uuid).toString('hex'));
        }
      });
    });
  }

  send(msg: AgentToMaster): void {
    this.ws?.send(encodeAgentToMaster(msg));
  }

  sendRaw(bytes: Uint8Array | string): void {
    this.ws?.send(bytes);
  }

  update(taskId: string, frameworkId: string, state: TaskState, exitCode?: number): string {
    const uuid = randomBytes(16);
    this.send({
      statusUpdate: {
        uuid, taskId, frameworkId, state, message: '', reason: '',
        hasExitCode: exitCode !== undefined, exitCode: exitCode ?? 0, timestampMs: Date.now(),
      },
    });
    return uuid.toString('hex');
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  close(): Promise<void> {
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((r) => {
      ws.once('close', () => r());
      ws.terminate();
    });
  }
}
