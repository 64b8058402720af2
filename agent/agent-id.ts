// The agent's id, kept in `<workDir>/agent-id` so a restarted agent re-registers as the
// same agent. Written durably: a crash leaves either the old file or the new one, whole.

import { open, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export function agentIdPath(workDir: string): string {
  return join(workDir, 'agent-id');
}

/** The stored id, or '' when there is none yet. */
export async function readAgentId(workDir: string): Promise<string> {
  try {
    return (await readFile(agentIdPath(workDir), 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

/** Writes a temporary file, fsyncs it, renames it over the old one, then fsyncs the directory. */
export async function writeAgentId(workDir: string, agentId: string): Promise<void> {
  const path = agentIdPath(workDir);
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, `${agentId}\n`, { mode: 0o644 });
  const fh = await open(tmp, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  const dir = await open(workDir, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
