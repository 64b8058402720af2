// `/v2/info` in Marathon 1.9's `MarathonInfo` shape (types/info.raml; the values as
// api/v2/InfoResource.scala writes them). Cairn has no ZooKeeper: `zookeeper_config.zk`
// names the masters that hold the replicated state in ZooKeeper's connection-string form,
// and its timeouts are Marathon's defaults, which no Cairn setting changes. Pure.

// The failover timeout reported is the one the built-in frameworks subscribe with (in seconds, as Marathon's flag is).
import { FAILOVER_TIMEOUT_S } from '../../../shared/framework-runtime/failover.ts';

/** `http://host:port` → `host:port`, the form Marathon gives its leader in. */
export function hostPort(url: string): string {
  return new URL(url).host;
}

export interface InfoFacts {
  leading: boolean;
  selfUrl: string;
  /** The leader's base URL; undefined while none is known. */
  leaderUrl: string | undefined;
  frameworkId: string | undefined;
  /** Every master's base URL. */
  masterUrls: string[];
}

/** Marathon's defaults for what Cairn has no setting of its own. */
const ZK_TIMEOUT_MS = 10_000;
const ZK_MAX_VERSIONS = 50;

export function marathonInfo(f: InfoFacts): Record<string, unknown> {
  const self = new URL(f.selfUrl);
  const port = Number(self.port || (self.protocol === 'https:' ? 443 : 80));
  return {
    name: 'marathon',
    version: '1.9.0',
    buildref: 'cairn',
    elected: f.leading,
    ...(f.leaderUrl ? { leader: hostPort(f.leaderUrl) } : {}),
    ...(f.frameworkId ? { frameworkId: f.frameworkId } : {}),
    marathon_config: {
      checkpoint: true,
      failover_timeout: FAILOVER_TIMEOUT_S,
      features: [],
      framework_name: 'marathon',
      ha: f.masterUrls.length > 1,
      hostname: self.hostname,
      master: f.masterUrls.map(hostPort).join(','),
      mesos_role: '*',
      task_lost_expunge_initial_delay: 300_000,
      task_lost_expunge_interval: 30_000,
      webui_url: f.selfUrl,
    },
    zookeeper_config: {
      zk: `zk://${f.masterUrls.map(hostPort).join(',')}/marathon`,
      zk_connection_timeout: ZK_TIMEOUT_MS,
      zk_max_versions: ZK_MAX_VERSIONS,
      zk_session_timeout: ZK_TIMEOUT_MS,
      zk_timeout: ZK_TIMEOUT_MS,
    },
    http_config: {
      http_port: self.protocol === 'http:' ? port : 0,
      https_port: self.protocol === 'https:' ? port : 0,
    },
  };
}
