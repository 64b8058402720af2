// One set of credentials for every daemon and command a test starts as a process: a user
// principal (`tester`, its secret as the CLI's CAIRN_TOKEN) and an agent principal, in a
// credentials file that masters read (CAIRN_CREDENTIALS) and agents take their entry from
// (CAIRN_AGENT_CREDENTIAL). `cairn up` reads the same file, so its clients agree.

import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CREDENTIALS_DIR_ENV } from './global-temp.ts';

export const TEST_USER = { principal: 'tester', secret: 'tester-secret-0123456789abcdef' };
export const TEST_AGENT = { principal: 'test-agent', secret: 'agent-secret-0123456789abcdef' };

let dir: string | undefined;

/**
 * The credentials file, mode 0600: in the test run's own directory (global-temp.ts), or, in a
 * process the test runner did not start (a bench), in one of its own removed at exit.
 */
export function testCredentialsFile(): string {
  if (!dir) {
    const shared = process.env[CREDENTIALS_DIR_ENV];
    if (shared) dir = shared;
    else {
      const made = mkdtempSync(join(tmpdir(), 'cairn-creds-'));
      process.on('exit', () => rmSync(made, { recursive: true, force: true }));
      dir = made;
    }
    const file = join(dir, 'credentials.json');
    if (!existsSync(file)) {
      // Test files side by side may write it at once: each writes its own copy and renames it
      // into place, so none reads a half-written file.
      const doc = { credentials: [{ ...TEST_USER }, { ...TEST_AGENT, agent: true }] };
      const part = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
      writeFileSync(part, JSON.stringify(doc), { mode: 0o600 });
      renameSync(part, file);
    }
  }
  return join(dir, 'credentials.json');
}

/** The environment a cairn process of a test runs with: its credentials, and a config dir of its own. */
export function credentialEnv(): Record<string, string> {
  const file = testCredentialsFile();
  return {
    CAIRN_CREDENTIALS: file,
    CAIRN_AGENT_CREDENTIAL: file,
    CAIRN_TOKEN: TEST_USER.secret,
    CAIRN_CONFIG_DIR: join(file, '..', 'config'),
  };
}

/** Headers for a test's own requests to a master. */
export function authHeaders(): Record<string, string> {
  return { authorization: `Bearer ${TEST_USER.secret}` };
}

/** fetch with the test principal's credential (harmless where a master asks for none). */
export function authFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, headers: { ...authHeaders(), ...(init.headers as Record<string, string> | undefined) } });
}

/** Headers for a test's own requests to an agent started by the harness: the agent's secret, as its masters send. */
export function agentAuthHeaders(): Record<string, string> {
  return { authorization: `Bearer ${TEST_AGENT.secret}` };
}
