// The size of a file, or undefined when there is none: how stores tell a new data dir (no
// file yet) from one whose file was emptied (0 bytes).

import { statSync } from 'node:fs';

export function fileSize(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}
