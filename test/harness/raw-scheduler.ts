// A deliberately plain Mesos v1 scheduler client for tests: raw HTTP, RecordIO parsed by
// hand, JSON exactly as a Mesos v1 framework writes it (nulls included). It shows that a
// client written for Mesos works against Cairn without Cairn's own SDK.

import http from 'node:http';
import { authHeaders } from './credentials.ts';

export interface RawEvent {
  type: string;
  [k: string]: any;
}

const callAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });

export class RawScheduler {
  events: RawEvent[] = [];
  streamId = '';
  frameworkId = '';
  status = 0;
  private req: http.ClientRequest | undefined;
  private res: http.IncomingMessage | undefined;
  private waiters: (() => void)[] = [];
  private readonly listeners: ((e: RawEvent) => void)[] = [];

  /** `auth`: the headers that authenticate it (default: the test principal's; {} for none). */
  constructor(readonly masterUrl: string, private readonly auth: Record<string, string> = authHeaders()) {}

  /** Sends SUBSCRIBE; resolves after SUBSCRIBED (or with the error status and body). */
  subscribe(frameworkInfo: Record<string, unknown>, frameworkId?: string): Promise<{ status: number; body?: string }> {
    const body = JSON.stringify({ type: 'SUBSCRIBE', framework_id: frameworkId ? { value: frameworkId } : null, subscribe: { framework_info: frameworkInfo } });
    const url = new URL('/api/v1/scheduler', this.masterUrl);
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...this.auth } }, (res) => {
        this.status = res.statusCode ?? 0;
        if (this.status !== 200) {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: this.status, body: text }));
          return;
        }
        this.streamId = String(res.headers['mesos-stream-id'] ?? '');
        this.res = res;
        let buf = Buffer.alloc(0);
        res.on('data', (chunk: Buffer) => {
          buf = Buffer.concat([buf, chunk]);
          for (;;) {
            const nl = buf.indexOf(10);
            if (nl < 0) break;
            const len = Number(buf.subarray(0, nl).toString());
            if (buf.length < nl + 1 + len) break;
            const ev = JSON.parse(buf.subarray(nl + 1, nl + 1 + len).toString()) as RawEvent;
            buf = buf.subarray(nl + 1 + len);
            if (ev.type === 'SUBSCRIBED') {
              this.frameworkId = ev.subscribed.framework_id.value;
              resolve({ status: 200 });
            }
            this.events.push(ev);
            for (const l of this.listeners) l(ev);
            for (const w of this.waiters.splice(0)) w();
          }
        });
        res.on('error', () => undefined);
      });
      req.on('error', reject);
      req.end(body);
      this.req = req;
    });
  }

  /**
   * Calls `fn` on every event: first on those already received (an OFFERS event can arrive
   * in the same read as SUBSCRIBED, before the caller had a chance to listen), then on each
   * as it arrives.
   */
  onEvent(fn: (e: RawEvent) => void): void {
    for (const e of this.events) fn(e);
    this.listeners.push(fn);
  }

  /** One call on its own POST, over a small keep-alive pool as a real client would use. */
  call(body: Record<string, unknown>): Promise<{ status: number; body: string }> {
    const payload = JSON.stringify({ framework_id: { value: this.frameworkId }, ...body });
    const url = new URL('/api/v1/scheduler', this.masterUrl);
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent: callAgent, headers: { 'content-type': 'application/json', 'mesos-stream-id': this.streamId, 'content-length': Buffer.byteLength(payload), ...this.auth } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Waits for an event matching pred that arrived after index `from`. */
  async next(pred: (e: RawEvent) => boolean, timeoutMs = 10_000, from = 0): Promise<RawEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(pred);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms; got ${this.events.map((e) => e.type).join(',')}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  offers(from = 0): any[] {
    return this.events.slice(from).filter((e) => e.type === 'OFFERS').flatMap((e) => e.offers.offers);
  }

  /** Reads nothing more of the event stream, socket included, as a hung framework would: what the master sends piles up. */
  stopReading(): void {
    this.res?.pause();
    this.res?.socket.pause();
  }

  close(): void {
    this.req?.destroy();
  }
}

export function taskInfo(id: string, agentId: string, resources: { cpus: number; mem: number; ports?: [number, number][] }, cmd: string, extra: Record<string, unknown> = {}) {
  const res: any[] = [
    { name: 'cpus', type: 'SCALAR', scalar: { value: resources.cpus }, role: '*' },
    { name: 'mem', type: 'SCALAR', scalar: { value: resources.mem }, role: '*' },
  ];
  if (resources.ports) res.push({ name: 'ports', type: 'RANGES', ranges: { range: resources.ports.map(([b, e]) => ({ begin: b, end: e })) } });
  return { name: id, task_id: { value: id }, agent_id: { value: agentId }, resources: res, command: { value: cmd, shell: true }, ...extra };
}

/** Acknowledges every update, as a well-behaved framework does. */
export function autoAck(s: RawScheduler): void {
  s.onEvent((e: RawEvent) => {
    if (e.type === 'UPDATE' && e.update.status.uuid) {
      const st = e.update.status;
      void s.call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid } }).catch(() => undefined);
    }
  });
}
