// `GET /api/v1/events`: what the dashboard listens to instead of polling. Server-sent events:
//   event: hello   {"role": "leader"|"follower", "leader": URL|null, "masters": [URL...]}
//                  at connect, and again whenever one of them changes
//   event: change  {"topics": [...]}: the registry applied something touching these topics
//                  (at most one every THROTTLE_MS; the page then reads what it shows again)
//   : keep-alive   every KEEPALIVE_MS, so proxies and the client see a live connection
// Every master serves it from its own copy of the registry (followers too). One hub per
// master listens to the registry once and fans out to the connected streams; a stream that
// closes leaves the hub, so nothing is kept for a client that went away.

import type { FastifyInstance } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { MasterContext } from '../context.ts';
import type { RegistryCommand } from '../registry/commands.ts';
import { boundedWriter } from '../../shared/bounded-stream.ts';
import { monotonicMs } from '../../shared/steady-clock.ts';

export const THROTTLE_MS = 250;
export const KEEPALIVE_MS = 15_000;
/** How often the hub looks whether the leader or the masters changed (while anyone listens). */
const HELLO_CHECK_MS = 1000;

export const TOPICS = ['agents', 'tasks', 'frameworks', 'offers', 'masters', 'roles', 'builtin:marathon', 'builtin:jobs', 'builtin:tuning'] as const;

export interface Hello {
  role: 'leader' | 'follower';
  leader: string | null;
  masters: string[];
}

/** The topics an applied command touches. */
export function topicsOf(cmd: RegistryCommand): string[] {
  switch (cmd.type) {
    case 'agent_registered':
    case 'agent_unreachable':
    case 'agent_removed':
      return ['agents', 'tasks', 'offers'];
    case 'agent_drain':
      return ['agents', 'offers'];
    case 'framework_subscribed':
      return ['frameworks'];
    case 'framework_removed':
      return ['frameworks', 'tasks', 'offers'];
    // A launch takes an offer and uses an agent's resources; an update may free them.
    case 'task_launched':
    case 'status_update':
      return ['tasks', 'agents', 'offers'];
    case 'status_acknowledged':
      return [];
    case 'role_weight_set':
    case 'quota_set':
      return ['roles'];
    case 'preemption':
      return ['preemptions', 'roles'];
    case 'builtin_state':
      return [`builtin:${cmd.owner}`];
    default:
      return [];
  }
}

/** What this master says of the group: its role, the leader, every master. */
export function helloOf(ctx: MasterContext): Hello {
  const r = ctx.replication();
  if (!r) return { role: 'leader', leader: ctx.selfUrl(), masters: [ctx.selfUrl()] };
  return {
    role: r.role === 'leader' ? 'leader' : 'follower',
    leader: r.leader !== 0 ? r.leaderUrl ?? null : null,
    masters: r.members.map((m) => m.url).filter((u) => u !== ''),
  };
}

interface Client {
  res: ServerResponse;
  /** Writes to the stream; a client that stops reading is cut off past a bounded backlog. */
  write: (chunk: string) => boolean;
  ping: NodeJS.Timeout;
}

export class UiEventHub {
  private readonly clients = new Set<Client>();
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private lastFlushAt = -Infinity;
  private helloTimer: NodeJS.Timeout | undefined;
  private lastHello = '';

  constructor(
    private readonly ctx: MasterContext,
    private readonly opts: { throttleMs?: number; keepAliveMs?: number } = {},
  ) {
    ctx.registry.onApplied((cmd) => {
      for (const t of topicsOf(cmd)) this.pending.add(t);
      if (this.pending.size > 0) this.schedule();
    });
    // A snapshot replaced everything: every view is stale.
    ctx.registry.onRestored(() => {
      for (const t of TOPICS) this.pending.add(t);
      this.schedule();
    });
  }

  /** How many streams are open (tests check that a closed one left). */
  get size(): number {
    return this.clients.size;
  }

  /** Call when the role or the leader may have changed (raft's role listener). */
  roleChanged(): void {
    this.checkHello();
  }

  /** Takes over the response as an event stream until the client goes (or close()). */
  attach(res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      // nginx and the like would otherwise hold the events back.
      'x-accel-buffering': 'no',
    });
    const hello = helloOf(this.ctx);
    if (this.clients.size === 0) this.lastHello = JSON.stringify(hello);
    const write = boundedWriter(res, this.ctx.audit, () => ({ path: '/api/v1/events', ip: res.req?.socket.remoteAddress }));
    send(write, 'hello', hello);
    const client: Client = { res, write, ping: setInterval(() => write(': keep-alive\n\n'), this.opts.keepAliveMs ?? KEEPALIVE_MS) };
    this.clients.add(client);
    const leave = () => {
      clearInterval(client.ping);
      this.clients.delete(client);
      if (this.clients.size === 0 && this.helloTimer) {
        clearInterval(this.helloTimer);
        this.helloTimer = undefined;
      }
    };
    res.once('close', leave);
    res.once('error', leave);
    this.helloTimer ??= setInterval(() => this.checkHello(), HELLO_CHECK_MS);
    this.helloTimer.unref();
  }

  /** Ends every stream (the master is stopping); clients reconnect elsewhere. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    clearInterval(this.helloTimer);
    this.helloTimer = undefined;
    for (const c of [...this.clients]) {
      clearInterval(c.ping);
      c.res.end();
    }
    this.clients.clear();
  }

  private schedule(): void {
    if (this.timer) return;
    const throttle = this.opts.throttleMs ?? THROTTLE_MS;
    // Commands applied in one tick go out together; after a change, the next waits out the throttle.
    const wait = Math.max(0, this.lastFlushAt + throttle - monotonicMs());
    this.timer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const topics = [...this.pending].sort();
    this.pending = new Set();
    this.lastFlushAt = monotonicMs();
    for (const c of this.clients) send(c.write, 'change', { topics });
  }

  private checkHello(): void {
    if (this.clients.size === 0) return;
    const hello = helloOf(this.ctx);
    const text = JSON.stringify(hello);
    if (text === this.lastHello) return;
    this.lastHello = text;
    for (const c of this.clients) send(c.write, 'hello', hello);
    this.pending.add('masters');
    this.schedule();
  }
}

function send(write: Client['write'], event: string, data: unknown): void {
  write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export function registerEventsRoute(app: FastifyInstance, hub: UiEventHub): void {
  app.get('/api/v1/events', async (_req, reply) => {
    reply.hijack();
    hub.attach(reply.raw);
  });
  app.addHook('preClose', async () => hub.close());
}
