// A master process: its registry (local, or replicated by Raft with the other masters),
// the HTTP server (REST, scheduler API, DNS API), the agents' and peers' WebSocket
// endpoints, and the DNS server. The leader's services (allocator, offers, agent links,
// framework streams) run only while this master leads: they are built afresh each time it
// becomes leader — offers are soft state — and torn down when it stops leading, so that
// agents and frameworks go to the new leader.

import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CairnError } from '../shared/errors.ts';
import { withDirLock } from '../shared/dir-lock.ts';
import { componentLogger, createLogger } from '../shared/logger.ts';
import { daemonTlsClient, schemeOf, servesTls, tlsServerOptions, type TlsMaterial } from '../shared/tls.ts';
import { AGENT_PATH, AgentEndpoint } from './agents/agent-endpoint.ts';
import { BUILTIN_FRAMEWORKS } from './framework-host/all.ts';
import { FrameworkHost, type HostedFramework } from './framework-host/host.ts';
import { registerAuthHooks } from './auth/http-hooks.ts';
import type { MasterAuth } from './auth/master-auth.ts';
import { toHttpError } from '../shared/http-errors.ts';
import { MAX_BODY_BYTES, registerJsonBodyParser } from '../shared/json-body.ts';
import { registerRestApi } from './api/rest.ts';
import { registerMastersApi } from './api/masters-http.ts';
import { registerSchedulerApi } from './api/scheduler-http.ts';
import type { MasterContext } from './context.ts';
import { compileDnsConfig } from './dns/config.ts';
import { registerDnsApi } from './dns/http-api.ts';
import { taskDnsName } from './dns/names.ts';
import { DnsService } from './dns/service.ts';
import { DEFAULT_MASTER_CONFIG, Master, type MasterConfig } from './master.ts';
import { MasterMembership, type MasterGossipOptions } from './membership.ts';
import { LocalCommandLog } from './registry/local-log.ts';
import type { Registry } from './registry/registry.ts';
import { RAFT_PATH } from './replication/peer-transport.ts';
import { RaftCommandLog } from './replication/raft-log.ts';
import { registerUi, type UiHandle } from './ui/register.ts';
import { privateDataDir } from './data-dir-modes.ts';
import { taskOwner } from './framework-host/task-owner.ts';
import { QuotaGate } from './sharing/quota-gate.ts';
import { compileObjectLimits, type ObjectLimits } from '../shared/sharing/object-limits.ts';
import type { CompactionLimits } from './registry/compaction-policy.ts';

export interface MasterOptions extends Partial<Omit<MasterConfig, 'dataDir'>> {
  dataDir: string;
  /**
   * Who may call this master: `MasterAuth.on({credentials, acls})`, or `MasterAuth.off()`
   * for a master embedded in a program that guards it otherwise (never the daemons).
   */
  auth: MasterAuth;
  /** 5050 by default; 0 picks a free port. */
  port?: number;
  /**
   * TLS (shared/tls.ts loadTls): with a certificate the master serves HTTPS/WSS; its CA and
   * certificate are also what it verifies and presents when it dials agents and other masters.
   */
  tls?: TlsMaterial;
  host?: string;
  logger?: Logger;
  /**
   * DNS port, UDP and TCP (0: any free port). Left out: 53 as root, else 8053, and if that
   * port is taken the master runs without a DNS socket (with a warning). null: no DNS.
   */
  dnsPort?: number | null;
  /** DNS listen address; default: `host`. */
  dnsHost?: string;
  /** DNS zone; default `cairn`. */
  domain?: string;
  /** Upstream resolvers for names outside the zone (`ip[:port]`); default: /etc/resolv.conf's. */
  dnsResolvers?: string[];
  dnsForwardTimeoutMs?: number;
  /** This master's address as others reach it (leader.<domain>); default: `host` when it is one address, else 127.0.0.1. */
  advertiseIp?: string;
  /**
   * Replication: this master's id and every founding member's id and URL (this one
   * included). Left out: a single master with its registry in local SQLite.
   */
  raft?: { id: number; members: ReadonlyMap<number, string>; secret: string; clusterId?: string; tickMs?: number; electionTicks?: number; join?: boolean; catchUpTimeoutMs?: number };
  /**
   * A single master: start from an empty registry although registry.sqlite is empty (0
   * bytes) or unreadable (`--accept-empty-registry`); without it such a file refuses to start.
   */
  acceptEmptyRegistry?: boolean;
  /** When the registry's log (a single master's, or the Raft log) is folded into a snapshot; defaults in registry/compaction-policy.ts. */
  compaction?: Partial<CompactionLimits>;
  /** Gossip membership (see membership.ts); left out, this master runs no gossip member. */
  gossip?: MasterGossipOptions;
  /** The frameworks run while this master leads; default: the built-in ones, all of them (framework-host/all.ts). */
  frameworks?: readonly HostedFramework[];
  /** Per-principal object quotas and the task environment cap; each left out takes its default (sharing/object-limits.ts). */
  objectLimits?: Partial<ObjectLimits>;
}

export interface MasterHandle {
  url: string;
  port: number;
  /** The leader's services while this master leads (always, for a single master). */
  readonly master: Master;
  context: MasterContext;
  raft: RaftCommandLog | undefined;
  /** The DNS server's port; 0 when it is not serving. */
  dnsPort: number;
  /** Where DNS is served and its zone; undefined when it is not serving. */
  dns: { host: string; port: number; domain: string } | undefined;
  /** This master's gossip member, when it runs one. */
  gossip: MasterMembership | undefined;
  /** The web dashboard's server side (its event hub and login links). */
  ui: UiHandle;
  stop(): Promise<void>;
}

function positiveInt(value: number, field: string): number {
  if (!Number.isInteger(value) || value <= 0) throw new CairnError('CAIRN_BAD_FLAG', `must be a positive integer, got ${value}`, field);
  return value;
}

/** Validates options once, at the edge, and fills defaults. */
export function compileMasterConfig(opts: MasterOptions): MasterConfig {
  const c: MasterConfig = { ...DEFAULT_MASTER_CONFIG, ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)), dataDir: opts.dataDir } as MasterConfig;
  for (const k of ['pingIntervalMs', 'maxMissedPings', 'offerTimeoutMs', 'allocationIntervalMs', 'frameworkHeartbeatMs', 'updateRetryMs', 'frameworkReregisterGraceMs'] as const) positiveInt(c[k], k);
  if (!Number.isInteger(c.defaultRefuseMs) || c.defaultRefuseMs < 0) throw new CairnError('CAIRN_BAD_FLAG', 'must be a non-negative integer', 'defaultRefuseMs');
  return c;
}

/** Starts a master with its data dir locked (a second process on it is refused, naming the holder). */
export async function startMaster(opts: MasterOptions): Promise<MasterHandle> {
  return withDirLock(compileMasterConfig(opts).dataDir, 'master', 'dataDir', () => startLockedMaster(opts));
}

async function startLockedMaster(opts: MasterOptions): Promise<MasterHandle> {
  const config = compileMasterConfig(opts);
  const objectLimits = compileObjectLimits(opts.objectLimits);
  const scheme = schemeOf(opts.tls);
  const ownRaftUrl = opts.raft?.members.get(opts.raft.id);
  if (ownRaftUrl !== undefined && new URL(ownRaftUrl).protocol !== `${scheme}:`) {
    throw new CairnError('CAIRN_BAD_FLAG', `this master serves ${scheme.toUpperCase()}${scheme === 'https' ? ' (--tls-cert)' : ''}: its URL must start with ${scheme}://, got ${ownRaftUrl}`, 'peers');
  }
  const tlsClient = daemonTlsClient(opts.tls);
  const port = opts.port ?? 5050;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CairnError('CAIRN_BAD_FLAG', `must be a port number, got ${port}`, 'port');
  const { default: Fastify } = await import('fastify');
  const log = opts.logger ?? createLogger('cairn-master');
  const host = opts.host ?? '0.0.0.0';
  const advertiseIp = opts.advertiseIp ?? (host !== '0.0.0.0' && host !== '::' && isIP(host) !== 0 ? host : '127.0.0.1');
  const dnsConfig = opts.dnsPort === null
    ? undefined
    : compileDnsConfig({ port: opts.dnsPort, host: opts.dnsHost ?? host, domain: opts.domain, resolvers: opts.dnsResolvers, forwardTimeoutMs: opts.dnsForwardTimeoutMs, leaderIp: advertiseIp, leaderPort: port });

  // Private before anything is written in it (data-dir-modes.ts).
  privateDataDir(config.dataDir, log);
  const proposalPrefix = randomUUID().slice(0, 8);
  let registry: Registry;
  let raft: RaftCommandLog | undefined;
  if (opts.raft) {
    ({ registry, raft } = await RaftCommandLog.open({
      id: opts.raft.id,
      members: opts.raft.members,
      dataDir: join(config.dataDir, 'raft'),
      clusterId: opts.raft.clusterId ?? 'cairn',
      secret: opts.raft.secret,
      tickMs: opts.raft.tickMs,
      electionTicks: opts.raft.electionTicks,
      join: opts.raft.join,
      catchUpTimeoutMs: opts.raft.catchUpTimeoutMs,
      compaction: opts.compaction,
      log: componentLogger(log, 'raft'),
      dial: tlsClient.connectOptions(),
    }, proposalPrefix));
  } else {
    registry = LocalCommandLog.open(join(config.dataDir, 'registry'), proposalPrefix, { acceptEmpty: opts.acceptEmptyRegistry, compaction: opts.compaction, log: componentLogger(log, 'registry') });
  }
  // The files SQLite has just made, under the process umask.
  privateDataDir(config.dataDir, log, { quiet: true });

  let master: Master | undefined;
  let selfUrl = '';
  let membership: MasterMembership | undefined;
  // What gossip says of this master: where its API and DNS are, and the leader as it knows it.
  const apiUrl = (): string => {
    if (opts.raft) return opts.raft.members.get(opts.raft.id) ?? selfUrl;
    if (host !== '0.0.0.0' && host !== '::' || !membership) return selfUrl;
    return `${scheme}://${membership.member.address.replace(/:\d+$/, '')}:${new URL(selfUrl).port}`;
  };
  const gossipMeta = () => {
    const s = raft?.status();
    const api = apiUrl();
    const dnsHost = new URL(api).hostname;
    return {
      api,
      term: s?.term ?? 0,
      leaderId: s?.leader ?? 0,
      leaderUrl: s ? (s.leader !== 0 ? s.leaderUrl ?? '' : '') : api,
      dns: dns && dns.port > 0 ? `${dnsHost}:${dns.port}` : undefined,
      domain: dnsConfig?.domain,
    };
  };
  const announce = () => membership?.announce(gossipMeta());
  // Written whatever the log level: an audit trail that a quiet log level silences is none.
  const audit = componentLogger(log, 'audit', { level: log.level === 'silent' || log.isLevelEnabled('info') ? log.level : 'info' });
  const ctx: MasterContext = {
    registry,
    tlsClient,
    auth: opts.auth,
    audit,
    master: () => master,
    leaderUrl: () => {
      if (master) return undefined;
      const s = raft?.status();
      return s && s.leader !== 0 && s.leader !== s.id ? s.leaderUrl : undefined;
    },
    selfUrl: () => selfUrl,
    replication: () => raft?.status(),
    // `frameworkHost` is made just below, from this context; metrics are read only once it is.
    frameworkMetrics: (nowMs) => frameworkHost.metricsFamilies(nowMs),
    priorityClasses: config.priorityClasses,
    quotas: new QuotaGate(() => registry.state, objectLimits),
  };
  const dns = dnsConfig ? new DnsService(dnsConfig, registry, componentLogger(log, 'dns')) : undefined;
  const frameworkHost = new FrameworkHost(opts.frameworks ?? BUILTIN_FRAMEWORKS, ctx, { domain: dnsConfig?.domain, log });
  let listening = false;
  const lead = () => {
    if (!master) {
      master = new Master(config, log, registry, {
        gossip: { agentState: (id) => membership?.agentState(id) },
        taskDnsName: dnsConfig ? (task, framework) => taskDnsName(task, framework, dnsConfig.domain) : undefined,
        // Whose each task is, for the agent's uid per principal; no one's where no one is authenticated.
        taskPrincipal: (frameworkId, labels) => (opts.auth.enabled ? taskOwner(registry.state, { frameworkId, labels }) : ''),
      });
      if (membership) master.judgeAgents();
      log.info({ id: opts.raft?.id }, 'leading: allocator, offers and scheduler API are up');
    }
    // Built-in frameworks call this master's own API, so they start once it listens.
    if (listening) frameworkHost.lead();
  };
  const follow = (stopping = false) => {
    void frameworkHost.follow();
    if (master) {
      master.stop();
      master = undefined;
      // A master that stops hands nothing over by itself: no failover to announce.
      if (stopping) log.info({ id: opts.raft?.id }, 'no longer leading: this master is stopping');
      else log.info({ id: opts.raft?.id, leader: ctx.leaderUrl() }, 'no longer leading: agents and frameworks go to the new leader');
    }
  };
  // Set once the routes are registered (below); told of every role change for its event stream.
  let ui: UiHandle | undefined;
  if (raft) {
    raft.onRoleChange((role) => {
      ui?.events.roleChanged();
      if (role === 'leader') lead();
      else follow();
      const leaderUrl = role === 'leader' ? selfUrl : ctx.leaderUrl();
      if (dns && leaderUrl) {
        const u = new URL(leaderUrl);
        dns.zone.setLeader({ ip: isIP(u.hostname) ? u.hostname : advertiseIp, port: Number(u.port) || 5050 });
      }
      announce();
    });
  } else {
    lead();
  }

  const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES, keepAliveTimeout: 60_000, ...(servesTls(opts.tls) ? { https: tlsServerOptions(opts.tls) } : {}) });
  app.setErrorHandler((err, _req, reply) => {
    const { status, body } = toHttpError(err);
    if (status >= 500) log.error({ err }, 'request failed');
    void reply.code(status).send(body);
  });
  registerAuthHooks(app, opts.auth, audit, () => raft?.status().members.map((m) => m.url) ?? []);
  registerJsonBodyParser(app);
  registerRestApi(app, ctx);
  registerSchedulerApi(app, ctx);
  if (dns) registerDnsApi(app, dns);
  if (raft) app.get('/api/v1/replication', async () => raft!.status());
  registerMastersApi(app, ctx, raft);
  frameworkHost.registerRoutes(app);
  ui = registerUi(app, ctx);
  app.get('/api/v1/members', async (_req, reply) => membership?.view() ?? reply.code(404).send({ code: 'CAIRN_GOSSIP_OFF', message: 'this master runs no gossip member (it needs --secret-file)' }));
  const agents = new AgentEndpoint(ctx);
  app.server.on('upgrade', (req, socket, head) => {
    const path = req.url?.split('?')[0];
    if (path === AGENT_PATH) agents.handleUpgrade(req, socket, head);
    else if (path === RAFT_PATH && raft) raft.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  const closeAll = () => {
    follow(true);
    agents.close();
    registry.close();
  };
  try {
    await app.listen({ port, host });
  } catch (err) {
    closeAll();
    throw err;
  }
  const addr = app.server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : port;
  selfUrl = `${scheme}://${opts.host && opts.host !== '0.0.0.0' ? opts.host : '127.0.0.1'}:${boundPort}`;
  listening = true;
  if (master) frameworkHost.lead();
  if (dns) {
    if (!raft) dns.zone.setLeader({ ip: advertiseIp, port: boundPort });
    try {
      await dns.start();
    } catch (err) {
      if (opts.dnsPort !== undefined) {
        await dns.stop();
        closeAll();
        await app.close();
        throw new CairnError('CAIRN_BAD_FLAG', `cannot serve DNS on ${dnsConfig!.host}:${dnsConfig!.port}: ${(err as Error).message}`, 'dnsPort');
      }
      log.warn({ err: (err as Error).message, port: dnsConfig!.port }, 'the default DNS port is not free; running without a DNS server (give --dns-port)');
    }
  }
  if (opts.gossip) {
    try {
      // Unique and stable: the API's address, or the host's name where the API listens on all interfaces.
      const name = `master@${opts.raft || (host !== '0.0.0.0' && host !== '::') ? new URL(apiUrl()).host : `${hostname()}:${new URL(selfUrl).port}`}`;
      membership = await MasterMembership.start(opts.gossip, name, host, gossipMeta(), componentLogger(log, 'gossip'));
      membership.onAgentChange((agentId) => master?.judgeAgents([agentId]));
      announce();
    } catch (err) {
      await dns?.stop();
      closeAll();
      await app.close();
      throw err;
    }
  }
  log.info({ url: selfUrl, dataDir: config.dataDir, raftId: opts.raft?.id, gossip: membership?.member.address }, 'master started');
  let stopping: Promise<void> | undefined;
  return {
    url: selfUrl,
    port: boundPort,
    get master(): Master {
      if (!master) throw new CairnError('CAIRN_NOT_LEADER', 'this master is not leading');
      return master;
    },
    context: ctx,
    raft,
    dnsPort: dns?.port ?? 0,
    dns: dns && dnsConfig && dns.port > 0 ? { host: dnsConfig.host, port: dns.port, domain: dnsConfig.domain } : undefined,
    get gossip() {
      return membership;
    },
    ui: ui!,
    stop: () =>
      (stopping ??= (async () => {
        // Saying goodbye lets the others drop this master at once instead of suspecting it.
        await membership?.member.leave(1_000);
        await dns?.stop();
        closeAll();
        app.server.closeAllConnections?.();
        await app.close();
        await tlsClient.close();
      })()),
  };
}
