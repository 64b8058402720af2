// Who may make a scheduler call. SUBSCRIBE: the caller's principal becomes the framework's
// (a FrameworkInfo naming another principal is refused, as Mesos does), it must be allowed
// to register in the role and to run tasks as the framework's user, and only the principal
// that registered a framework may resubscribe it. Every later call acts for a framework and
// is taken only from that framework's principal — a framework id read off /api/v1/state is
// worth nothing to anyone else. Under `--open scheduler` a caller without a credential is the
// principal `anonymous` (master-auth.ts), held to the same rules: the ACLs decide its roles and
// users, and its frameworks are all `anonymous`'s. A class above the default needs
// use_priority_classes. A framework's name is a claim on DNS names (dns/zone.ts): the
// built-ins' names are theirs alone (dns/reserved-names.ts), and a name whose DNS label a
// live framework of another principal holds is refused, so one tenant cannot answer for
// another's tasks. A task's labels that grant something are the built-ins' alone (task-labels.ts).

import { CairnError } from '../../shared/errors.ts';
import type { SchedulerCallParsed } from '../scheduler-calls.ts';
import type { Registry } from '../registry/registry.ts';
import type { PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { reservedNameKey } from '../dns/reserved-names.ts';
import { frameworkNameKey } from '../dns/names.ts';
import { withEntitledLabels } from './task-labels.ts';
import type { Principal } from './credentials.ts';
import { ANONYMOUS_PRINCIPAL, type MasterAuth } from './master-auth.ts';

/** Checks the call and, for SUBSCRIBE, returns it with the authenticated principal filled in. */
export function authorizeSchedulerCall(auth: MasterAuth, registry: Registry, principal: Principal, call: SchedulerCallParsed, classes: PriorityClasses): SchedulerCallParsed {
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
    // An unknown class is the core's to refuse; the default class is everyone's.
    const cls = fw.priorityClass !== undefined ? classes.canonical(fw.priorityClass) : undefined;
    if (cls !== undefined && cls !== classes.defaultClass) auth.require(principal, 'use_priority_classes', cls, 'subscribe.framework_info.labels');
    if (!principal.internal) requireOwnName(registry, principal, fw.name, fw.id);
    return { ...call, framework: { ...fw, principal: principal.name } };
  }
  const existing = registry.state.frameworks.get(call.frameworkId);
  // An unknown framework is the core's to refuse, with its usual answer.
  if (existing) auth.requireOwner(principal, call.frameworkId, existing.principal, 'framework_id');
  return call.type === 'ACCEPT' ? withEntitledLabels(auth, principal, call, classes) : call;
}

/** Refuses a name reserved for the built-ins, or one whose DNS label another principal's live framework holds. */
function requireOwnName(registry: Registry, principal: Principal, name: string, id: string | undefined): void {
  const reserved = reservedNameKey(name);
  if (reserved !== undefined) {
    throw new CairnError('CAIRN_FORBIDDEN', `framework name '${name.slice(0, 64)}' is reserved: '${reserved}' names a built-in framework (or the agents' DNS names) under which its tasks resolve`, 'subscribe.framework_info.name');
  }
  const key = frameworkNameKey(name);
  if (key === '') return;
  for (const f of registry.state.frameworks.values()) {
    if (f.removedAtMs !== undefined || f.id === id || f.principal === principal.name) continue;
    if (frameworkNameKey(f.name) === key) {
      throw new CairnError('CAIRN_FORBIDDEN', `framework name '${name.slice(0, 64)}' claims the DNS name '${key}', which framework ${f.id} of principal '${f.principal}' holds: pick another name`, 'subscribe.framework_info.name');
    }
  }
}
