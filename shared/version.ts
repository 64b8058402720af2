// Cairn's version, as package.json states it: what `cairn --version` prints, what an agent
// reports to the master when it registers and what the DNS API's /v1/version answers. Read
// once, when first imported.

import { readFileSync } from 'node:fs';

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    // An install without its package.json still runs; it cannot say which version it is.
    return '0.0.0';
  }
}

export const CAIRN_VERSION: string = readVersion();
