// The Marathon app as Cairn keeps it: every field filled with Marathon's default, so the
// core and the task builder never ask "was it given?". Pure types and defaults; the parser
// (app-parse.ts) is the only way an app JSON becomes an AppDefinition.

// Constraints are the placement pipeline's (shared/placement/constraints.ts): one definition.
export { CONSTRAINT_OPERATORS, type Constraint, type ConstraintOperator } from '../../../shared/placement/constraints.ts';
import type { Constraint } from '../../../shared/placement/constraints.ts';

export interface PortDefinition {
  port: number;
  protocol: string;
  name?: string;
  labels?: Record<string, string>;
}

export interface PortMapping {
  containerPort: number;
  /** 0: any port of the offer. */
  hostPort: number;
  servicePort: number;
  protocol: string;
  name?: string;
}

export interface VolumeDefinition {
  containerPath: string;
  hostPath: string;
  mode: 'RO' | 'RW';
}

export interface ContainerDefinition {
  type: 'DOCKER' | 'MESOS';
  docker?: {
    image: string;
    network: 'HOST' | 'BRIDGE';
    portMappings: PortMapping[];
    forcePullImage: boolean;
    privileged: boolean;
    parameters: { key: string; value: string }[];
    /**
     * Marathon's pullConfig: `secret` names the app's `secrets` entry whose `source` is a
     * credential stored in the cluster, or (with no such entry) that stored credential itself.
     */
    pullConfig?: { secret: string };
    /** The stored credential the image is pulled with, as pullConfig resolves. */
    pullSecret?: string;
  };
  volumes: VolumeDefinition[];
}

export const HEALTH_PROTOCOLS = ['HTTP', 'HTTPS', 'TCP', 'COMMAND', 'MESOS_HTTP', 'MESOS_HTTPS', 'MESOS_TCP'] as const;
export type HealthProtocol = (typeof HEALTH_PROTOCOLS)[number];

export interface HealthCheckDefinition {
  protocol: HealthProtocol;
  path: string;
  portIndex: number;
  /** A fixed port instead of portIndex. */
  port?: number;
  command?: string;
  gracePeriodSeconds: number;
  intervalSeconds: number;
  timeoutSeconds: number;
  maxConsecutiveFailures: number;
  delaySeconds: number;
}

export interface AppDefinition {
  /** Absolute, normalised: `/team/app`. */
  id: string;
  cmd: string | null;
  args: string[] | null;
  user: string | null;
  cpus: number;
  mem: number;
  disk: number;
  gpus: number;
  instances: number;
  env: Record<string, string>;
  labels: Record<string, string>;
  container: ContainerDefinition | null;
  portDefinitions: PortDefinition[];
  requirePorts: boolean;
  constraints: Constraint[];
  healthChecks: HealthCheckDefinition[];
  upgradeStrategy: { minimumHealthCapacity: number; maximumOverCapacity: number };
  backoffSeconds: number;
  backoffFactor: number;
  maxLaunchDelaySeconds: number;
  killSelection: 'YOUNGEST_FIRST' | 'OLDEST_FIRST';
  taskKillGracePeriodSeconds: number | null;
  unreachableStrategy: { inactiveAfterSeconds: number; expungeAfterSeconds: number };
  /** Fields Cairn does not know, kept as given (top level) so GET shows them back. */
  unknown: Record<string, unknown>;
}

/**
 * Marathon's defaults. maxLaunchDelaySeconds is 300 as in Marathon 1.5 and later (1.x
 * before it: 3600): an hour between attempts hid fixed crash loops for too long.
 * unreachableStrategy: an unreachable instance is replaced at once (0 s) and forgotten
 * after 10 minutes, as Marathon 1.5+. Health checks start at once (delaySeconds 0): Marathon
 * sends its checks to Mesos without Mesos' 15 s delay, leaving the grace period to cover start-up.
 */
export const APP_DEFAULTS = {
  cpus: 1,
  mem: 128,
  disk: 0,
  gpus: 0,
  instances: 1,
  requirePorts: false,
  backoffSeconds: 1,
  backoffFactor: 1.15,
  maxLaunchDelaySeconds: 300,
  upgradeStrategy: { minimumHealthCapacity: 1, maximumOverCapacity: 1 },
  killSelection: 'YOUNGEST_FIRST' as const,
  unreachableStrategy: { inactiveAfterSeconds: 0, expungeAfterSeconds: 600 },
  health: { gracePeriodSeconds: 300, intervalSeconds: 60, timeoutSeconds: 20, maxConsecutiveFailures: 3, delaySeconds: 0, path: '/', portIndex: 0 },
};

/** How many host ports an instance of `app` takes from its offer (PORT0..n). */
export function portCount(app: AppDefinition): number {
  const d = app.container?.docker;
  if (d && d.network === 'BRIDGE') return d.portMappings.length;
  return app.portDefinitions.length;
}

/** Host ports the app needs by number (requirePorts, or fixed host ports in a mapping). */
export function requiredPorts(app: AppDefinition): (number | 0)[] {
  const d = app.container?.docker;
  if (d && d.network === 'BRIDGE') return d.portMappings.map((m) => m.hostPort);
  return app.portDefinitions.map((p) => (app.requirePorts ? p.port : 0));
}

/** A stored app: its definition and versions (ISO times, as Marathon writes them). */
export interface StoredApp {
  app: AppDefinition;
  /** Any change, scaling included. */
  version: string;
  /** The last change that needs new instances (config change or restart). */
  configVersion: string;
  /**
   * The principal that created it; absent on apps created before owners were kept, or on a
   * master without authentication: then no one owns it, and only the ACLs let anyone act on it.
   */
  owner?: string;
}
