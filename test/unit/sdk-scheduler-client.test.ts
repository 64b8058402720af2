import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SchedulerClient, schedulerEndpoint } from '../../shared/sdk/scheduler-client.ts';
import { MasterHttpError } from '../../shared/sdk/http-error.ts';
import { encodeRecord } from '../../shared/recordio.ts';
import type { SchedulerEvent, TaskStatusJson } from '../../shared/mesos-v1.ts';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A scheduler endpoint that streams what the test tells it to and records every call. */
class FakeMaster {
  readonly server: http.Server;
  url = '';
  subscribes: Received[] = [];
  calls: Received[] = [];
  streams: http.ServerResponse[] = [];
  connections = 0;
  frameworkId = 'fw-1';
  heartbeatIntervalSeconds = 15;
  /** Return true to answer a SUBSCRIBE yourself. */
  onSubscribe: ((req: Received, res: http.ServerResponse) => boolean) | undefined;
  /** Return true to answer a call yourself. */
  onCall: ((req: Received, res: http.ServerResponse) => boolean) | undefined;

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString()));
    });
    this.server.on('connection', () => this.connections++);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.streams.forEach((s) => s.destroy());
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  send(event: SchedulerEvent | object, stream = this.streams[this.streams.length - 1]): void {
    stream.write(encodeRecord(event));
  }

  callsOfType(type: string): Received[] {
    return this.calls.filter((c) => c.body.type === type);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    if (req.method !== 'POST' || req.url !== '/api/v1/scheduler') {
      res.writeHead(404).end();
      return;
    }
    const received: Received = { headers: req.headers, body: JSON.parse(text) };
    if (received.body.type === 'SUBSCRIBE') {
      this.subscribes.push(received);
      if (this.onSubscribe?.(received, res)) return;
      const streamId = `stream-${this.subscribes.length}`;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mesos-Stream-Id': streamId });
      this.streams.push(res);
      this.send({
        type: 'SUBSCRIBED',
        subscribed: { framework_id: { value: received.body.framework_id?.value ?? this.frameworkId }, heartbeat_interval_seconds: this.heartbeatIntervalSeconds },
      });
      return;
    }
    this.calls.push(received);
    if (this.onCall?.(received, res)) return;
    res.writeHead(202).end();
  }
}

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const masters: FakeMaster[] = [];
const clients: SchedulerClient[] = [];

async function fakeMaster(): Promise<FakeMaster> {
  const m = await new FakeMaster().start();
  masters.push(m);
  return m;
}

function client(masterUrl: string, extra: Partial<ConstructorParameters<typeof SchedulerClient>[0]> = {}): SchedulerClient {
  const c = new SchedulerClient({ masterUrl, frameworkInfo: { name: 'test', user: 'me' }, maxBackoffMs: 50, ...extra });
  clients.push(c);
  return c;
}

afterEach(async () => {
  clients.splice(0).forEach((c) => c.close());
  await Promise.all(masters.splice(0).map((m) => m.stop()));
});

const OFFER = {
  id: { value: 'o1' },
  framework_id: { value: 'fw-1' },
  agent_id: { value: 'a1' },
  hostname: 'h1',
  url: { scheme: 'http', address: { hostname: 'h1', ip: '127.0.0.1', port: 5051 } },
  resources: [{ name: 'cpus', type: 'SCALAR' as const, scalar: { value: 2 }, role: '*' }],
  attributes: [],
};

function update(uuid?: string): SchedulerEvent {
  const status: TaskStatusJson = { task_id: { value: 't1' }, agent_id: { value: 'a1' }, state: 'TASK_RUNNING', ...(uuid ? { uuid } : {}) };
  return { type: 'UPDATE', update: { status } };
}

describe('schedulerEndpoint', () => {
  it('appends the API path to a master URL and keeps one that names it', () => {
    expect(schedulerEndpoint('http://m:5050').href).toBe('http://m:5050/api/v1/scheduler');
    expect(schedulerEndpoint('http://m:5050/').href).toBe('http://m:5050/api/v1/scheduler');
    expect(schedulerEndpoint('http://m/prefix').href).toBe('http://m/prefix/api/v1/scheduler');
    expect(schedulerEndpoint('http://m:5050/api/v1/scheduler').href).toBe('http://m:5050/api/v1/scheduler');
    expect(() => schedulerEndpoint('ftp://m')).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_REQUEST', field: 'masterUrl' }));
  });
});

describe('SchedulerClient', () => {
  it('subscribes with the framework info and sends calls with the stream id', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    const offers: unknown[] = [];
    c.on('offers', (o) => offers.push(...o));

    await expect(c.subscribe()).resolves.toBe('fw-1');
    expect(m.subscribes[0].body).toEqual({ type: 'SUBSCRIBE', subscribe: { framework_info: { name: 'test', user: 'me' } } });
    expect(m.subscribes[0].headers['content-type']).toBe('application/json');
    expect(m.subscribes[0].headers.accept).toBe('application/json');
    expect(c.streamId).toBe('stream-1');
    expect(c.connected).toBe(true);

    m.send({ type: 'OFFERS', offers: { offers: [OFFER] } });
    await until(() => offers.length === 1);
    expect(offers[0]).toEqual(OFFER);

    const task = { name: 't', task_id: { value: 't1' }, agent_id: { value: 'a1' }, resources: OFFER.resources, command: { value: 'true', shell: true } };
    await c.accept(['o1'], [task], { refuse_seconds: 5 });
    await c.decline(['o2'], 30);
    await c.decline(['o3']);
    await c.revive();
    await c.suppress();
    await c.kill('t1', 'a1');
    await c.reconcile([{ taskId: 't1' }]);

    const fw = { value: 'fw-1' };
    expect(m.calls.map((x) => x.body)).toEqual([
      { type: 'ACCEPT', framework_id: fw, accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }], filters: { refuse_seconds: 5 } } },
      { type: 'DECLINE', framework_id: fw, decline: { offer_ids: [{ value: 'o2' }], filters: { refuse_seconds: 30 } } },
      { type: 'DECLINE', framework_id: fw, decline: { offer_ids: [{ value: 'o3' }] } },
      { type: 'REVIVE', framework_id: fw },
      { type: 'SUPPRESS', framework_id: fw },
      { type: 'KILL', framework_id: fw, kill: { task_id: { value: 't1' }, agent_id: { value: 'a1' } } },
      { type: 'RECONCILE', framework_id: fw, reconcile: { tasks: [{ task_id: { value: 't1' } }] } },
    ]);
    for (const call of m.calls) {
      expect(call.headers['mesos-stream-id']).toBe('stream-1');
      expect(call.headers['content-type']).toBe('application/json');
      expect(call.headers.accept).toBe('application/json');
    }
  });

  it('reassembles events split across chunks', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    const rescinded: string[] = [];
    c.on('rescind', (id) => rescinded.push(id));
    await c.subscribe();
    const bytes = Buffer.concat([encodeRecord({ type: 'RESCIND', rescind: { offer_id: { value: 'ö1' } } }), encodeRecord({ type: 'HEARTBEAT' })]);
    const stream = m.streams[0];
    let heartbeats = 0;
    c.on('heartbeat', () => heartbeats++);
    stream.write(bytes.subarray(0, 3));
    await new Promise((r) => setTimeout(r, 20));
    stream.write(bytes.subarray(3, 40));
    await new Promise((r) => setTimeout(r, 20));
    stream.write(bytes.subarray(40));
    await until(() => heartbeats === 1);
    expect(rescinded).toEqual(['ö1']);
  });

  it('acknowledges updates that carry a uuid, after the handler ran', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    const seen: string[] = [];
    c.on('update', (s) => {
      seen.push(`${s.state}:${s.uuid ?? '-'}:${m.callsOfType('ACKNOWLEDGE').length}`);
    });
    await c.subscribe();
    m.send(update());
    m.send(update('dXVpZC0x'));
    await until(() => m.callsOfType('ACKNOWLEDGE').length === 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(m.callsOfType('ACKNOWLEDGE')).toHaveLength(1);
    expect(seen).toEqual(['TASK_RUNNING:-:0', 'TASK_RUNNING:dXVpZC0x:0']);
    const ack = m.callsOfType('ACKNOWLEDGE')[0];
    expect(ack.body).toEqual({
      type: 'ACKNOWLEDGE',
      framework_id: { value: 'fw-1' },
      acknowledge: { agent_id: { value: 'a1' }, task_id: { value: 't1' }, uuid: 'dXVpZC0x' },
    });
    expect(ack.headers['mesos-stream-id']).toBe('stream-1');
  });

  it('waits for an asynchronous update handler before acknowledging', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    c.on('update', () => gate);
    await c.subscribe();
    m.send(update('dXVpZC0y'));
    await new Promise((r) => setTimeout(r, 50));
    expect(m.callsOfType('ACKNOWLEDGE')).toHaveLength(0);
    release();
    await until(() => m.callsOfType('ACKNOWLEDGE').length === 1);
  });

  it('does not acknowledge when autoAcknowledge is off, but acknowledge() works', async () => {
    const m = await fakeMaster();
    const c = client(m.url, { autoAcknowledge: false });
    const statuses: TaskStatusJson[] = [];
    c.on('update', (s) => void statuses.push(s));
    await c.subscribe();
    m.send(update('dXVpZC0z'));
    await until(() => statuses.length === 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(m.callsOfType('ACKNOWLEDGE')).toHaveLength(0);
    await c.acknowledge(statuses[0]);
    expect(m.callsOfType('ACKNOWLEDGE')).toHaveLength(1);
  });

  it('surfaces a 4xx answer as a CairnError with the master code, message and field', async () => {
    const m = await fakeMaster();
    m.onCall = (_req, res) => {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ code: 'CAIRN_UNKNOWN_OFFER', message: 'offer o9 is not outstanding', field: 'accept.offer_ids' }));
      return true;
    };
    const c = client(m.url);
    await c.subscribe();
    const err = await c.accept(['o9'], []).catch((e) => e);
    expect(err).toBeInstanceOf(MasterHttpError);
    expect(err).toMatchObject({ code: 'CAIRN_UNKNOWN_OFFER', field: 'accept.offer_ids', status: 400 });
    expect(err.message).toContain('offer o9 is not outstanding');
  });

  it('turns an answer without a JSON body into a CairnError naming the status', async () => {
    const m = await fakeMaster();
    m.onCall = (_req, res) => {
      res.writeHead(503).end('no leader');
      return true;
    };
    const c = client(m.url);
    await c.subscribe();
    await expect(c.revive()).rejects.toMatchObject({ code: 'CAIRN_BAD_REQUEST', status: 503, message: expect.stringContaining('HTTP 503: no leader') });
  });

  it('rejects calls made before subscribing', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    await expect(c.revive()).rejects.toMatchObject({ code: 'CAIRN_STREAM_MISMATCH' });
    expect(m.calls).toHaveLength(0);
  });

  it('follows a 307 for SUBSCRIBE and sends later calls to the new master', async () => {
    const leader = await fakeMaster();
    const follower = await fakeMaster();
    follower.onSubscribe = (_req, res) => {
      res.writeHead(307, { Location: `${leader.url}/api/v1/scheduler` }).end();
      return true;
    };
    const c = client(follower.url);
    await expect(c.subscribe()).resolves.toBe('fw-1');
    expect(follower.subscribes).toHaveLength(1);
    expect(leader.subscribes).toHaveLength(1);
    expect(c.endpointUrl).toBe(`${leader.url}/api/v1/scheduler`);
    await c.revive();
    expect(leader.callsOfType('REVIVE')).toHaveLength(1);
    expect(follower.calls).toHaveLength(0);
  });

  it('follows a 307 for a call, with a protocol-relative Location', async () => {
    const leader = await fakeMaster();
    const first = await fakeMaster();
    const c = client(first.url);
    await c.subscribe();
    first.onCall = (_req, res) => {
      res.writeHead(307, { Location: `//${new URL(leader.url).host}/api/v1/scheduler` }).end();
      return true;
    };
    await c.suppress();
    expect(first.callsOfType('SUPPRESS')).toHaveLength(1);
    expect(leader.callsOfType('SUPPRESS')).toHaveLength(1);
    expect(leader.calls[0].headers['mesos-stream-id']).toBe('stream-1');
  });

  it('resubscribes with its framework id after the stream ends', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    const log: string[] = [];
    c.on('disconnected', () => log.push('disconnected'));
    c.on('subscribed', (id, info) => log.push(`subscribed ${id} ${info.streamId} ${info.resubscribed}`));
    await c.subscribe();
    m.streams[0].end();
    await until(() => log.length === 3);
    expect(log).toEqual(['subscribed fw-1 stream-1 false', 'disconnected', 'subscribed fw-1 stream-2 true']);
    expect(m.subscribes[1].body).toEqual({
      type: 'SUBSCRIBE',
      framework_id: { value: 'fw-1' },
      subscribe: { framework_info: { name: 'test', user: 'me', id: { value: 'fw-1' } } },
    });
    await c.revive();
    expect(m.callsOfType('REVIVE')[0].headers['mesos-stream-id']).toBe('stream-2');
  });

  it('keeps trying to resubscribe while the master refuses connections', async () => {
    const m = await fakeMaster();
    let refusals = 2;
    m.onSubscribe = (req, res) => {
      if (m.subscribes.length === 1 || refusals-- <= 0) return false;
      res.writeHead(503).end();
      return true;
    };
    const c = client(m.url);
    await c.subscribe();
    let resubscribed = false;
    c.on('subscribed', () => (resubscribed = true));
    m.streams[0].destroy();
    await until(() => resubscribed);
    expect(m.subscribes.length).toBe(4);
  });

  it('with several masters, resubscribes at the next one when its own is gone, and sends calls there', async () => {
    const m1 = await fakeMaster();
    const m2 = await fakeMaster();
    const m3 = await fakeMaster();
    // m2 has no leader yet and says so; m3 takes the framework.
    m2.onSubscribe = (_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'CAIRN_NOT_LEADER', message: 'no leader is elected yet' }));
      return true;
    };
    const c = client(`${m1.url}, ${m2.url},${m3.url}`);
    await c.subscribe();
    let resubscribed = false;
    c.on('subscribed', (_id, info) => (resubscribed = info.resubscribed));
    await m1.stop();
    await until(() => resubscribed);
    expect(m2.subscribes.length).toBeGreaterThanOrEqual(1);
    expect(m3.subscribes[0].body.framework_id).toEqual({ value: 'fw-1' });
    await c.revive();
    expect(m3.callsOfType('REVIVE')).toHaveLength(1);
    expect(c.endpointUrl).toBe(`${m3.url}/api/v1/scheduler`);
  });

  it('refuses an empty master list, naming the field', () => {
    expect(() => new SchedulerClient({ masterUrl: ' , ', frameworkInfo: { name: 't', user: 'u' } })).toThrowError(expect.objectContaining({ field: 'masterUrl' }));
  });

  it('gives up a quiet stream after five missed heartbeats', async () => {
    const m = await fakeMaster();
    m.heartbeatIntervalSeconds = 0.04;
    const c = client(m.url);
    const reasons: string[] = [];
    c.on('disconnected', (r) => reasons.push(r));
    await c.subscribe();
    await until(() => m.subscribes.length === 2);
    expect(reasons[0]).toMatch(/no heartbeat/);
  });

  it('stops after an ERROR event and reports it', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    const errors: string[] = [];
    c.on('error', (msg) => errors.push(msg));
    await c.subscribe();
    m.send({ type: 'ERROR', error: { message: 'framework removed' } });
    await until(() => errors.length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(errors).toEqual(['framework removed']);
    expect(m.subscribes).toHaveLength(1);
    expect(c.connected).toBe(false);
  });

  it('rejects the first subscribe when the master refuses it', async () => {
    const m = await fakeMaster();
    m.onSubscribe = (_req, res) => {
      res.writeHead(400, { 'Content-Type': 'application/json' }).end(JSON.stringify({ code: 'CAIRN_BAD_REQUEST', message: 'framework_info.user is required', field: 'subscribe.framework_info.user' }));
      return true;
    };
    const c = client(m.url);
    await expect(c.subscribe()).rejects.toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'subscribe.framework_info.user', status: 400 });
    expect(m.subscribes).toHaveLength(1);
  });

  it('rejects the first subscribe when no master listens', async () => {
    const m = await fakeMaster();
    const url = m.url;
    await m.stop();
    masters.length = 0;
    await expect(client(url).subscribe()).rejects.toThrow(/ECONNREFUSED/);
  });

  it('takes a first subscription to the next master when one is gone or has no leader; rejects naming each when none takes it', async () => {
    const gone = await fakeMaster();
    const goneUrl = gone.url;
    await gone.stop();
    masters.splice(masters.indexOf(gone), 1);
    const leaderless = await fakeMaster();
    leaderless.onSubscribe = (_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'CAIRN_NOT_LEADER', message: 'no leader is elected yet' }));
      return true;
    };
    const m = await fakeMaster();
    const c = client(`${goneUrl},${leaderless.url},${m.url}`);
    expect(await c.subscribe()).toBe('fw-1');
    expect(leaderless.subscribes).toHaveLength(1);
    expect(c.endpointUrl).toBe(`${m.url}/api/v1/scheduler`);

    // Each master is asked once, even when one redirects to a leader that cannot be reached.
    const redirecting = await fakeMaster();
    redirecting.onSubscribe = (_req, res) => {
      res.writeHead(307, { location: `${goneUrl}/api/v1/scheduler` }).end();
      return true;
    };
    const m2 = await fakeMaster();
    const viaRedirect = client(`${redirecting.url},${m2.url}`);
    expect(await viaRedirect.subscribe()).toBe('fw-1');
    expect(redirecting.subscribes).toHaveLength(1);
    const stuck = client(`${redirecting.url},${leaderless.url}`);
    await expect(stuck.subscribe()).rejects.toThrow(new RegExp(`\\(${redirecting.url} → ${goneUrl}: .*ECONNREFUSED.*; ${leaderless.url}: .*no leader`));

    const none = client(`${goneUrl},${leaderless.url}`);
    await expect(none.subscribe()).rejects.toThrow(/no master took the subscription \(http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED.*; http:\/\/127\.0\.0\.1:\d+: .*no leader is elected yet\)/);
    // A master that refuses the framework (4xx) is an answer: no other master is asked.
    const refusing = await fakeMaster();
    refusing.onSubscribe = (_req, res) => {
      res.writeHead(400, { 'Content-Type': 'application/json' }).end(JSON.stringify({ code: 'CAIRN_BAD_REQUEST', message: 'framework_info.user is required' }));
      return true;
    };
    const other = await fakeMaster();
    await expect(client(`${refusing.url},${other.url}`).subscribe()).rejects.toMatchObject({ status: 400 });
    expect(other.subscribes).toHaveLength(0);
  });

  it('close() ends the stream, stops resubscribing and rejects a pending subscribe', async () => {
    const m = await fakeMaster();
    m.onSubscribe = () => true; // never answers
    const c = client(m.url);
    const pending = c.subscribe();
    await until(() => m.subscribes.length === 1);
    c.close();
    await expect(pending).rejects.toThrow(/closed/);
    await expect(c.revive()).rejects.toMatchObject({ code: 'CAIRN_STREAM_MISMATCH' });

    const m2 = await fakeMaster();
    const c2 = client(m2.url);
    let disconnected = 0;
    c2.on('disconnected', () => disconnected++);
    await c2.subscribe();
    c2.close();
    await new Promise((r) => setTimeout(r, 100));
    expect(m2.subscribes).toHaveLength(1);
    expect(disconnected).toBe(0);
  });

  it('teardown() sends TEARDOWN and closes the client', async () => {
    const m = await fakeMaster();
    const c = client(m.url);
    await c.subscribe();
    await c.teardown();
    expect(m.callsOfType('TEARDOWN')[0].body).toEqual({ type: 'TEARDOWN', framework_id: { value: 'fw-1' } });
    expect(c.connected).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(m.subscribes).toHaveLength(1);
  });

  it('sends many calls over a few kept-alive connections', async () => {
    const m = await fakeMaster();
    const c = client(m.url, { maxSockets: 8 });
    await c.subscribe();
    const before = m.connections;
    await Promise.all(Array.from({ length: 2000 }, (_, i) => c.decline([`o${i}`], 1)));
    expect(m.callsOfType('DECLINE')).toHaveLength(2000);
    expect(m.connections - before).toBeLessThanOrEqual(8);
  });
});
