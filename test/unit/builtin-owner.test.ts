// Owners of built-in frameworks' objects: who may act on an app or job (owner-access.ts),
// and whose a built-in framework's task is (task-owner.ts).

import { describe, expect, it } from 'vitest';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { BUILTIN_PRINCIPAL } from '../../master/builtin-principal.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { parseAcls } from '../../master/auth/acls.ts';
import { OwnerAccess } from '../../master/framework-host/owner-access.ts';
import { taskOwner } from '../../master/framework-host/task-owner.ts';
import type { FrameworkRecord, JsonValue } from '../../master/registry/commands.ts';

const credentials = parseCredentials(JSON.stringify({ credentials: ['alice', 'bob', 'ops'].map((p) => ({ principal: p, secret: `${p}-secret-0123456789abcdef` })) }), 'test');
const acls = parseAcls(JSON.stringify({
  permissive: false,
  register_frameworks: [{ principals: { values: ['alice'] }, roles: { values: ['ml'] } }],
  view_tasks: [{ principals: { values: ['ops'] }, framework_principals: { type: 'ANY' } }],
  kill_tasks: [{ principals: { values: ['ops'] }, framework_principals: { values: ['alice'] } }],
}), 'acls');
const user = (name: string) => ({ name, kind: 'user' as const });

describe('owner access', () => {
  const access = new OwnerAccess(MasterAuth.on({ credentials, acls }));

  it('lets the owner do everything and others what the ACLs grant on the owner', () => {
    expect(access.may(user('alice'), 'teardown_frameworks', 'alice')).toBe(true);
    expect(access.may(user('bob'), 'view_tasks', 'alice')).toBe(false);
    expect(access.may(user('ops'), 'view_tasks', 'alice')).toBe(true);
    expect(access.may(user('ops'), 'kill_tasks', 'alice')).toBe(true);
    expect(access.may(user('ops'), 'kill_tasks', 'bob')).toBe(false);
    expect(access.may(user('ops'), 'teardown_frameworks', 'alice')).toBe(false);
    expect(() => access.require(user('bob'), 'teardown_frameworks', "app '/a'", 'alice', 'id')).toThrow(expect.objectContaining({ code: 'CAIRN_FORBIDDEN', field: 'id' }));
  });

  it('lets nobody but ACL grants act on an object without an owner', () => {
    expect(access.may(user('alice'), 'view_tasks', undefined)).toBe(false);
    expect(access.may(user('ops'), 'view_tasks', undefined)).toBe(true);
    expect(() => access.require(user('alice'), 'view_tasks', "job 'j'", undefined, 'name')).toThrow(/predates owners/);
  });

  it('checks the role of a creation as a subscription in it', () => {
    expect(() => access.requireCreate(user('alice'), 'ml', 'role')).not.toThrow();
    expect(() => access.requireCreate(user('bob'), 'ml', 'role')).toThrow(expect.objectContaining({ code: 'CAIRN_FORBIDDEN', field: 'role' }));
    expect(access.ownerFor(user('bob'))).toBe('bob');
  });

  it('changes nothing with authentication off', () => {
    const off = new OwnerAccess(MasterAuth.off());
    expect(off.may(user(''), 'teardown_frameworks', 'alice')).toBe(true);
    expect(() => off.requireCreate(user(''), 'anything', 'role')).not.toThrow();
    expect(off.ownerFor(user(''))).toBe('');
  });
});

describe('task owner', () => {
  const fw = (id: string, name: string, principal: string) => [id, { id, name, principal, user: '', role: '*', failoverTimeoutS: 0 } as unknown as FrameworkRecord] as const;
  const state = {
    frameworks: new Map([fw('f1', 'marathon', BUILTIN_PRINCIPAL), fw('f2', 'jobs', BUILTIN_PRINCIPAL), fw('f3', 'mine', 'carol')]),
    builtin: new Map<string, Map<string, JsonValue>>([
      ['marathon', new Map<string, JsonValue>([['app//web', { owner: 'alice' }], ['app//old', {}]])],
      ['jobs', new Map<string, JsonValue>([['job/train', { owner: 'bob' }]])],
    ]),
  };
  const task = (frameworkId: string, labels: [string, string][] = []) => ({ frameworkId, labels: labels.map(([name, value]) => ({ name, value })) });

  it("is an app's or job's owner for a built-in framework's task, its framework's principal otherwise", () => {
    expect(taskOwner(state, task('f1', [['cairn.marathon.app', '/web']]))).toBe('alice');
    expect(taskOwner(state, task('f2', [['cairn.job', 'train']]))).toBe('bob');
    expect(taskOwner(state, task('f3'))).toBe('carol');
  });

  it('is nobody for a task whose app is gone, has no owner, or carries no label', () => {
    expect(taskOwner(state, task('f1', [['cairn.marathon.app', '/gone']]))).toBe('');
    expect(taskOwner(state, task('f1', [['cairn.marathon.app', '/old']]))).toBe('');
    expect(taskOwner(state, task('f2'))).toBe('');
    expect(taskOwner(state, task('nope'))).toBe('');
  });
});
