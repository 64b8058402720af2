// Two tenants and an operator on one master with strict ACLs (`permissive: false`), as the
// issue-22 probes ran: principals admin, alice and bob, one agent principal; alice and bob
// may register in role `*` and view only their own work, admin views everything.

import { MasterAuth } from '../../master/auth/master-auth.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { parseAcls } from '../../master/auth/acls.ts';

export const TENANTS = ['admin', 'alice', 'bob'] as const;
export type Tenant = (typeof TENANTS)[number];

export const tenantSecret = (name: string) => `${name}-secret-0123456789abcdef`;
export const tenantBearer = (u: Tenant) => ({ authorization: `Bearer ${tenantSecret(u)}` });
export const TENANT_AGENT = { principal: 'agent-1', secret: tenantSecret('agent-1'), agent: true };

/** The strict ACLs, plus `extra` actions (e.g. use_priority_classes). */
export function strictTenantAuth(extra: Record<string, unknown> = {}): MasterAuth {
  const credentials = parseCredentials(JSON.stringify({ credentials: [...TENANTS.map((u) => ({ principal: u, secret: tenantSecret(u) })), TENANT_AGENT] }), 'test');
  const acls = parseAcls(JSON.stringify({
    permissive: false,
    register_frameworks: [{ principals: { values: ['admin', 'alice', 'bob'] }, roles: { values: ['*'] } }],
    run_tasks: [{ principals: { type: 'ANY' }, users: { type: 'ANY' } }],
    view_tasks: [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }],
    ...extra,
  }), 'acls');
  return MasterAuth.on({ credentials, acls });
}
