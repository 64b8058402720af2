// A task's `health_check` (Mesos v1 HealthCheck JSON) checked at the edge and compiled to
// what the agent runs: every default filled, durations in milliseconds. Errors name the
// field; nothing past this file sees the raw JSON.

import { badRequest } from '../../shared/errors.ts';
import type { ContainerSpec, HealthCheckSpec } from '../../shared/agent-messages.ts';

/** Mesos' defaults (mesos.proto HealthCheck), in seconds. */
export const HEALTH_CHECK_DEFAULTS = {
  delaySeconds: 15,
  intervalSeconds: 10,
  timeoutSeconds: 20,
  consecutiveFailures: 3,
  gracePeriodSeconds: 10,
} as const;

/** The longest duration a check takes: a day, far below what a timer holds (24.8 days). */
const MAX_SECONDS = 86_400;
const MAX_FAILURES = 1_000_000;
const MAX_PATH = 4096;
const MAX_COMMAND = 64 * 1024;
const MAX_STATUSES = 100;

type Json = Record<string, unknown>;

function object(value: unknown, field: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(field, 'must be an object');
  return value as Json;
}

function seconds(value: unknown, field: string, fallback: number, positive: boolean): number {
  if (value === undefined) return fallback * 1000;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(field, 'must be a number of seconds');
  if (value < 0) throw badRequest(field, `must not be negative, got ${value}`);
  if (positive && value === 0) throw badRequest(field, 'must be more than 0');
  if (value > MAX_SECONDS) throw badRequest(field, `must be at most ${MAX_SECONDS} seconds, got ${value}`);
  return Math.round(value * 1000);
}

function portOf(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw badRequest(field, 'must be a port number (1-65535)');
  return value;
}

/**
 * Whether the check's port is one the task can be reached on: a process task listens on its
 * own ports; a BRIDGE container on a mapped container port (or its host port); a HOST
 * container on whatever its image says, so any port goes.
 */
function checkPort(port: number, taskPorts: readonly number[], container: ContainerSpec | undefined, field: string): void {
  if (container?.docker.network === 'host') return;
  if (taskPorts.includes(port)) return;
  if (container) {
    const mapped = container.docker.portMappings.map((m) => m.containerPort);
    if (mapped.includes(port)) return;
    throw badRequest(field, `port ${port} is neither among the task's ports (${taskPorts.join(', ') || 'none'}) nor a mapped container port (${mapped.join(', ') || 'none'})`);
  }
  throw badRequest(field, `port ${port} is not among the task's ports (${taskPorts.join(', ') || 'none'})`);
}

const TYPES = { HTTP: 'http', TCP: 'tcp', COMMAND: 'command' } as const;

export function parseHealthCheck(value: unknown, taskPorts: readonly number[], container: ContainerSpec | undefined, field: string): HealthCheckSpec {
  const h = object(value, field);
  if (typeof h.type !== 'string') throw badRequest(`${field}.type`, 'is required: HTTP, TCP or COMMAND');
  const type = TYPES[h.type.toUpperCase() as keyof typeof TYPES];
  if (type === undefined) throw badRequest(`${field}.type`, `'${h.type.slice(0, 64)}' is not a health check type (HTTP, TCP or COMMAND)`);
  // The type and its sub-object must agree: a check of one kind with another's settings is a mistake.
  for (const other of Object.values(TYPES)) {
    if (other !== type && h[other] !== undefined) throw badRequest(`${field}.${other}`, `is set but the check's type is ${h.type.toUpperCase()}`);
  }
  if (h[type] === undefined) throw badRequest(`${field}.${type}`, `is required for a ${h.type.toUpperCase()} check`);
  const sub = object(h[type], `${field}.${type}`);
  const spec: HealthCheckSpec = {
    type,
    port: 0,
    path: '/',
    scheme: 'http',
    statuses: [],
    command: '',
    delayMs: seconds(h.delay_seconds, `${field}.delay_seconds`, HEALTH_CHECK_DEFAULTS.delaySeconds, false),
    intervalMs: seconds(h.interval_seconds, `${field}.interval_seconds`, HEALTH_CHECK_DEFAULTS.intervalSeconds, true),
    timeoutMs: seconds(h.timeout_seconds, `${field}.timeout_seconds`, HEALTH_CHECK_DEFAULTS.timeoutSeconds, true),
    gracePeriodMs: seconds(h.grace_period_seconds, `${field}.grace_period_seconds`, HEALTH_CHECK_DEFAULTS.gracePeriodSeconds, false),
    consecutiveFailures: HEALTH_CHECK_DEFAULTS.consecutiveFailures,
  };
  if (h.consecutive_failures !== undefined) {
    const n = h.consecutive_failures;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_FAILURES) throw badRequest(`${field}.consecutive_failures`, `must be a whole number from 0 to ${MAX_FAILURES}`);
    spec.consecutiveFailures = n;
  }
  if (type === 'command') {
    const v = sub.value;
    if (typeof v !== 'string' || v.trim() === '') throw badRequest(`${field}.command.value`, 'is required: the shell command to run');
    if (v.length > MAX_COMMAND) throw badRequest(`${field}.command.value`, `is too long: ${v.length} characters, at most ${MAX_COMMAND}`);
    spec.command = v;
    return spec;
  }
  spec.port = portOf(sub.port, `${field}.${type}.port`);
  checkPort(spec.port, taskPorts, container, `${field}.${type}.port`);
  if (type === 'tcp') return spec;
  if (sub.path !== undefined) {
    if (typeof sub.path !== 'string' || !sub.path.startsWith('/')) throw badRequest(`${field}.http.path`, 'must be a path starting with /');
    if (sub.path.length > MAX_PATH || /[\s\x00-\x1f\x7f]/.test(sub.path)) throw badRequest(`${field}.http.path`, `must be at most ${MAX_PATH} characters without spaces or control characters`);
    spec.path = sub.path;
  }
  if (sub.scheme !== undefined) {
    const scheme = typeof sub.scheme === 'string' ? sub.scheme.toLowerCase() : '';
    if (scheme !== 'http' && scheme !== 'https') throw badRequest(`${field}.http.scheme`, 'must be http or https');
    spec.scheme = scheme;
  }
  if (sub.statuses !== undefined) {
    if (!Array.isArray(sub.statuses)) throw badRequest(`${field}.http.statuses`, 'must be an array of HTTP statuses');
    if (sub.statuses.length > MAX_STATUSES) throw badRequest(`${field}.http.statuses`, `has ${sub.statuses.length} entries, at most ${MAX_STATUSES}`);
    spec.statuses = sub.statuses.map((s, i) => {
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 100 || s > 599) throw badRequest(`${field}.http.statuses[${i}]`, 'must be an HTTP status (100-599)');
      return s;
    });
  }
  return spec;
}
