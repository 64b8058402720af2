// Whether a piece of shell text is whole commands — no open quote, loop, `if` or continuation —
// as bash itself judges it (bash -n: parsed, not run). readme-blocks.ts splits steps with it.

import { execFileSync } from 'node:child_process';

export function bashComplete(text: string): boolean {
  try {
    execFileSync('bash', ['-n'], { input: text, stdio: ['pipe', 'ignore', 'ignore'] });
    return true;
  } catch {
    return false;
  }
}
