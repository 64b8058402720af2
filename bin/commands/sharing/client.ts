// The sharing API as the command line reads it (master/api/sharing-rest.ts): roles and
// principals with their usage, quotas, preemptions. Through ../common/master-api-client.ts,
// so a write sent to a follower reaches the leader with the credential kept, and a master
// that cannot be reached makes way for the next one given.

import type { Amounts, PrincipalRow, RoleRow, PreemptionRecord, QuotaJson } from '../../../shared/sharing/views.ts';
import { MasterApiClient } from '../common/master-api-client.ts';

/** GET /api/v1/roles. */
export interface RolesAnswer {
  weights: Record<string, number>;
  priorityClasses: { names: string[]; default: string };
  total: Amounts;
  roles: RoleRow[];
  principals: PrincipalRow[];
  /** When the agents were asked for usage samples, and how many of those asked answered. */
  usageSample: { atMs: number | null; agentsAsked: number; agentsAnswered: number };
}

/** What PUT /api/v1/quotas/:role takes: the whole quota, replacing the role's present one. */
export interface QuotaBody {
  guarantee: Partial<Amounts>;
  limit?: Partial<Amounts>;
}

export class SharingClient extends MasterApiClient {
  /** Without `usage`, the master answers without asking the agents for samples (`used` is null). */
  roles(opts: { usage: boolean } = { usage: true }): Promise<RolesAnswer> {
    return this.json('GET', opts.usage ? '/api/v1/roles' : '/api/v1/roles?usage=false', 'reading the roles');
  }

  async quotas(): Promise<QuotaJson[]> {
    return (await this.json<{ quotas: QuotaJson[] }>('GET', '/api/v1/quotas', 'listing quotas')).quotas;
  }

  setQuota(role: string, body: QuotaBody): Promise<QuotaJson> {
    return this.json('PUT', `/api/v1/quotas/${encodeURIComponent(role)}`, `setting the quota of ${role}`, { body: JSON.stringify(body), contentType: 'application/json' });
  }

  async removeQuota(role: string): Promise<void> {
    await this.json('DELETE', `/api/v1/quotas/${encodeURIComponent(role)}`, `removing the quota of ${role}`);
  }

  async preemptions(): Promise<PreemptionRecord[]> {
    return (await this.json<{ preemptions: PreemptionRecord[] }>('GET', '/api/v1/preemptions', 'listing preemptions')).preemptions;
  }

  private async json<T>(method: string, path: string, what: string, send?: { body: string; contentType: string }): Promise<T> {
    return JSON.parse(await this.request(method, path, what, send)) as T;
  }
}
