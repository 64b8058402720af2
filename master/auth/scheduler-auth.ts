// Who may make a scheduler call. SUBSCRIBE: the caller's principal becomes the framework's
// (a FrameworkInfo naming another principal is refused, as Mesos does), it must be allowed
// to register in the role and to run tasks as the framework's user, and only the principal
// that registered a framework may resubscribe it. Every later call acts for a framework and
// is taken only from that framework's principal — a framework id read off /api/v1/state is
// worth nothing to anyone else. Under `--open scheduler` a caller without a credential is the
// principal `anonymous` (master-auth.ts), held to the same rules: the ACLs decide its roles and
// users, and its frameworks are all `anonymous`'s.

import { CairnError } from '../../shared/errors.ts';
import type { SchedulerCallParsed } from '../api/scheduler-calls.ts';
import type { Registry } from '../registry/registry.ts';
import type { Principal } from './credentials.ts';
import { ANONYMOUS_PRINCIPAL, type MasterAuth } from './master-auth.ts';

/** Checks the call and, for SUBSCRIBE, returns it with the authenticated principal filled in. */
export function authorizeSchedulerCall(auth: MasterAuth, registry: Registry, principal: Principal, call: SchedulerCallParsed): SchedulerCallParsed {
  if (!auth.enabled) return call;
  if (call.type === 'SUBSCRIBE') {
    const fw = call.framework;
    if (fw.principal !== '' && fw.principal !== principal.name) {
      const why = principal.name === ANONYMOUS_PRINCIPAL
        ? `framework_info.principal '${fw.principal}' needs its credential: a call without one acts as '${ANONYMOUS_PRINCIPAL}'`
        : `framework_info.principal '${fw.principal}' is not the authenticated principal '${principal.name}'`;
      throw new CairnError('CAIRN_FORBIDDEN', why, 'subscribe.framework_info.principal');
    }
    if (fw.id !== undefined) {
      const existing = registry.state.frameworks.get(fw.id);
      if (existing) auth.requireOwner(principal, fw.id, existing.principal, 'subscribe.framework_info.id');
    }
    auth.require(principal, 'register_frameworks', fw.role, 'subscribe.framework_info.role');
    // An empty user runs tasks as the agent's default task user, which the operator chose.
    if (fw.user !== '') auth.require(principal, 'run_tasks', fw.user, 'subscribe.framework_info.user');
    return { ...call, framework: { ...fw, principal: principal.name } };
  }
  const existing = registry.state.frameworks.get(call.frameworkId);
  // An unknown framework is the core's to refuse, with its usual answer.
  if (existing) auth.requireOwner(principal, call.frameworkId, existing.principal, 'framework_id');
  return call;
}
