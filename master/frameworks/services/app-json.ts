// An AppDefinition back into Marathon's app JSON (what GET answers and what a PATCH is
// merged onto), with the fields Cairn did not know put back as they were given.

import type { AppDefinition, StoredApp } from './app-model.ts';

export function appToJson(app: AppDefinition): Record<string, unknown> {
  const d = app.container?.docker;
  return {
    id: app.id,
    cmd: app.cmd,
    args: app.args,
    user: app.user,
    cpus: app.cpus,
    mem: app.mem,
    disk: app.disk,
    gpus: app.gpus,
    instances: app.instances,
    env: app.env,
    labels: app.labels,
    container: app.container === null ? null : {
      type: app.container.type,
      ...(d ? { docker: { image: d.image, network: d.network, portMappings: d.portMappings, forcePullImage: d.forcePullImage, privileged: d.privileged, parameters: d.parameters, ...(d.pullConfig ? { pullConfig: d.pullConfig } : {}) } } : {}),
      volumes: app.container.volumes,
    },
    portDefinitions: app.portDefinitions,
    requirePorts: app.requirePorts,
    constraints: app.constraints.map((c) => (c.value === undefined ? [c.field, c.operator] : [c.field, c.operator, c.value])),
    healthChecks: app.healthChecks.map((h) => ({
      protocol: h.protocol,
      ...(h.protocol === 'COMMAND' ? { command: { value: h.command } } : { path: h.path, portIndex: h.portIndex }),
      ...(h.port !== undefined ? { port: h.port } : {}),
      gracePeriodSeconds: h.gracePeriodSeconds,
      intervalSeconds: h.intervalSeconds,
      timeoutSeconds: h.timeoutSeconds,
      maxConsecutiveFailures: h.maxConsecutiveFailures,
      delaySeconds: h.delaySeconds,
    })),
    upgradeStrategy: app.upgradeStrategy,
    backoffSeconds: app.backoffSeconds,
    backoffFactor: app.backoffFactor,
    maxLaunchDelaySeconds: app.maxLaunchDelaySeconds,
    killSelection: app.killSelection,
    taskKillGracePeriodSeconds: app.taskKillGracePeriodSeconds,
    unreachableStrategy: app.unreachableStrategy,
    ...app.unknown,
  };
}

export function storedAppJson(s: StoredApp): Record<string, unknown> {
  return { ...appToJson(s.app), version: s.version, versionInfo: { lastScalingAt: s.version, lastConfigChangeAt: s.configVersion } };
}
