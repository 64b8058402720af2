// The master's principals and ACLs as data: parsing errors name the field, the first
// matching rule decides, NONE denies, permissive decides the rest, and the rules no ACL
// lifts (owners, agent versus user principals) hold.

import { describe, expect, it } from 'vitest';
import { parseAcls } from '../../master/auth/acls.ts';
import { bootstrapCredentials, parseCredentials } from '../../master/auth/credentials.ts';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { CairnError } from '../../shared/errors.ts';

const S = (n: string) => `${n}-0123456789abcdef`;
const creds = () => parseCredentials(JSON.stringify({ credentials: [{ principal: 'alice', secret: S('alice') }, { principal: 'node-1', secret: S('node-1'), agent: true }] }));

function field(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as CairnError).field;
  }
  return 'no error';
}

describe('credentials', () => {
  it('refuses a malformed file naming the entry and field', () => {
    expect(field(() => parseCredentials('{'))).toBe('credentials');
    expect(field(() => parseCredentials('{"credentials": [{"principal": "a", "secret": "short"}]}'))).toBe('credentials.credentials[0].secret');
    expect(field(() => parseCredentials(`{"credentials": [{"principal": "a b", "secret": "${S('a')}"}]}`))).toBe('credentials.credentials[0].principal');
    expect(field(() => parseCredentials(`{"credentials": [{"principal": "a", "secret": "${S('a')}", "role": "x"}]}`))).toBe('credentials.credentials[0].role');
    expect(field(() => parseCredentials(`{"credentials": [{"principal": "a", "secret": "${S('a')}"}, {"principal": "b", "secret": "${S('a')}"}]}`))).toBe('credentials');
  });

  it('authenticates Bearer and Basic, and keeps agents and users apart', () => {
    const auth = MasterAuth.on({ credentials: creds() });
    expect(auth.authenticate({ authorization: `Bearer ${S('alice')}` }).name).toBe('alice');
    expect(auth.authenticate({ authorization: `Basic ${Buffer.from(`alice:${S('alice')}`).toString('base64')}` }).name).toBe('alice');
    expect(() => auth.authenticate({ authorization: `Basic ${Buffer.from(`alice:${S('node-1')}`).toString('base64')}` })).toThrow(/not valid/);
    expect(() => auth.authenticate({})).toThrow(expect.objectContaining({ code: 'CAIRN_UNAUTHENTICATED' }));
    expect(() => auth.authenticate({ authorization: `Bearer ${S('node-1')}` })).toThrow(expect.objectContaining({ code: 'CAIRN_FORBIDDEN' }));
    expect(() => auth.authenticate({ authorization: `Bearer ${S('alice')}` }, 'agent')).toThrow(expect.objectContaining({ code: 'CAIRN_FORBIDDEN' }));
    expect(auth.authenticate({ authorization: `Bearer ${S('node-1')}` }, 'agent').name).toBe('node-1');
    expect(auth.agentSecret('node-1')).toBe(S('node-1'));
    expect(auth.agentSecret('alice')).toBeUndefined();
  });

  it("authenticates DC/OS's token=SECRET as Bearer, and refuses a wrong one", () => {
    const auth = MasterAuth.on({ credentials: creds() });
    expect(auth.authenticate({ authorization: `token=${S('alice')}` }).name).toBe('alice');
    expect(auth.authenticate({ authorization: `Token=${S('alice')}` }).name).toBe('alice');
    expect(() => auth.authenticate({ authorization: 'token=not-a-secret-of-anyone' })).toThrow(expect.objectContaining({ code: 'CAIRN_UNAUTHENTICATED' }));
    expect(() => auth.authenticate({ authorization: `token= ${S('alice')}` })).toThrow(expect.objectContaining({ code: 'CAIRN_UNAUTHENTICATED' }));
    expect(auth.authenticate({ authorization: `token=${S('node-1')}` }, 'agent').name).toBe('node-1');
  });

  it('takes a caller without a credential as anonymous only where asked, never as an agent, and never one with a wrong credential', () => {
    const auth = MasterAuth.on({ credentials: creds(), open: ['scheduler'] });
    expect(auth.authenticate({}, 'user', true)).toEqual({ name: 'anonymous', kind: 'user' });
    expect(() => auth.authenticate({}, 'user')).toThrow(expect.objectContaining({ code: 'CAIRN_UNAUTHENTICATED' }));
    expect(() => auth.authenticate({}, 'agent', true)).toThrow(expect.objectContaining({ code: 'CAIRN_UNAUTHENTICATED' }));
    expect(() => auth.authenticate({ authorization: 'Bearer wrong-secret-0123456789' }, 'user', true)).toThrow(expect.objectContaining({ code: 'CAIRN_UNAUTHENTICATED' }));
    expect(auth.authenticate({ authorization: `Bearer ${S('alice')}` }, 'user', true).name).toBe('alice');
  });

  it("refuses --open scheduler beside a credential named 'anonymous', which every unauthenticated caller would act as", () => {
    const withAnonymous = parseCredentials(JSON.stringify({ credentials: [{ principal: 'anonymous', secret: S('anonymous') }] }));
    expect(() => MasterAuth.on({ credentials: withAnonymous, open: ['scheduler'] })).toThrow(/'anonymous'.*--open scheduler/);
    expect(MasterAuth.on({ credentials: withAnonymous, open: ['metrics'] }).enabled).toBe(true);
  });
});

describe('bootstrap credentials', () => {
  it('are made once (mode 600), read back on later starts, and a malformed file is refused naming the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-boot-'));
    try {
      const path = join(dir, 'credentials.json');
      let n = 0;
      const made = bootstrapCredentials(path, () => `secret-${++n}-0123456789abcdef`);
      expect(made.created).toBe(true);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(made.admin).toEqual({ principal: 'admin', secret: 'secret-1-0123456789abcdef' });
      expect(made.agent).toEqual({ principal: 'agent', secret: 'secret-2-0123456789abcdef' });
      const again = bootstrapCredentials(path, () => 'never-used-0123456789abcdef');
      expect(again.created).toBe(false);
      expect(again.admin.secret).toBe(made.admin.secret);
      expect(again.credentials.bySecretValue(made.agent.secret)?.kind).toBe('agent');
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, '{"credentials": [{"principal": "x", "secret": "short"}]}', { mode: 0o600 });
      expect(field(() => bootstrapCredentials(bad, () => 'unused'))).toBe(`${bad}.credentials[0].secret`);
      const usersOnly = join(dir, 'users.json');
      writeFileSync(usersOnly, `{"credentials": [{"principal": "u", "secret": "${S('u')}"}]}`, { mode: 0o600 });
      expect(() => bootstrapCredentials(usersOnly, () => 'unused')).toThrow(/lacks a user or an agent principal/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ACLs', () => {
  const acls = parseAcls(JSON.stringify({
    permissive: false,
    register_frameworks: [
      { principals: { values: ['bob'] }, roles: { type: 'NONE' } },
      { principals: { values: ['alice', 'bob'] }, roles: { values: ['ml', 'team/*'] } },
    ],
    run_tasks: [{ principals: { type: 'ANY' }, users: { values: ['nobody'] } }],
  }));

  it('lets the first rule matching principal and object decide; NONE denies; else permissive', () => {
    expect(acls.decide('register_frameworks', 'alice', 'ml').allowed).toBe(true);
    expect(acls.decide('register_frameworks', 'alice', 'team/alice').allowed).toBe(true);
    expect(acls.decide('register_frameworks', 'alice', 'prod').allowed).toBe(false);
    // bob's NONE rule comes first.
    expect(acls.decide('register_frameworks', 'bob', 'ml').allowed).toBe(false);
    expect(acls.decide('run_tasks', 'carol', 'nobody').allowed).toBe(true);
    expect(acls.decide('run_tasks', 'carol', 'root').allowed).toBe(false);
    expect(acls.decide('drain_agents', 'alice', 'h1').allowed).toBe(false);
    expect(parseAcls('{}').decide('drain_agents', 'alice', 'h1').allowed).toBe(true);
  });

  it('refuses a malformed file naming the field', () => {
    expect(field(() => parseAcls('{"launch_tasks": []}'))).toBe('acls.launch_tasks');
    expect(field(() => parseAcls('{"run_tasks": [{"principals": {"type": "ANY"}}]}'))).toBe('acls.run_tasks[0].users');
    expect(field(() => parseAcls('{"run_tasks": [{"principals": {"type": "ALL"}, "users": {"type": "ANY"}}]}'))).toBe('acls.run_tasks[0].principals.type');
    expect(field(() => parseAcls('{"run_tasks": [{"principals": {"values": []}, "users": {"type": "ANY"}}]}'))).toBe('acls.run_tasks[0].principals.values');
    expect(field(() => parseAcls('{"permissive": "no"}'))).toBe('acls.permissive');
  });

  it('lets a framework owner act on its own tasks whatever the ACLs say', () => {
    const auth = MasterAuth.on({ credentials: creds(), acls });
    const alice = { name: 'alice', kind: 'user' as const };
    expect(auth.mayActOn(alice, 'kill_tasks', 'alice')).toBe(true);
    expect(auth.mayActOn(alice, 'kill_tasks', 'bob')).toBe(false);
    expect(() => auth.requireOwner(alice, 'fw-1', 'bob', 'framework_id')).toThrow(/belongs to principal 'bob'/);
    // A master that authenticates no one checks nothing.
    expect(MasterAuth.off().mayActOn(alice, 'kill_tasks', 'bob')).toBe(true);
  });
});
