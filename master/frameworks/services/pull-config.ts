// Marathon's `container.docker.pullConfig: {"secret": REF}`: the image is pulled with a
// credential stored in the cluster (`cairn secret create`). As in Marathon, REF may be a key
// of the app's `secrets` whose `source` names that credential; with no such key, REF names
// it itself. Parsing is pure; whether the credential exists, and is the submitter's to use,
// is checked when the app is submitted (routes) and again when a task launches.

import { SECRET_NAME, MAX_SECRET_NAME } from '../../../shared/secret-names.ts';
import type { Caller, SecretUse } from '../../../shared/framework-host/contract.ts';
import { invalid } from './app-errors.ts';
import type { AppDefinition, ContainerDefinition } from './app-model.ts';

type Json = Record<string, unknown>;

/** The parts of app-parse's reader this uses. */
interface FieldReader {
  obj(v: unknown, path: string): Json | undefined;
  str(v: unknown, path: string): string | undefined;
  error(path: string, message: string): void;
  unknownKeys(o: Json, known: readonly string[], path: string): void;
}

const AT = '/container/docker/pullConfig';

/** Sets `pullConfig` and the credential it names (`pullSecret`) on the parsed container. */
export function readPullConfig(r: FieldReader, rawContainer: unknown, secrets: unknown, container: ContainerDefinition | null): void {
  const docker = container?.docker;
  const raw = typeof rawContainer === 'object' && rawContainer !== null ? (rawContainer as Json).docker : undefined;
  const v = typeof raw === 'object' && raw !== null ? (raw as Json).pullConfig : undefined;
  if (!docker || v === undefined || v === null) return;
  const pc = r.obj(v, AT);
  if (!pc) return;
  r.unknownKeys(pc, ['secret'], AT);
  const ref = r.str(pc.secret, `${AT}/secret`);
  if (ref === undefined || ref === '') return r.error(`${AT}/secret`, 'is required: the name of the credential to pull the image with');
  const entry = typeof secrets === 'object' && secrets !== null ? (secrets as Json)[ref] : undefined;
  const source = typeof entry === 'object' && entry !== null ? (entry as Json).source : undefined;
  const name = typeof source === 'string' ? source : ref;
  if (name.length > MAX_SECRET_NAME || !SECRET_NAME.test(name)) {
    return r.error(typeof source === 'string' ? `/secrets/${ref}/source` : `${AT}/secret`, `'${name}' is not a secret name (letters, digits, '.', '_', '-', parts joined by '/')`);
  }
  docker.pullConfig = { secret: ref };
  docker.pullSecret = name;
}

/**
 * Refuses (422, naming the field) an app whose pullConfig names a credential that does not
 * exist or that `principal`, its submitter, may not use.
 */
export function requirePullSecret(app: AppDefinition, secrets: SecretUse, principal: Caller): void {
  const name = app.container?.docker?.pullSecret;
  if (name === undefined) return;
  secrets.require(principal, name, (message) => invalid([{ path: `${AT}/secret`, errors: [message] }]));
}
