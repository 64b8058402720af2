// Run once by the test runner before any test file (vitest.config.ts globalSetup): the
// directory that holds the test credentials (credentials.ts) for the whole run, removed when
// the run ends. A per-process directory cleaned up on 'exit' was left behind once per test
// file, since the runner ends its workers without that event.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CREDENTIALS_DIR_ENV = 'CAIRN_TEST_CREDENTIALS_DIR';

export default function setup(): (() => void) | undefined {
  // Each project of the run may call this; the first one's directory serves them all.
  if (process.env[CREDENTIALS_DIR_ENV]) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'cairn-creds-'));
  process.env[CREDENTIALS_DIR_ENV] = dir;
  return () => {
    rmSync(dir, { recursive: true, force: true });
    delete process.env[CREDENTIALS_DIR_ENV];
  };
}
