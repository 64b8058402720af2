// What a task's health check is aimed at, decided once from its launch (pure): the port on
// 127.0.0.1 (for a BRIDGE container, the host port Docker maps to the container port the
// check names), or the command and where it runs (the task's sandbox, or its container).

import type { HealthCheckSpec, TaskInfo } from '../../shared/agent-messages.ts';
import { Resources } from '../../shared/resources.ts';
import { containerName, resolvePortMappings } from '../executors/docker/container-config.ts';

export type HealthTarget =
  | { kind: 'http'; port: number; path: string; scheme: 'http' | 'https'; statuses: number[] }
  | { kind: 'tcp'; port: number }
  /** `sh -c` next to the task: its sandbox, environment and user. */
  | { kind: 'command'; command: string }
  /** `sh -c` inside the task's container. */
  | { kind: 'docker-exec'; container: string; command: string };

/** The port to reach: a BRIDGE container's mapped container port becomes its host port. */
export function checkedPort(spec: HealthCheckSpec, info: Pick<TaskInfo, 'container' | 'resources'>): number {
  const docker = info.container?.docker;
  if (!docker || docker.network !== 'bridge') return spec.port;
  const mapping = docker.portMappings.find((m) => m.containerPort === spec.port && m.protocol !== 'udp');
  if (!mapping) return spec.port;
  if (mapping.hostPort !== 0) return mapping.hostPort;
  // The same resolution the Docker executor made when it created the container.
  const resolved = resolvePortMappings(docker.portMappings, Resources.parse(info.resources ?? '', 'resources').portList());
  return resolved[docker.portMappings.indexOf(mapping)]!.hostPort;
}

/** Throws (a CairnError naming the field) when the task's ports cannot place the check. */
export function healthTarget(spec: HealthCheckSpec, info: Pick<TaskInfo, 'taskId' | 'container' | 'resources'>): HealthTarget {
  switch (spec.type) {
    case 'http':
      return { kind: 'http', port: checkedPort(spec, info), path: spec.path || '/', scheme: spec.scheme === 'https' ? 'https' : 'http', statuses: [...spec.statuses] };
    case 'tcp':
      return { kind: 'tcp', port: checkedPort(spec, info) };
    default:
      return info.container ? { kind: 'docker-exec', container: containerName(info.taskId), command: spec.command } : { kind: 'command', command: spec.command };
  }
}

/** The check in words, for messages: `HTTP GET http://127.0.0.1:31000/health`. */
export function describeTarget(t: HealthTarget): string {
  switch (t.kind) {
    case 'http':
      return `HTTP GET ${t.scheme}://127.0.0.1:${t.port}${t.path}`;
    case 'tcp':
      return `TCP connect 127.0.0.1:${t.port}`;
    case 'command':
      return `COMMAND '${short(t.command)}'`;
    default:
      return `COMMAND '${short(t.command)}' in container ${t.container}`;
  }
}

function short(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** A check spec off the wire is the master's, but a peer's frame is checked anyway: nothing odd reaches a timer. */
export function usableSpec(spec: HealthCheckSpec | null | undefined): spec is HealthCheckSpec {
  if (!spec || !['http', 'tcp', 'command'].includes(spec.type)) return false;
  const durations = [spec.delayMs, spec.intervalMs, spec.timeoutMs, spec.gracePeriodMs];
  if (!durations.every((d) => Number.isInteger(d) && d >= 0 && d <= 86_400_000) || spec.intervalMs === 0 || spec.timeoutMs === 0) return false;
  if (spec.type === 'command') return typeof spec.command === 'string' && spec.command !== '';
  return Number.isInteger(spec.port) && spec.port >= 1 && spec.port <= 65535;
}
