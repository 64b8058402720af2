// Built-in frameworks (services, training jobs, tuning) run inside the leading master, as
// clients of its scheduler API like any other framework: they see offers, never the
// allocator. What each is given is the contract in shared/framework-host/contract.ts, built
// here from the master's context: a read-only view of the cluster, its own store, the access
// rules its routes apply, and the APIs the other frameworks export. The host starts each one when this master starts leading and stops it when it
// stops; a framework keeps everything it must not lose in its replicated store, so the next
// leader's instance resumes where this one stopped. Their REST routes are registered on
// every master: reads answer from the replicated store, changes go to the leader.

import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { FrameworkEnv, HostedFramework, FrameworkInstance, FrameworkRoutesEnv, ClusterView, FrameworkApis, FrameworkMetrics, Leadership } from '../../shared/framework-host/contract.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import { BUILTIN_PRINCIPAL } from '../builtin-principal.ts';
import { componentLogger } from '../../shared/logger.ts';
import { RegistryFrameworkStore } from './store.ts';
import { clusterHolders } from './cluster-holders.ts';
import { steadyClock } from '../../shared/steady-clock.ts';
import { OwnerAccess } from './owner-access.ts';
import { secretAccess } from '../secrets/secret-access.ts';
import { agentAuthHeaders, agentBaseUrl } from '../auth/agent-http.ts';

export type { FrameworkEnv, HostedFramework, FrameworkInstance, FrameworkRoutesEnv };

/** The principal built-in frameworks subscribe as (no credentials file can name it). */
export { BUILTIN_PRINCIPAL };

export class FrameworkHost {
  private readonly running = new Map<string, FrameworkInstance>();
  private readonly stores = new Map<string, RegistryFrameworkStore>();

  constructor(
    private readonly frameworks: readonly HostedFramework[],
    private readonly ctx: MasterContext,
    private readonly opts: { domain: string | undefined; log: Logger },
  ) {
    for (const f of frameworks) this.stores.set(f.name, new RegistryFrameworkStore(ctx.registry, f.name));
    // Built now, not at the first scrape: what they follow of their stores, they follow from the start.
    this.metrics = frameworks.flatMap((f) => (f.metrics ? [{ name: f.name, m: f.metrics({ store: this.stores.get(f.name)!, instance: () => this.running.get(f.name) }) }] : []));
    this.cluster = {
      tasks: () => ctx.registry.state.tasks,
      agents: () => ctx.registry.state.agents,
      holders: (agentId) => clusterHolders(ctx.registry.state, frameworks, ctx.priorityClasses, agentId),
    };
    this.leadership = {
      leads: () => ctx.master() !== undefined,
      selfUrl: () => ctx.selfUrl(),
      leaderUrl: () => ctx.leaderUrl(),
      masterUrls: () => ctx.replication()?.members.map((m) => m.url) ?? [ctx.selfUrl()],
      fetch: (input, init) => (ctx.tlsClient?.fetch ?? fetch)(input, init),
    };
  }

  private readonly cluster: ClusterView;
  private readonly leadership: Leadership;
  private readonly metrics: { name: string; m: FrameworkMetrics }[];

  /** Every framework's families for the master's /metrics (api/metrics-text.ts). */
  metricsFamilies(nowMs: number): string[] {
    return this.metrics.flatMap(({ name, m }) => {
      try {
        return m.families(nowMs);
      } catch (err) {
        // One framework's figures that cannot be read must not take the others' (or /metrics) down.
        this.opts.log.warn({ err, framework: name }, "a built-in framework's metrics could not be read");
        return [];
      }
    });
  }

  /** The API framework `name` exports (built once: it reads the running instance when called). */
  private api<K extends keyof FrameworkApis>(name: K): FrameworkApis[K] | undefined {
    if (!this.apis.has(name)) {
      const f = this.frameworks.find((x) => x.name === name);
      this.apis.set(name, f?.api?.({ store: this.stores.get(name)!, instance: () => this.running.get(name) }));
    }
    return this.apis.get(name) as FrameworkApis[K] | undefined;
  }

  private readonly apis = new Map<string, unknown>();

  private agentFetch(agentId: string, path: string, init?: { signal?: AbortSignal }): Promise<Response> | undefined {
    const agent = this.ctx.registry.state.agents.get(agentId);
    if (!agent) return undefined;
    return (this.ctx.tlsClient?.fetch ?? fetch)(`${agentBaseUrl(agent)}${path}`, { headers: agentAuthHeaders(this.ctx.auth, agent), ...(init?.signal ? { signal: init.signal } : {}) });
  }

  registerRoutes(app: FastifyInstance): void {
    const ctx = this.ctx;
    const access = new OwnerAccess(ctx.auth);
    const secrets = secretAccess(ctx);
    for (const f of this.frameworks) {
      const instance = () => this.running.get(f.name);
      const env: FrameworkRoutesEnv<FrameworkInstance> = {
        store: this.stores.get(f.name)!,
        cluster: this.cluster,
        leadership: this.leadership,
        priorityClasses: ctx.priorityClasses,
        quotas: ctx.quotas,
        access,
        secrets,
        audit: ctx.audit,
        instance,
        leading: (req, reply) => {
          const i = instance();
          if (i) return i;
          if (leaderOrRedirect(ctx, req, reply) === undefined) return undefined;
          // Leading, but the instance is not up yet (between the core starting and listen).
          void reply.code(503).header('retry-after', '1').send({ code: 'CAIRN_NOT_LEADER', message: `the ${f.name} framework is starting on this leader; retry shortly` });
          return undefined;
        },
      };
      f.routes(app, env);
    }
  }

  /** Starts every built-in framework; called once this master leads and serves its API. */
  lead(): void {
    for (const f of this.frameworks) {
      if (this.running.has(f.name)) continue;
      const log = componentLogger(this.opts.log, `builtin/${f.name}`);
      try {
        const env: FrameworkEnv = {
          name: f.name,
          store: this.stores.get(f.name)!,
          cluster: this.cluster,
          priorityClasses: this.ctx.priorityClasses,
          domain: this.opts.domain,
          log,
          now: this.ctx.master()?.now ?? steadyClock(),
          api: <K extends keyof FrameworkApis>(name: K) => this.api(name),
          agentFetch: (agentId, path, init) => this.agentFetch(agentId, path, init),
          schedulerOptions: (frameworkInfo) => ({
            masterUrl: this.ctx.selfUrl(),
            frameworkInfo: { ...frameworkInfo, principal: BUILTIN_PRINCIPAL },
            tls: this.ctx.tlsClient,
            token: this.ctx.auth.builtinToken,
            logger: log,
          }),
        };
        this.running.set(f.name, f.start(env));
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
