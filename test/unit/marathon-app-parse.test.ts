// The Marathon app JSON parser: Marathon's defaults, null as absent, nested ids, unknown
// fields kept and listed, and every refusal naming its path the way Marathon does.

import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { normaliseAppId, parseApp } from '../../master/frameworks/services/app-parse.ts';
import { MarathonError } from '../../master/frameworks/services/app-errors.ts';
import { appToJson } from '../../master/frameworks/services/app-json.ts';

function refusal(raw: unknown): { path: string; errors: string[] }[] {
  try {
    parseApp(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(MarathonError);
    expect((err as MarathonError).status).toBe(422);
    return (err as MarathonError).details!;
  }
  throw new Error('expected a refusal');
}

describe('Marathon app parsing', () => {
  it('fills Marathon\'s defaults', () => {
    const { app, ignored } = parseApp({ id: 'web', cmd: 'python3 -m http.server $PORT0' });
    expect(ignored).toEqual([]);
    expect(app).toMatchObject({
      id: '/web', cpus: 1, mem: 128, disk: 0, gpus: 0, instances: 1, requirePorts: false,
      portDefinitions: [{ port: 0, protocol: 'tcp' }], backoffSeconds: 1, backoffFactor: 1.15, maxLaunchDelaySeconds: 300,
      upgradeStrategy: { minimumHealthCapacity: 1, maximumOverCapacity: 1 }, killSelection: 'YOUNGEST_FIRST',
      taskKillGracePeriodSeconds: null, unreachableStrategy: { inactiveAfterSeconds: 0, expungeAfterSeconds: 600 },
      constraints: [], healthChecks: [], container: null, env: {}, labels: {},
    });
  });

  it('reads null as absent and fills health check defaults', () => {
    const { app } = parseApp({ id: '/a', cmd: 'x', cpus: null, mem: null, container: null, healthChecks: [{ protocol: 'TCP', portIndex: null }] });
    expect(app.cpus).toBe(1);
    expect(app.container).toBeNull();
    expect(app.healthChecks[0]).toMatchObject({ protocol: 'TCP', portIndex: 0, gracePeriodSeconds: 300, intervalSeconds: 60, timeoutSeconds: 20, maxConsecutiveFailures: 3 });
  });

  it('normalises nested ids and refuses bad segments', () => {
    expect(normaliseAppId('team/app')).toBe('/team/app');
    expect(normaliseAppId('/team/./x/../app/')).toBe('/team/app');
    expect(normaliseAppId('/Team')).toBeUndefined();
    expect(normaliseAppId('/-a')).toBeUndefined();
    expect(normaliseAppId('/')).toBeUndefined();
    expect(parseApp({ id: '/team/sub/app', cmd: 'x' }).app.id).toBe('/team/sub/app');
    expect(refusal({ id: '/a_b', cmd: 'x' })[0]!.path).toBe('/id');
  });

  it('keeps unknown fields and lists what it does not honour', () => {
    const { app, ignored } = parseApp({
      id: '/a', cmd: 'x', user: 'nobody', fetch: [{ uri: 'http://x' }], portDefinitions: [{ port: 0, weird: 1 }],
      container: { type: 'DOCKER', docker: { image: 'busybox', privileged: true, parameters: [{ key: 'ulimit', value: 'x' }] } },
    });
    expect(ignored.sort()).toEqual(['/container/docker/parameters', '/container/docker/privileged', '/fetch', '/portDefinitions(0)/weird', '/user']);
    expect(app.unknown).toEqual({ fetch: [{ uri: 'http://x' }] });
    expect(appToJson(app).fetch).toEqual([{ uri: 'http://x' }]);
    // What GET answers parses back to the same app.
    expect(parseApp(appToJson(app)).app).toEqual(app);
  });

  it('answers every acceptance refusal with its path', () => {
    expect(refusal({ cmd: 'x' }).map((d) => d.path)).toContain('/id');
    expect(refusal({ id: '/a', cmd: 'x', cpus: -0.5 }).map((d) => d.path)).toEqual(['/cpus']);
    expect(refusal({ id: '/a', cmd: 'x', constraints: [['hostname', 'CLOSE_TO']] })).toEqual([
      { path: '/constraints(0)', errors: [expect.stringContaining('Constraint operator must be one of')] },
    ]);
    expect(refusal({ id: '/a', cmd: 'x', container: { docker: { image: 'i', portMappings: [{ containerPort: 80 }] } } }).map((d) => d.path)).toEqual(['/container/docker/portMappings']);
    expect(refusal({ id: '/a', cmd: 'x', portDefinitions: [{ port: 0 }, { port: 0 }], healthChecks: [{ protocol: 'HTTP', portIndex: 2 }] }).map((d) => d.path)).toEqual(['/healthChecks(0)/portIndex']);
    // BRIDGE mappings are the ports a health check's portIndex counts.
    const bridge = { id: '/b', cmd: 'x', container: { type: 'DOCKER', docker: { image: 'i', network: 'BRIDGE', portMappings: [{ containerPort: 80 }] } } };
    expect(parseApp({ ...bridge, healthChecks: [{ portIndex: 0 }] }).app.healthChecks).toHaveLength(1);
    expect(refusal({ ...bridge, healthChecks: [{ portIndex: 1 }] }).map((d) => d.path)).toEqual(['/healthChecks(0)/portIndex']);
  });

  it('collects several errors at once', () => {
    const paths = refusal({ id: '/a', cmd: 'x', mem: 'lots', instances: 1.5, killSelection: 'RANDOM', env: { 'A-B': 'x', N: 3 } }).map((d) => d.path);
    expect(paths.sort()).toEqual(['/env/A-B', '/env/N', '/instances', '/killSelection', '/mem']);
  });

  it('checks constraints, strategies and ports', () => {
    expect(parseApp({ id: '/a', cmd: 'x', constraints: [['rack', 'GROUP_BY', '3'], ['hostname', 'LIKE', 'h[0-9]+'], ['zone', 'CLUSTER']] }).app.constraints).toEqual([
      { field: 'rack', operator: 'GROUP_BY', value: '3' },
      { field: 'hostname', operator: 'LIKE', value: 'h[0-9]+' },
      { field: 'zone', operator: 'CLUSTER' },
    ]);
    expect(refusal({ id: '/a', cmd: 'x', constraints: [['h', 'MAX_PER', 'two']] })[0]!.path).toBe('/constraints(0)');
    expect(refusal({ id: '/a', cmd: 'x', constraints: [['h', 'LIKE', '(']] })[0]!.path).toBe('/constraints(0)');
    expect(refusal({ id: '/a', cmd: 'x', upgradeStrategy: { minimumHealthCapacity: 1.5 } })[0]!.path).toBe('/upgradeStrategy/minimumHealthCapacity');
    expect(refusal({ id: '/a', cmd: 'x', upgradeStrategy: { minimumHealthCapacity: 1, maximumOverCapacity: 0 } })[0]!.path).toBe('/upgradeStrategy');
    expect(refusal({ id: '/a', cmd: 'x', requirePorts: true, portDefinitions: [{ port: 0 }] })[0]!.path).toBe('/portDefinitions(0)/port');
    expect(refusal({ id: '/a', cmd: 'x', args: ['y'] })[0]!.path).toBe('/');
    expect(refusal({ id: '/a' })[0]!.path).toBe('/cmd');
    // A Docker app may leave its command to its image, as in Marathon.
    expect(parseApp({ id: '/a', container: { type: 'DOCKER', docker: { image: 'busybox' } } }).app).toMatchObject({ cmd: null, args: null });
    expect(parseApp({ id: '/a', cmd: 'x', portDefinitions: [] }).app.portDefinitions).toEqual([]);
  });

  it('reads the seed\'s three app files as printed, ignoring none of their fields', () => {
    const dir = new URL('../../examples/services/pslite-word2vec/', import.meta.url);
    const parsed = ['sw2vscheduler', 'sw2vserver', 'sw2vworker'].map((f) => parseApp(JSON.parse(readFileSync(new URL(`${f}.json`, dir), 'utf8'))));
    for (const { ignored } of parsed) expect(ignored).toEqual([]);
    const [scheduler, server, worker] = parsed.map((p) => p.app);
    expect(scheduler).toMatchObject({ id: '/sw2vscheduler', cmd: null, args: null, cpus: 1, mem: 128, instances: 1, requirePorts: false, portDefinitions: [{ port: 18001, protocol: 'tcp', labels: {} }] });
    expect(server).toMatchObject({ mem: 1200, portDefinitions: [{ port: 10004 }] });
    expect(worker).toMatchObject({ instances: 4, portDefinitions: [{ port: 10003 }] });
    expect(worker!.container).toEqual({
      type: 'DOCKER',
      docker: { image: 'registry.aliyuncs.com/xlvector/sw2v', network: 'HOST', portMappings: [], forcePullImage: true, privileged: false, parameters: [] },
      volumes: [{ containerPath: '/mnt/dcos', hostPath: '/mnt/dcos', mode: 'RO' }],
    });
  });

  it('refuses what is not an object', () => {
    expect(refusal([{ id: '/a' }])[0]!.path).toBe('/');
    expect(refusal('x')[0]!.path).toBe('/');
  });
});
