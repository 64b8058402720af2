// Removes the task resolver addresses (agent/task-dns/address.ts) of agents a test killed:
// a clean stop removes its own, SIGKILL leaves it on the loopback interface. Each agent
// writes its address to <work dir>/task-dns/address; only addresses found there, under the
// test's own directories, are removed.

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

function addressFiles(dir: string, depth: number): string[] {
  const here = join(dir, 'task-dns', 'address');
  const out = existsSync(here) ? [here] : [];
  if (depth === 0) return out;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory() && e.name !== 'sandboxes').map((e) => e.name);
  } catch {
    return out;
  }
  for (const e of entries) out.push(...addressFiles(join(dir, e), depth - 1));
  return out;
}

export function removeTaskDnsAddressesUnder(dirs: readonly string[]): void {
  for (const dir of dirs) {
    for (const file of addressFiles(dir, 3)) {
      const address = readFileSync(file, 'utf8').trim();
      if (!/^169\.254\.53\.\d+$/.test(address)) continue;
      try {
        const shown = execFileSync('ip', ['-o', 'addr', 'show', 'dev', 'lo', 'to', `${address}/32`], { encoding: 'utf8' });
        if (shown.includes('lo:cairn')) execFileSync('ip', ['addr', 'del', `${address}/32`, 'dev', 'lo'], { stdio: 'ignore' });
      } catch {
        // gone already
      }
    }
  }
}
