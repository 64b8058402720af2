// An app instance as a TaskInfo: Marathon's task id and environment, the name mesos-dns
// gives, Docker HOST and BRIDGE containers with volumes, the health check for the agent.

import { describe, expect, it } from 'vitest';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { appIdOfTaskId, appTaskName, buildTaskInfo, marathonTaskId } from '../../master/frameworks/services/task-info.ts';
import { matchesLabelSelector } from '../../master/frameworks/services/label-selector.ts';
import { taskDnsName } from '../../master/dns/names.ts';
import type { LaunchDecision } from '../../master/frameworks/services/core.ts';
import { Resources } from '../../shared/resources.ts';

function launch(ports: number[]): LaunchDecision {
  return { appId: '', configVersion: 'v', offerId: 'o', agentId: 'a1', hostname: 'host-1', attributes: {}, resources: Resources.parse(`cpus:0.5;mem:64;ports:[${ports.map((p) => `${p}-${p}`).join(',')}]`), ports };
}

const env = (t: ReturnType<typeof buildTaskInfo>) => Object.fromEntries(t.command!.environment!.variables.map((v) => [v.name, v.value]));

describe('Marathon task info', () => {
  it('names tasks as mesos-dns does and gives Marathon\'s task ids', () => {
    expect(appTaskName('/dev/web')).toBe('web-dev');
    expect(appTaskName('/sw2vscheduler')).toBe('sw2vscheduler');
    expect(marathonTaskId('/dev/web', 'u-1')).toBe('dev_web.u-1');
    expect(appIdOfTaskId('dev_web.6b1f')).toBe('/dev/web');
    expect(taskDnsName('web-dev', 'marathon', 'mesos')).toBe('web-dev.marathon.mesos');
  });

  it('gives Marathon\'s environment', () => {
    const { app } = parseApp({
      id: '/team/svc', cmd: 'run', cpus: 0.5, mem: 64, env: { OWN: 'x' }, labels: { 'tier.name': 'front', OWNER: 'me' },
      portDefinitions: [{ port: 0, name: 'http' }, { port: 0 }],
      container: { type: 'DOCKER', docker: { image: 'repo/img:1' } },
    });
    const t = buildTaskInfo({ app, version: '2026-01-01T00:00:00.000Z', configVersion: 'c' }, launch([31001, 31002]), 'team_svc.abc');
    expect(env(t)).toEqual({
      OWN: 'x', PORT: '31001', PORT0: '31001', PORT1: '31002', PORTS: '31001,31002', PORT_31001: '31001', PORT_31002: '31002', PORT_HTTP: '31001', HOST: 'host-1',
      MARATHON_APP_ID: '/team/svc', MARATHON_APP_VERSION: '2026-01-01T00:00:00.000Z', MARATHON_APP_DOCKER_IMAGE: 'repo/img:1',
      MARATHON_APP_RESOURCE_CPUS: '0.5', MARATHON_APP_RESOURCE_MEM: '64.0', MARATHON_APP_RESOURCE_DISK: '0.0', MARATHON_APP_RESOURCE_GPUS: '0',
      MARATHON_APP_LABELS: 'TIER_NAME OWNER', MARATHON_APP_LABEL_TIER_NAME: 'front', MARATHON_APP_LABEL_OWNER: 'me', MESOS_TASK_ID: 'team_svc.abc',
    });
    expect(t).toMatchObject({ name: 'svc-team', task_id: { value: 'team_svc.abc' }, agent_id: { value: 'a1' }, command: { shell: true, value: 'run' } });
    expect(t.container).toEqual({ type: 'DOCKER', docker: { image: 'repo/img:1', network: 'HOST', force_pull_image: false }, volumes: [] });
  });

  it('maps BRIDGE ports and volumes through the container spec, and the health check to the mapped host port', () => {
    const { app } = parseApp({
      id: '/b', args: ['--serve'], taskKillGracePeriodSeconds: 5,
      container: { type: 'DOCKER', volumes: [{ containerPath: '/data', hostPath: '/srv/data', mode: 'RO' }], docker: { image: 'img', network: 'BRIDGE', portMappings: [{ containerPort: 80, name: 'web' }, { containerPort: 9000, hostPort: 0 }] } },
      healthChecks: [{ protocol: 'HTTP', path: '/health', portIndex: 1, intervalSeconds: 2, gracePeriodSeconds: 10, maxConsecutiveFailures: 2 }],
    });
    const t = buildTaskInfo({ app, version: 'v', configVersion: 'v' }, launch([31000, 31005]), 'b.x');
    expect(t.container!.docker.port_mappings).toEqual([{ host_port: 31000, container_port: 80, protocol: 'tcp' }, { host_port: 31005, container_port: 9000, protocol: 'tcp' }]);
    expect(t.container!.docker.network).toBe('BRIDGE');
    expect(t.container!.volumes).toEqual([{ host_path: '/srv/data', container_path: '/data', mode: 'RO' }]);
    expect(t.command).toMatchObject({ shell: false, value: '', arguments: ['--serve'] });
    expect(env(t)).toMatchObject({ PORT0: '31000', PORT_WEB: '31000', PORT_80: '31000', PORT_9000: '31005' });
    expect(t.health_check).toEqual({ type: 'HTTP', http: { port: 31005, path: '/health', scheme: 'http' }, delay_seconds: 0, interval_seconds: 2, timeout_seconds: 20, consecutive_failures: 2, grace_period_seconds: 10 });
    expect(t.kill_policy).toEqual({ grace_period: { nanoseconds: 5e9 } });
  });

  it('translates TCP and COMMAND checks', () => {
    const tcp = parseApp({ id: '/t', cmd: 'x', healthChecks: [{ protocol: 'TCP' }] }).app;
    expect(buildTaskInfo({ app: tcp, version: 'v', configVersion: 'v' }, launch([31000]), 't.x').health_check).toMatchObject({ type: 'TCP', tcp: { port: 31000 } });
    const cmd = parseApp({ id: '/c', cmd: 'x', healthChecks: [{ protocol: 'COMMAND', command: { value: 'test -f ok' } }] }).app;
    expect(buildTaskInfo({ app: cmd, version: 'v', configVersion: 'v' }, launch([31000]), 'c.x').health_check).toMatchObject({ type: 'COMMAND', command: { value: 'test -f ok' } });
  });

  it('gives a fixed port of a definition without requirePorts as PORT_<port>, the host port the offer gave', () => {
    // The seed's scheduler (../shared/seeds/000-pslite-word2vec): port 18001 is its service port.
    const { app } = parseApp({ id: '/sw2vscheduler', cmd: null, container: { type: 'DOCKER', docker: { image: 'img', network: 'HOST' } }, portDefinitions: [{ port: 18001, protocol: 'tcp', labels: {} }, { port: 0 }] });
    const t = buildTaskInfo({ app, version: 'v', configVersion: 'v' }, launch([31007, 31008]), 'sw2vscheduler.x');
    expect(env(t)).toMatchObject({ PORT: '31007', PORT0: '31007', PORT1: '31008', PORT_18001: '31007', PORT_31008: '31008' });
    expect(env(t)).not.toHaveProperty('PORT_0');
    // cmd null: the image's own entrypoint and command run.
    expect(t.command).toMatchObject({ shell: false, value: '', arguments: [] });
  });

  it('runs a process app\'s args as its program', () => {
    const { app } = parseApp({ id: '/p', args: ['/bin/echo', 'hi'] });
    expect(buildTaskInfo({ app, version: 'v', configVersion: 'v' }, launch([31000]), 'p.x').command).toMatchObject({ shell: false, value: '/bin/echo', arguments: ['/bin/echo', 'hi'] });
  });

  it('selects apps by label', () => {
    const labels = { env: 'prod', tier: 'web' };
    expect(matchesLabelSelector(labels, 'env==prod')).toBe(true);
    expect(matchesLabelSelector(labels, 'env!=prod')).toBe(false);
    expect(matchesLabelSelector(labels, 'env==prod,tier==db')).toBe(false);
    expect(matchesLabelSelector(labels, 'tier in (db, web)')).toBe(true);
    expect(matchesLabelSelector(labels, 'tier notin (web)')).toBe(false);
    expect(matchesLabelSelector(labels, 'env')).toBe(true);
    expect(matchesLabelSelector(labels, '!owner')).toBe(true);
  });
});
