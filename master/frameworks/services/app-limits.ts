// Bounds on an app beyond its JSON's shape: Marathon's own (label.raml's 255-character label
// names, EnvVarValidation's variable names under 255), and those that keep every task of the
// app within what the scheduler API and the agent take (master/scheduler-calls.ts), so an
// app that could never launch is refused when it is submitted, naming the field, instead of
// failing each launch. Pure.

import { Resources } from '../../../shared/resources.ts';
import { MAX_ID_LENGTH, MAX_ITEMS, MAX_LENGTH } from '../../../shared/field-limits.ts';
import { envBytes, envTooLarge, type ObjectLimits } from '../../../shared/sharing/object-limits.ts';
import { portCount, type AppDefinition } from './app-model.ts';
import { marathonEnv, marathonTaskId } from './task-info.ts';

/** A task id is `<id's segments joined by _>.<uuid>` (36 characters): the id leaves room for both. */
const UUID_LENGTH = 36;
/** The longest app id (its leading `/` counted): its tasks' ids then stay within Mesos' 255 (they name sandbox directories). */
export const MAX_APP_ID_LENGTH = MAX_ID_LENGTH - 1 - UUID_LENGTH + 1;
/** Each segment becomes a label of its tasks' DNS name (RFC 1123: 63 characters). */
export const MAX_APP_ID_SEGMENT = 63;
/**
 * Marathon takes any int32; each instance is a replicated record and a task, so Cairn takes
 * what a job may have in all (jobs/spec-validate.ts MAX_REPLICAS).
 */
export const MAX_APP_INSTANCES = 10_000;
/** label.raml: a label's name is 1 to 255 characters. */
export const MAX_LABEL_NAME = 255;
/** EnvVarValidation: a variable's name is shorter than 255 characters. */
export const MAX_ENV_NAME = 254;

type Report = (path: string, message: string) => void;

/** The id's bounds; `id` is normalised (`/a/b`). */
export function checkAppId(id: string, error: Report): void {
  if (id.length > MAX_APP_ID_LENGTH) {
    error('/id', `is ${id.length} characters; an app id is at most ${MAX_APP_ID_LENGTH} (its tasks' ids, <id>.<uuid>, are at most ${MAX_ID_LENGTH})`);
  }
  const long = id.split('/').find((s) => s.length > MAX_APP_ID_SEGMENT);
  if (long !== undefined) error('/id', `the segment '${long.slice(0, 40)}…' is ${long.length} characters; each is at most ${MAX_APP_ID_SEGMENT} (it becomes a DNS label)`);
}

/**
 * The app's labels, environment, command and instance count against what its tasks may
 * carry. The environment checked is the one a task gets (Marathon's own variables, a
 * `MARATHON_APP_LABEL_<NAME>` per label and the ports included), at its largest.
 */
export function checkAppLimits(app: AppDefinition, limits: ObjectLimits, error: Report): void {
  if (app.cmd !== null && app.cmd.length > MAX_LENGTH.command) error('/cmd', `is ${app.cmd.length} characters, at most ${MAX_LENGTH.command}`);
  const argsLength = (app.args ?? []).reduce((n, a) => n + a.length, 0);
  if (argsLength > MAX_LENGTH.command) error('/args', `hold ${argsLength} characters, at most ${MAX_LENGTH.command}`);

  const labels = Object.entries(app.labels);
  // Two more go on every task: the app's id and its config version.
  if (labels.length > MAX_ITEMS.labels - 2) error('/labels', `has ${labels.length} labels, at most ${MAX_ITEMS.labels - 2}`);
  for (const [k, v] of labels) {
    if (k.length === 0 || k.length > MAX_LABEL_NAME) error(`/labels/${k.slice(0, 64)}`, `a label's name is 1 to ${MAX_LABEL_NAME} characters, got ${k.length}`);
    if (v.length > MAX_LENGTH.labelValue) error(`/labels/${k.slice(0, 64)}`, `its value is ${v.length} characters, at most ${MAX_LENGTH.labelValue}`);
  }
  for (const [k, v] of Object.entries(app.env)) {
    if (k.length > MAX_ENV_NAME) error(`/env/${k.slice(0, 64)}`, `a variable's name is at most ${MAX_ENV_NAME} characters, got ${k.length}`);
    if (v.length > MAX_LENGTH.command) error(`/env/${k.slice(0, 64)}`, `its value is ${v.length} characters, at most ${MAX_LENGTH.command}`);
  }
  checkTaskEnv(app, limits, error);
}

/** The environment one task of the app gets, at its largest: the highest port numbers, the longest host name. */
function largestTaskEnv(app: AppDefinition): Record<string, string> {
  const ports = Array.from({ length: portCount(app) }, () => 65535);
  const version = new Date(0).toISOString();
  return marathonEnv(
    { app, version, configVersion: version },
    { appId: app.id, configVersion: version, offerId: '', agentId: '', hostname: 'h'.repeat(253), attributes: {}, resources: Resources.EMPTY, ports },
    marathonTaskId(app.id, 'u'.repeat(UUID_LENGTH)),
  );
}

function checkTaskEnv(app: AppDefinition, limits: ObjectLimits, error: Report): void {
  const env = Object.entries(largestTaskEnv(app));
  // Where a variable came from, to name the field that made it.
  const labelOf = new Map(Object.keys(app.labels).map((k) => [`MARATHON_APP_LABEL_${k.replace(/[^a-zA-Z0-9_]/g, '_').toUpperCase()}`, k]));
  const fieldOf = (name: string) =>
    name in app.env ? `/env/${name.slice(0, 64)}` : labelOf.has(name) ? `/labels/${labelOf.get(name)!.slice(0, 64)}` : name === 'MARATHON_APP_LABELS' ? '/labels' : '/env';
  if (env.length > MAX_ITEMS.environment) error('/env', `makes ${env.length} variables in each task (Marathon's own and one per label included), at most ${MAX_ITEMS.environment}`);
  for (const [name, value] of env) {
    if (name.length > MAX_LENGTH.envName) error(fieldOf(name), `makes the variable ${name.slice(0, 64)}… of ${name.length} characters, at most ${MAX_LENGTH.envName}`);
    else if (value.length > MAX_LENGTH.command && !(name in app.env)) error(fieldOf(name), `makes ${name} ${value.length} characters long, at most ${MAX_LENGTH.command}`);
  }
  const tooLarge = envTooLarge(envBytes(env), limits);
  if (tooLarge) error('/env', `${tooLarge}, Marathon's own variables and one per label included`);
}
