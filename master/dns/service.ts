// A master's DNS service: the zone kept current from the registry (no polling: the
// registry tells it of every durable command), the responder, the forwarder and the
// sockets, started and stopped together with the master.

import type { Logger } from 'pino';
import type { Registry } from '../registry/registry.ts';
import type { DnsConfig } from './config.ts';
import type { Upstream } from '../../shared/dns/upstream.ts';
import { Forwarder } from '../../shared/dns/forwarder.ts';
import { DnsResponder } from './responder.ts';
import { DnsMetrics, DnsServer } from './server.ts';
import { DnsZone } from './zone.ts';
import { RESERVED_NAME_KEYS } from './reserved-names.ts';

export class DnsService {
  readonly zone: DnsZone;
  readonly metrics = new DnsMetrics();
  /** Upstreams actually used (the configured ones less this server itself). */
  upstreams: Upstream[] = [];
  private responder: DnsResponder | undefined;
  private forwarder: Forwarder | undefined;
  private server: DnsServer | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    readonly config: DnsConfig,
    registry: Registry,
    private readonly log: Logger,
  ) {
    this.zone = new DnsZone({
      domain: config.domain,
      leader: { ip: config.leaderIp, port: config.leaderPort },
      nsIp: config.nsIp,
      // Serials keep increasing across restarts as long as the clock does.
      serialBase: Math.floor(Date.now() / 1000),
      reservedNames: RESERVED_NAME_KEYS,
    });
    this.zone.load(registry.state);
    this.unsubscribe = registry.onApplied((command, events) => {
      try {
        this.zone.applyCommand(command, events, registry.state);
      } catch (err) {
        log.error({ err, command: command.type }, 'dns zone update failed');
      }
    });
    // A follower that installs a snapshot from the leader gets a whole new state at once.
    registry.onRestored(() => this.zone.load(registry.state));
  }

  /** The bound port (after start). */
  get port(): number {
    return this.server?.port ?? 0;
  }

  async start(): Promise<void> {
    const { config } = this;
    // Forwarding to this very server would loop. (With port 0 the port is unknown until
    // bound, and no resolver list can name it.)
    this.upstreams = config.upstreams.filter((u) => !(u.port === config.port && isSelf(u.host, config.host)));
    this.forwarder = new Forwarder(this.upstreams, config.forwardTimeoutMs);
    this.responder = new DnsResponder(this.zone, { ttlS: config.ttlS, negativeTtlS: config.negativeTtlS, forwarding: this.forwarder.configured });
    this.server = new DnsServer({ host: config.host, port: config.port, responder: this.responder, forwarder: this.forwarder, metrics: this.metrics, log: this.log });
    await this.server.start();
    this.log.info({ port: this.server.port, host: config.host, domain: config.domain, upstreams: this.upstreams.map((u) => `${u.host}:${u.port}`) }, 'dns server started');
  }

  async stop(): Promise<void> {
    this.unsubscribe();
    this.forwarder?.close();
    this.responder?.close();
    await this.server?.stop();
  }
}

function isSelf(upstreamHost: string, listenHost: string): boolean {
  if (upstreamHost === listenHost) return true;
  const wildcard = listenHost === '0.0.0.0' || listenHost === '::';
  return wildcard && (upstreamHost.startsWith('127.') || upstreamHost === '::1');
}
