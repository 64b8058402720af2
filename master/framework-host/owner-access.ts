// Who may do what with the objects of the built-in frameworks (apps, jobs). They run their
// tasks as the built-in principal, which no ACL limits, so their REST APIs apply the rules a
// framework of the caller's own would meet: creating one needs register_frameworks for its
// role (their tasks run as the agents' default task user, so run_tasks has nothing to
// check); each object keeps the principal that
// created it, its owner, who may always act on it; others as view_tasks, kill_tasks and
// teardown_frameworks on the owner say, as they would for the owner's own framework; a class
// above the default needs use_priority_classes for the creator, as a framework's label does. An
// object without an owner (made before owners were kept) is owned by nobody: only
// principals the ACLs allow act on it. With authentication off every check passes.

import { CairnError } from '../../shared/errors.ts';
import type { Principal } from '../auth/credentials.ts';
import type { MasterAuth } from '../auth/master-auth.ts';

export type OwnerAction = 'view_tasks' | 'kill_tasks' | 'teardown_frameworks';

const VERB: Record<OwnerAction, string> = { view_tasks: 'view', kill_tasks: 'kill the tasks of', teardown_frameworks: 'change or delete' };

export class OwnerAccess {
  constructor(private readonly auth: MasterAuth) {}

  /** The owner a new object records: none on a master that authenticates no one. */
  ownerFor(principal: Principal): string {
    return this.auth.enabled ? principal.name : '';
  }

  may(principal: Principal, action: OwnerAction, owner: string | undefined): boolean {
    return this.auth.mayActOn(principal, action, owner ?? '');
  }

  /**
   * Throws CAIRN_FORBIDDEN (403) unless `principal` may do `action` on `what` (an app's or a
   * job's name, for the message) owned by `owner`.
   */
  require(principal: Principal, action: OwnerAction, what: string, owner: string | undefined, field: string): void {
    if (this.may(principal, action, owner)) return;
    const whose = owner ? `principal '${owner}'` : 'no principal (it predates owners)';
    throw new CairnError('CAIRN_FORBIDDEN', `principal '${principal.name}' may not ${VERB[action]} ${what}, which belongs to ${whose}`, field);
  }

  /**
   * The check a framework of class `priorityClass` meets (use_priority_classes), made against
   * the submitter: the built-in framework that runs the object's tasks is no one's to lend.
   * `priorityClass` is the class's own name; undefined or the default class is everyone's.
   */
  requireClass(principal: Principal, priorityClass: string | undefined, defaultClass: string, field: string): void {
    if (priorityClass === undefined || priorityClass === defaultClass) return;
    this.auth.require(principal, 'use_priority_classes', priorityClass, field);
  }

  /** The check a framework subscribing in `role` meets. */
  requireCreate(principal: Principal, role: string, roleField: string): void {
    this.auth.require(principal, 'register_frameworks', role, roleField);
  }
}
