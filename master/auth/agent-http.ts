// How a master calls an agent's own HTTP API (logs, usage, drains relayed): its base URL and
// the credential the master presents, the agent's own secret, which only it and the masters hold.

import type { MasterAuth } from './master-auth.ts';
import type { AgentRecord } from '../registry/commands.ts';

/** The agent's own HTTP endpoint (logs, usage). */
export function agentBaseUrl(agent: Pick<AgentRecord, 'ip' | 'httpPort' | 'https'>): string {
  return `${agent.https ? 'https' : 'http'}://${agent.ip.includes(':') ? `[${agent.ip}]` : agent.ip}:${agent.httpPort}`;
}

/** What the master presents to an agent's API: the agent's own secret, which only it and the masters hold. */
export function agentAuthHeaders(auth: Pick<MasterAuth, 'agentSecret'>, agent: Pick<AgentRecord, 'principal'>): Record<string, string> {
  const secret = auth.agentSecret(agent.principal);
  return secret ? { authorization: `Bearer ${secret}` } : {};
}
