// What a Marathon 1.9 client reads, and nothing else: the app as Marathon's writer
// (AppConversion.appWriter) puts it — `networks` and `role` always, `container.portMappings`
// rather than the deprecated `docker.portMappings`/`docker.network`, no `ports`, `uris` or
// `ipAddress`, absent rather than null — and the query parameters as Marathon reads them.
// Cairn's own extras (`tasksWaiting`, `waitingOn`, `ignoredFields`, fields Marathon does not
// know) are shown only to a caller that asks with `?cairn=true`. Pure.

import type { StoredApp } from './app-model.ts';
import { storedAppJson } from './app-json.ts';
import { MarathonError } from './app-errors.ts';

/** The role every app runs in: the services framework subscribes in the default role. */
export const SERVICES_ROLE = '*';

/**
 * The properties of Marathon 1.9's `App` (docs/docs/rest-api/public/api/v2/types/app.raml)
 * that its writer sends: a field an app was given is echoed only if it is one of these.
 */
const APP_FIELDS = new Set([
  'id', 'acceptedResourceRoles', 'args', 'backoffFactor', 'backoffSeconds', 'cmd', 'constraints', 'container', 'cpus',
  'dependencies', 'disk', 'env', 'executor', 'executorResources', 'fetch', 'healthChecks', 'check', 'instances', 'labels',
  'maxLaunchDelaySeconds', 'mem', 'gpus', 'networks', 'portDefinitions', 'readinessChecks', 'residency', 'requirePorts',
  'secrets', 'taskKillGracePeriodSeconds', 'upgradeStrategy', 'user', 'version', 'versionInfo', 'killSelection',
  'unreachableStrategy', 'tty', 'role',
]);

type Json = Record<string, unknown>;

/** A copy without the keys whose value is null or undefined (Marathon leaves them out). */
function dropEmpty(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));
}

/** Marathon's `networks` for Cairn's two modes. */
export function networksOf(network: 'HOST' | 'BRIDGE' | undefined): { mode: string }[] {
  return [{ mode: network === 'BRIDGE' ? 'container/bridge' : 'host' }];
}

/** An app in Marathon 1.9's `App` shape, from Cairn's app JSON (appToJson / storedAppJson). */
export function marathonApp(json: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(json)) if (APP_FIELDS.has(k) && v !== null && v !== undefined) out[k] = v;
  const container = json.container as Json | null | undefined;
  const docker = container?.docker as Json | undefined;
  const network = docker?.network as 'HOST' | 'BRIDGE' | undefined;
  if (container) {
    const { network: _n, portMappings, ...restDocker } = (docker ?? {}) as Json;
    out.container = dropEmpty({
      ...container,
      ...(docker ? { docker: dropEmpty(restDocker) } : {}),
      // As Marathon: port mappings belong to the container, and only off the host network.
      portMappings: network === 'BRIDGE' ? portMappings ?? [] : undefined,
    });
  }
  if (network === 'BRIDGE') delete out.portDefinitions;
  out.networks = networksOf(network);
  out.role = SERVICES_ROLE;
  out.executor = typeof json.executor === 'string' ? json.executor : '';
  return out;
}

/** A stored app as Marathon answers it (with version and versionInfo). */
export function marathonStoredApp(s: StoredApp): Json {
  return marathonApp(storedAppJson(s));
}

/** The fields an app was given that Marathon does not know: shown only to `?cairn=true`. */
export function cairnOnlyFields(json: Json): Json {
  return Object.fromEntries(Object.entries(json).filter(([k, v]) => !APP_FIELDS.has(k) && v !== null && v !== undefined && !['ports', 'uris', 'ipAddress'].includes(k)));
}

export type Query = Record<string, string | string[] | undefined>;

/**
 * A boolean query parameter as Marathon reads it (`true`, `True`, `TRUE`; also 1 and 0);
 * `dflt` when absent. Anything else is a 400 naming the parameter.
 */
export function queryBool(q: Query, name: string, dflt: boolean): boolean {
  const raw = q[name];
  const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (v === undefined || v === '') return dflt;
  const s = v.toLowerCase();
  if (s === 'true' || s === '1') return true;
  if (s === 'false' || s === '0') return false;
  throw new MarathonError(400, `query parameter '${name}' must be true or false, got '${v.slice(0, 64)}'`, [{ path: `/${name}`, errors: ['must be true or false'] }]);
}

/** A query parameter given any number of times, each possibly a comma-separated list. */
export function queryList(q: Query, name: string): string[] {
  const raw = q[name];
  const all = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  return all.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}

/** One value of a query parameter (the last when repeated). */
export function queryOne(q: Query, name: string): string | undefined {
  const raw = q[name];
  return Array.isArray(raw) ? raw[raw.length - 1] : raw;
}

/** Whether the caller asked for Cairn's extras (`?cairn=true`). */
export function wantsCairn(q: Query): boolean {
  return queryBool(q, 'cairn', false);
}
