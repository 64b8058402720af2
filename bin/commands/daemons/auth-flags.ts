// The daemons' security flags turned into what master and agent take: the master's
// principals (a file of the operator's, or a bootstrap file made once in the data dir), its
// ACLs and open endpoints, and the agent's own credential.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { loadAgentCredential, type AgentCredential } from '../../../agent/entry.ts';
import { bootstrapCredentials, loadCredentials, MasterAuth, parseAcls, type BootstrapCredentials, type MasterAuthOptions } from '../../../master/entry.ts';
import type { Openable } from '../../../shared/openable.ts';
import { CairnError } from '../../../shared/errors.ts';

/** Fresh secrets: 192 bits, URL-safe, so they survive shells and headers unquoted. */
export const newSecret = (): string => randomBytes(24).toString('base64url');

/** The bootstrap credentials of a data dir (made on first use). */
export function bootstrapFor(dataDir: string): BootstrapCredentials {
  return bootstrapCredentials(join(dataDir, 'credentials.json'), newSecret);
}

export function masterAuthFromFlags(o: { credentials?: string; acls?: string; open?: Openable[] }, dataDir: string, log: Logger): MasterAuth {
  let credentials;
  if (o.credentials !== undefined) {
    credentials = loadCredentials(o.credentials);
  } else {
    const b = bootstrapFor(dataDir);
    if (b.created) log.warn({ file: b.path }, 'no --credentials given: made a bootstrap credentials file (principals admin and agent); give agents its agent entry with --credential and users the admin secret (CAIRN_TOKEN)');
    credentials = b.credentials;
  }
  return MasterAuth.on({ credentials, ...aclsAndOpen(o) });
}

/** `--acls FILE` read and checked, and `--open`: the rest of a master's MasterAuthOptions. */
export function aclsAndOpen(o: { acls?: string; open?: Openable[] }): Omit<MasterAuthOptions, 'credentials'> {
  let acls;
  if (o.acls !== undefined) {
    let text: string;
    try {
      text = readFileSync(o.acls, 'utf8');
    } catch (err) {
      throw new CairnError('CAIRN_BAD_FLAG', `cannot read ${o.acls}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'acls');
    }
    acls = parseAcls(text, o.acls);
  }
  return { ...(acls ? { acls } : {}), ...(o.open ? { open: o.open } : {}) };
}

/** `cairn agent`'s credential: --credential, else CAIRN_AGENT_CREDENTIAL; one is required. */
export function agentCredentialFromFlags(file: string | undefined, env: Readonly<Record<string, string | undefined>>): AgentCredential {
  const path = file ?? env.CAIRN_AGENT_CREDENTIAL;
  if (!path) {
    throw new CairnError('CAIRN_BAD_FLAG', 'an agent needs its credential to register: --credential FILE (or CAIRN_AGENT_CREDENTIAL); a master without --credentials made one in its data dir, credentials.json', 'credential');
  }
  return loadAgentCredential(path);
}
