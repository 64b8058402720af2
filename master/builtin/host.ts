// Built-in frameworks (services, training jobs, tuning) run inside the leading master, as
// clients of its scheduler API like any other framework: they see offers, never the
// allocator. The host starts each one when this master starts leading and stops it when it
// stops; a framework keeps everything it must not lose in its replicated store, so the next
// leader's instance resumes where this one stopped. Their REST routes are registered on
// every master: reads answer from the replicated store, changes go to the leader.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { FrameworkInfo } from '../../shared/mesos-v1.ts';
import type { SchedulerClientOptions } from '../../shared/sdk/scheduler-client.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import { BUILTIN_PRINCIPAL } from '../auth/master-auth.ts';
import { componentLogger } from '../../shared/logger.ts';
import { BuiltinStore } from './store.ts';
import { steadyClock, type Clock } from '../../shared/steady-clock.ts';

/** What a built-in framework's instance gets from the leading master. */
export interface BuiltinEnv {
  /** The framework's name; its store's owner. */
  readonly name: string;
  readonly store: BuiltinStore;
  /** The master's registry, for reads (agents, tasks): the same copy the REST API answers from. */
  readonly ctx: MasterContext;
  /** Options for a SchedulerClient of this master, authenticated as the built-in principal. */
  schedulerOptions(frameworkInfo: FrameworkInfo): SchedulerClientOptions;
  /** The DNS zone tasks are named in (`cairn` by default), undefined when the master serves no DNS. */
  readonly domain: string | undefined;
  readonly log: Logger;
  /**
   * This leadership's clock (the leader core's, see master.ts): deadlines, back-offs and
   * time-outs run on it, immune to wall-clock steps; its readings are epoch milliseconds.
   */
  readonly now: Clock;
  /** Another built-in framework's running instance on this master (tuning runs its distributed trials as jobs). */
  sibling<I extends BuiltinInstance>(name: string): I | undefined;
}

export interface BuiltinInstance {
  /** Ends its subscription and timers; its tasks keep running for the next leader's instance. */
  stop(): void | Promise<void>;
}

/** What the REST routes of a built-in framework get, on every master. */
export interface BuiltinRoutesEnv<I extends BuiltinInstance> {
  readonly ctx: MasterContext;
  readonly store: BuiltinStore;
  /**
   * The running instance on the leader; on a follower, answers the request with a redirect to
   * the leader (307) or 503 while none is known, and returns undefined.
   */
  leading(req: FastifyRequest, reply: FastifyReply): I | undefined;
  /** The running instance if this master leads, without answering anything. */
  instance(): I | undefined;
}

export interface BuiltinFramework<I extends BuiltinInstance = BuiltinInstance> {
  readonly name: string;
  start(env: BuiltinEnv): I;
  routes(app: FastifyInstance, env: BuiltinRoutesEnv<I>): void;
}

/** The principal built-in frameworks subscribe as (no credentials file can name it). */
export { BUILTIN_PRINCIPAL };

export class BuiltinHost {
  private readonly running = new Map<string, BuiltinInstance>();
  private readonly stores = new Map<string, BuiltinStore>();

  constructor(
    private readonly frameworks: readonly BuiltinFramework[],
    private readonly ctx: MasterContext,
    private readonly opts: { domain: string | undefined; log: Logger },
  ) {
    for (const f of frameworks) this.stores.set(f.name, new BuiltinStore(ctx.registry, f.name));
  }

  registerRoutes(app: FastifyInstance): void {
    for (const f of this.frameworks) {
      const instance = () => this.running.get(f.name);
      f.routes(app, {
        ctx: this.ctx,
        store: this.stores.get(f.name)!,
        instance,
        leading: (req, reply) => {
          const i = instance();
          if (i) return i;
          if (leaderOrRedirect(this.ctx, req, reply) === undefined) return undefined;
          // Leading, but the instance is not up yet (between the core starting and listen).
          void reply.code(503).header('retry-after', '1').send({ code: 'CAIRN_NOT_LEADER', message: `the ${f.name} framework is starting on this leader; retry shortly` });
          return undefined;
        },
      });
    }
  }

  /** Starts every built-in framework; called once this master leads and serves its API. */
  lead(): void {
    for (const f of this.frameworks) {
      if (this.running.has(f.name)) continue;
      const log = componentLogger(this.opts.log, `builtin/${f.name}`);
      try {
        this.running.set(f.name, f.start({
          name: f.name,
          store: this.stores.get(f.name)!,
          ctx: this.ctx,
          domain: this.opts.domain,
          log,
          now: this.ctx.core()?.now ?? steadyClock(),
          sibling: <I extends BuiltinInstance>(name: string) => this.running.get(name) as I | undefined,
          schedulerOptions: (frameworkInfo) => ({
            masterUrl: this.ctx.selfUrl(),
            frameworkInfo: { ...frameworkInfo, principal: BUILTIN_PRINCIPAL },
            tls: this.ctx.tlsClient,
            token: this.ctx.auth.builtinToken,
            logger: log,
          }),
        }));
        log.info('started');
      } catch (err) {
        // One framework that cannot start must not take the master or the others down.
        log.error({ err }, 'could not start');
      }
    }
  }

  /** Stops every instance (this master stops leading, or stops). */
  async follow(): Promise<void> {
    const stopping = [...this.running.entries()];
    this.running.clear();
    await Promise.all(stopping.map(async ([name, i]) => {
      try {
        await i.stop();
      } catch (err) {
        this.opts.log.warn({ err, framework: name }, 'a built-in framework did not stop cleanly');
      }
    }));
  }
}
