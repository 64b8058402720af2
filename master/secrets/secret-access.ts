// Who may use, list and delete a credential stored in the cluster (a secret): its owner
// only — no ACL lends another principal's credential, and a master that authenticates no
// one lets everyone. The built-in frameworks pull with a secret on behalf of an app's or a
// job's submitter, who was checked here when submitting. Names leave the master; contents
// never do.

import { CairnError } from '../../shared/errors.ts';
import type { Principal } from '../auth/credentials.ts';
import type { MasterAuth } from '../auth/master-auth.ts';
import type { SchedulerCallParsed } from '../scheduler-calls.ts';
import type { MasterContext } from '../context.ts';
import type { SecretRecord } from '../registry/commands.ts';
export { checkSecretName } from '../../shared/secret-names.ts';

/** The rules over this master's copy of the registry. */
export function secretAccess(ctx: Pick<MasterContext, 'auth' | 'registry'>): SecretAccess {
  return new SecretAccess(ctx.auth, () => ctx.registry.state.secrets);
}

export class SecretAccess {
  constructor(
    private readonly auth: MasterAuth,
    private readonly secrets: () => ReadonlyMap<string, Readonly<SecretRecord>>,
  ) {}

  /** The owner a new secret records: none on a master that authenticates no one. */
  ownerFor(principal: Principal): string {
    return this.auth.enabled ? principal.name : '';
  }

  mayUse(principal: Principal, secret: Readonly<SecretRecord>): boolean {
    return !this.auth.enabled || principal.internal === true || principal.name === secret.owner;
  }

  /** The secrets `principal` may use, by name. */
  usable(principal: Principal): Readonly<SecretRecord>[] {
    return [...this.secrets().values()].filter((s) => this.mayUse(principal, s)).sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The secret, if `principal` may use it; otherwise the error `refuse(message)` makes (the
   * caller's own kind: a Marathon 422, a job's field). One that exists but is another's is
   * refused the same way as one that does not exist.
   */
  require<E extends Error>(principal: Principal, name: string, refuse: (message: string) => E): Readonly<SecretRecord> {
    const s = this.secrets().get(name);
    if (s && this.mayUse(principal, s)) return s;
    throw refuse(`no secret named '${name}' that principal '${principal.name}' may use (store one with \`cairn secret create ${name} --from-file config.json\`; \`cairn secret list\` shows yours)`);
  }

  /** An ACCEPT's launches may name only secrets its caller (the framework's principal) may use. */
  requireForCall<T extends SchedulerCallParsed>(principal: Principal, call: T): T {
    if (call.type !== 'ACCEPT') return call;
    call.tasks.forEach((t, i) => (t.container?.docker.pullSecrets ?? []).forEach((name, j) => {
      this.require(principal, name, (m) => new CairnError('CAIRN_BAD_REQUEST', m, `accept.operations.launch.task_infos[${i}].container.docker.pull_secrets[${j}]`));
    }));
    return call;
  }
}
