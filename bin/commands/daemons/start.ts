// `cairn up`, `cairn master`, `cairn agent`: the daemons in the foreground. Each runs until
// SIGINT/SIGTERM, then stops what it started in reverse order (the agent, with its tasks
// killed, before the master) and exits 0. A second signal while stopping exits at once.

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { componentLogger, daemonLogger } from '../../../shared/logger.ts';
import { CAIRN_VERSION } from '../../../shared/version.ts';
import { renderBanner, wantsBanner, type BannerInfo } from './banner.ts';
import { logSettings, type LogSettings } from './log-flags.ts';
import { bootstrapCredentials, MasterAuth, startMaster, type BootstrapCredentials } from '../../../master/entry.ts';
import { startAgent } from '../../../agent/entry.ts';
import { MasterClient } from '../../../shared/sdk/master-client.ts';
import { loadTls, schemeOf, TlsClient, type TlsMaterial } from '../../../shared/tls.ts';
import { saveToken, type SavedTokens } from '../../../shared/sdk/credentials.ts';
import { clusterIdOf, readClusterId } from './cluster-id.ts';
import { takenPortMessage, type PortFlag } from './port-taken.ts';
import { aclsAndOpen, agentCredentialFromFlags, bootstrapFor, masterAuthFromFlags, newSecret } from './auth-flags.ts';
import type { DaemonGossipOptions } from '../../../shared/gossip/cluster.ts';
import { gossipConfigForPeriod } from '../../../shared/gossip/config.ts';
import { nextInterrupt, type CliIo } from '../common/io.ts';
import { DEFAULT_AGENT_GOSSIP_PORT, DEFAULT_MASTER_GOSSIP_PORT, type AgentOptions, type DnsFlags, type GossipFlags, type LogFlags, type MasterOptions, type UpOptions } from './options.ts';

/** How long `cairn up` waits for its agent to register before printing the URL anyway. */
const REGISTRATION_WAIT_MS = 15_000;
/** How long `cairn up` waits for its master to answer before it gives up saving the CLI token. */
const ANSWER_WAIT_MS = 15_000;

/**
 * Logs go to stderr, so stdout carries only what a script may read (the master URL): text
 * or JSON lines as the flags, the environment and the terminal say (log-flags.ts).
 */
function daemonLogging(io: CliIo, name: string, flags: LogFlags | undefined): { log: Logger; logs: LogSettings } {
  const logs = logSettings(flags, io.env, io.stderr.isTTY === true);
  return { log: daemonLogger({ name, ...logs }), logs };
}

/** The banner, on stderr, for a person at a terminal (banner.ts). */
function printBanner(io: CliIo, info: Omit<BannerInfo, 'version'>): void {
  if (wantsBanner(io)) io.stderr.write(renderBanner({ ...info, version: CAIRN_VERSION }));
}

/** After the first signal, a second one means "stop waiting for a clean shutdown". */
function forceExitOnSecondInterrupt(io: CliIo, log: Logger): () => void {
  return io.onInterrupt((signal) => {
    log.warn({ signal }, 'second signal while stopping: exiting now');
    process.exit(130);
  });
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Agents wait for kill grace periods; masters for open requests. Past these, move on. */
const AGENT_STOP_LIMIT_MS = 30_000;
const MASTER_STOP_LIMIT_MS = 10_000;

/**
 * Runs one shutdown step, bounded: a step that fails or hangs is logged and the shutdown
 * goes on (the process exits after the last step either way).
 */
async function stopStep(log: Logger, what: string, limitMs: number, step: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    step().then(
      () => 'stopped' as const,
      (err: unknown) => {
        log.error({ err }, `the ${what} did not stop cleanly`);
        return 'failed' as const;
      },
    ),
    new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), limitMs);
    }),
  ]);
  clearTimeout(timer);
  if (outcome === 'late') log.error(`the ${what} did not stop within ${limitMs} ms; going on`);
}

/** The DNS flags; those left out (undefined) take the master's defaults. */
function dnsOptions(o: DnsFlags): DnsFlags {
  return { dnsPort: o.dnsPort, domain: o.domain, dnsResolvers: o.dnsResolvers };
}

export async function runUp(o: UpOptions, io: CliIo): Promise<number> {
  let log: Logger;
  let logs: LogSettings;
  try {
    ({ log, logs } = daemonLogging(io, 'cairn', o.log));
  } catch (err) {
    io.stderr.write(`cairn up: ${describe(err)}\n`);
    return 1;
  }
  const count = o.masters ?? 1;
  const agentDir = join(o.dataDir, 'agent');
  // Tasks pass through the data dir to their sandboxes (the agent opens the way, sandbox-reach.ts);
  // made here, it and the agent's dir are searchable and not listable, the masters' dirs private.
  await mkdir(agentDir, { recursive: true, mode: 0o711 });
  const interrupted = nextInterrupt(io);
  let tls: TlsMaterial | undefined;
  try {
    tls = loadTls(o.tls);
  } catch (err) {
    io.stderr.write(`cairn up: ${describe(err)}
`);
    return 1;
  }

  // One master keeps the single-master layout (dir/master); a group gets dir/master-N each,
  // on consecutive ports. A secret generated once is kept in dir/secret.
  const members = new Map(Array.from({ length: count }, (_, i) => [i + 1, `${schemeOf(tls)}://127.0.0.1:${o.port + i}`] as [number, string]));
  // The secret also authenticates gossip, which `up` always runs (on loopback, on free ports).
  const secret = await groupSecret(join(o.dataDir, 'secret'));
  // --gossip-port is the first master's, for agents of this host to --join; the rest take free ports.
  const gossip = (joinThrough: string[], port = 0): DaemonGossipOptions => ({ port, host: '127.0.0.1', secret, join: joinThrough, ...(o.gossipEncrypt ? { encrypt: true } : {}) });
  const masters: Awaited<ReturnType<typeof startMaster>>[] = [];
  let bootstrap: BootstrapCredentials;
  let auth: MasterAuth;
  let cluster: string;
  try {
    // One credentials file for every master of the group. The user's token is saved for the
    // CLI only once the master answers (below): a master that never listens takes no one's place.
    bootstrap = o.credentials !== undefined ? bootstrapCredentials(o.credentials, newSecret) : bootstrapFor(o.dataDir);
    auth = MasterAuth.on({ credentials: bootstrap.credentials, ...aclsAndOpen(o) });
    cluster = clusterIdOf(o.dataDir);
  } catch (err) {
    io.stderr.write(`cairn up: cannot set up credentials: ${describe(err)}\n`);
    return 1;
  }
  const portFlags: PortFlag[] = [
    ...[...members.keys()].map((id) => ({ port: o.port + id - 1, flag: count > 1 ? `--port (the first of the ${count} consecutive ports --masters ${count} listens on)` : '--port' })),
    ...(o.dnsPort ? [{ port: o.dnsPort, flag: '--dns-port' }] : []),
    ...(o.gossipPort ? [{ port: o.gossipPort, flag: '--gossip-port' }] : []),
    ...(o.agentPort ? [{ port: o.agentPort, flag: '--agent-port' }] : []),
  ];
  const startFailure = (what: string, err: unknown) => `cairn up: ${what} did not start: ${takenPortMessage(err, portFlags) ?? describe(err)}\n`;
  try {
    for (const [id] of members) {
      const dataDir = join(o.dataDir, count > 1 ? `master-${id}` : 'master');
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      masters.push(await startMaster({
        port: o.port + id - 1,
        host: '127.0.0.1',
        dataDir,
        auth,
        ...(tls ? { tls } : {}),
        logger: componentLogger(log, count > 1 ? `master-${id}` : 'master'),
        // One DNS server is enough on one host; the others would only contend for its port.
        ...(id === 1 ? dnsOptions(o) : { dnsPort: null }),
        ...(count > 1 ? { raft: { id, members, secret } } : {}),
        gossip: masters.length > 0 ? gossip([masters[0].gossip!.member.address]) : gossip([], o.gossipPort),
      }));
    }
  } catch (err) {
    io.stderr.write(startFailure('a master', err));
    for (const m of masters) await m.stop();
    return 1;
  }
  const master = masters[0];
  let agent;
  try {
    agent = await startAgent({
      masterUrl: masters.map((m) => m.url).join(','),
      workDir: agentDir,
      ...(tls ? { tls } : {}),
      credential: bootstrap.agent,
      httpPort: o.agentPort,
      logger: log,
      gossip: gossip([master.gossip!.member.address]),
      ...(o.resources !== undefined ? { resources: o.resources } : {}),
      ...(o.hostPathAllow ? { hostPathAllow: o.hostPathAllow } : {}),
      // The task resolver forwards what the zone does not hold where the master does.
      ...(o.dnsResolvers !== undefined ? { dnsResolvers: o.dnsResolvers } : {}),
    });
  } catch (err) {
    io.stderr.write(startFailure('the agent', err));
    for (const m of masters) await m.stop();
    return 1;
  }

  const client = new MasterClient(master.url, { timeoutMs: 2000, token: bootstrap.admin.secret, tls: new TlsClient(tls) });
  const answered = await Promise.race([pollState(client, () => true, ANSWER_WAIT_MS), interrupted.then(() => false)]);
  // Saved for the URLs the masters listen on: with --port 0 the port is the one the OS gave.
  const tokens = answered ? saveCliToken(io, log, masters.map((m) => m.url), bootstrap, { cluster, dataDir: o.dataDir }) : undefined;
  if (!answered) log.warn({ master: master.url }, `the master did not answer within ${ANSWER_WAIT_MS} ms: the admin token is not saved for the CLI`);
  const id = agent.agentId;
  const registered = answered && await Promise.race([
    pollState(client, (state) => state.agents.some((a) => a.reachable && (id() === undefined || a.id === id())), REGISTRATION_WAIT_MS),
    interrupted.then(() => false),
  ]);
  if (registered === false) log.warn('the agent has not registered with the master yet');
  io.stdout.write(`${master.url}\n`);
  printBanner(io, {
    daemon: 'up',
    masters: masters.map((m) => m.url),
    agent: { url: agent.httpUrl, ...(agent.agentId() !== undefined ? { id: agent.agentId() } : {}) },
    ...(master.dns ? { dns: master.dns } : {}),
    ...(o.gossipPort ? { gossip: `${master.gossip!.member.address}  (agents of this host: --join ${master.gossip!.member.address} --secret-file ${join(o.dataDir, 'secret')})` } : {}),
    dataDir: o.dataDir,
    credentials: bootstrap.path,
    ...(tokens && tokens.saved.length > 0 ? { cliToken: tokens.path } : {}),
    ...(tokens && tokens.kept.length > 0 ? { cliTokenKept: `not saved for ${tokens.kept.map((k) => k.url).join(', ')}: ${tokens.path} holds another cluster's there (see the warning)` } : {}),
    logs,
  });

  const signal = await interrupted;
  log.info({ signal }, 'stopping');
  const disposeForce = forceExitOnSecondInterrupt(io, log);
  await stopStep(log, 'agent', AGENT_STOP_LIMIT_MS, () => agent.stop({ killTasks: true }));
  for (const m of masters) await stopStep(log, 'master', MASTER_STOP_LIMIT_MS, () => m.stop());
  disposeForce();
  return 0;
}

/** The group's secret: read from `path`, or made (32 random bytes, hex) and written there once. */
async function groupSecret(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    const secret = randomBytes(32).toString('hex');
    await writeFile(path, secret + '\n', { mode: 0o600 });
    return secret;
  }
}

/** Polls the master's state (with the admin token) until `until` holds; false after `waitMs`. */
async function pollState(client: MasterClient, until: (state: Awaited<ReturnType<MasterClient['state']>>) => boolean, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    try {
      if (until(await client.state())) return true;
    } catch {
      // The master is starting; ask again.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/**
 * Saves the admin token for the CLI, beside this cluster's id, for every master URL whose
 * entry no other cluster holds (credentials.ts mayReplace); for the others, says where the
 * kept token is and how to use this cluster's instead.
 */
function saveCliToken(io: CliIo, log: Logger, urls: readonly string[], bootstrap: BootstrapCredentials, own: { cluster: string; dataDir: string }): SavedTokens | undefined {
  let tokens: SavedTokens;
  try {
    tokens = saveToken(urls, { principal: bootstrap.admin.principal, token: bootstrap.admin.secret, ...own }, io.env, readClusterId);
  } catch (err) {
    log.warn({ err: describe(err) }, 'the admin token is not saved for the CLI');
    return undefined;
  }
  if (tokens.saved.length > 0) log.info({ credentials: bootstrap.path, token: tokens.path, urls: tokens.saved }, 'credentials: the admin token is saved for the CLI');
  if (tokens.kept.length > 0) {
    const urlsKept = tokens.kept.map((k) => k.url).join(', ');
    const heldBy = tokens.kept[0]!.held.dataDir ? `the cluster of data dir ${tokens.kept[0]!.held.dataDir}` : 'another cluster';
    const jq = `jq -r '.credentials[] | select(.principal == "${bootstrap.admin.principal}") | .secret' ${bootstrap.path}`;
    log.warn(
      { file: tokens.path, urls: tokens.kept.map((k) => k.url), heldBy: tokens.kept[0]!.held.dataDir },
      `the CLI credentials file ${tokens.path} holds the token of ${heldBy} for ${urlsKept}, kept as it is: this cluster's token is not saved there. ` +
        `Give it to the CLI with --token or CAIRN_TOKEN (it is principal '${bootstrap.admin.principal}''s secret in ${bootstrap.path}; e.g. export CAIRN_TOKEN=$(${jq})), ` +
        `or remove the entry for ${urlsKept} from ${tokens.path} and start cairn up again`,
    );
  }
  return tokens;
}

/** The gossip flags as options, with the secret read from its file. */
async function gossipOptions(g: GossipFlags, defaultPort: number): Promise<DaemonGossipOptions> {
  return {
    port: g.port ?? defaultPort,
    // A second master or agent on a host where the default port is taken still starts.
    anyPortIfTaken: g.port === undefined,
    secret: await readSecret(g.secretFile),
    join: g.join,
    ...(g.advertise !== undefined ? { advertise: g.advertise } : {}),
    ...(g.probeIntervalMs !== undefined ? { config: gossipConfigForPeriod(g.probeIntervalMs) } : {}),
    ...(g.encrypt ? { encrypt: true } : {}),
  };
}

/** The cluster secret from --secret-file; a lone master without one gets a throwaway. */
async function readSecret(path: string | undefined): Promise<string> {
  if (!path) return randomBytes(32).toString('hex');
  const secret = (await readFile(path, 'utf8')).trim();
  if (Buffer.byteLength(secret) < 16) throw new Error(`--secret-file ${path}: the secret must be at least 16 bytes`);
  return secret;
}

export async function runMaster(o: MasterOptions, io: CliIo): Promise<number> {
  let log: Logger;
  let logs: LogSettings;
  try {
    ({ log, logs } = daemonLogging(io, 'cairn-master', o.log));
  } catch (err) {
    io.stderr.write(`cairn master: ${describe(err)}\n`);
    return 1;
  }
  // Nothing a master writes is anyone else's to read (master/data-dir-modes.ts): files it
  // makes are 0600 and dirs 0700 from the start. A master process runs no tasks to inherit it.
  process.umask(0o077);
  await mkdir(o.dataDir, { recursive: true, mode: 0o700 });
  const interrupted = nextInterrupt(io);
  let master;
  try {
    master = await startMaster({
      auth: masterAuthFromFlags(o, o.dataDir, log),
      ...(o.tls ? { tls: loadTls(o.tls) } : {}),
      port: o.port,
      host: o.host,
      dataDir: o.dataDir,
      logger: log,
      ...(o.pingIntervalMs !== undefined ? { pingIntervalMs: o.pingIntervalMs } : {}),
      ...(o.maxMissedPings !== undefined ? { maxMissedPings: o.maxMissedPings } : {}),
      ...(o.offerTimeoutMs !== undefined ? { offerTimeoutMs: o.offerTimeoutMs } : {}),
      ...(o.priorityClasses !== undefined ? { priorityClasses: o.priorityClasses } : {}),
      ...(o.preemptionGraceMs !== undefined ? { preemptionGraceMs: o.preemptionGraceMs } : {}),
      ...(o.objectLimits ? { objectLimits: o.objectLimits } : {}),
      ...dnsOptions(o),
      ...(o.raft ? { raft: { id: o.raft.id, members: o.raft.peers, secret: await readSecret(o.raft.secretFile), ...(o.raft.join ? { join: true } : {}) } } : {}),
      ...(o.acceptEmptyRegistry ? { acceptEmptyRegistry: true } : {}),
      ...(o.gossip ? { gossip: await gossipOptions(o.gossip, DEFAULT_MASTER_GOSSIP_PORT) } : {}),
    });
  } catch (err) {
    io.stderr.write(`cairn master: did not start: ${describe(err)}\n`);
    return 1;
  }
  io.stdout.write(`${master.url}\n`);
  printBanner(io, {
    daemon: 'master',
    masters: [master.url],
    ...(master.dns ? { dns: master.dns } : {}),
    ...(master.gossip ? { gossip: master.gossip.member.address } : {}),
    dataDir: o.dataDir,
    credentials: o.credentials ?? join(o.dataDir, 'credentials.json'),
    logs,
  });
  const signal = await interrupted;
  log.info({ signal }, 'stopping');
  const disposeForce = forceExitOnSecondInterrupt(io, log);
  await stopStep(log, 'master', MASTER_STOP_LIMIT_MS, () => master.stop());
  disposeForce();
  return 0;
}

export async function runAgent(o: AgentOptions, io: CliIo): Promise<number> {
  let log: Logger;
  let logs: LogSettings;
  try {
    ({ log, logs } = daemonLogging(io, 'cairn-agent', o.log));
  } catch (err) {
    io.stderr.write(`cairn agent: ${describe(err)}\n`);
    return 1;
  }
  await mkdir(o.workDir, { recursive: true });
  const interrupted = nextInterrupt(io);
  let agent;
  try {
    // The command's options are the agent's, but for the master ('' : from gossip) and gossip.
    const { masterUrl, gossip, credentialFile, tls, log: _logFlags, ...agentOptions } = o;
    agent = await startAgent({
      ...agentOptions,
      ...(tls ? { tls: loadTls(tls) } : {}),
      credential: agentCredentialFromFlags(credentialFile, io.env),
      ...(masterUrl !== '' ? { masterUrl } : {}),
      ...(gossip ? { gossip: await gossipOptions(gossip, DEFAULT_AGENT_GOSSIP_PORT) } : {}),
      logger: log,
    });
  } catch (err) {
    io.stderr.write(`cairn agent: did not start: ${describe(err)}\n`);
    return 1;
  }
  printBanner(io, {
    daemon: 'agent',
    agent: { url: agent.httpUrl, ...(agent.agentId() !== undefined ? { id: agent.agentId() } : {}) },
    follows: o.masterUrl,
    ...(o.gossip ? { gossip: o.gossip.join.length > 0 ? `joins through ${o.gossip.join.join(', ')}` : 'on' } : {}),
    workDir: o.workDir,
    ...(o.credentialFile ?? io.env.CAIRN_AGENT_CREDENTIAL ? { agentCredential: o.credentialFile ?? io.env.CAIRN_AGENT_CREDENTIAL } : {}),
    logs,
  });
  const signal = await interrupted;
  log.info({ signal }, 'stopping');
  const disposeForce = forceExitOnSecondInterrupt(io, log);
  // A stopped agent leaves its tasks running: a restarted agent recovers them, as in Mesos.
  await stopStep(log, 'agent', AGENT_STOP_LIMIT_MS, () => agent.stop({ killTasks: false }));
  disposeForce();
  return 0;
}
