// Which containers are this agent's. Every container an agent launches carries its work
// dir's instance id (a random id kept in the work dir, made once), and only containers
// with that id are adopted after a restart or removed when in a task's way. A Docker
// daemon is shared by everything on the host — other agents, other installs, tests — and
// agent ids say too little: a container launched before the agent had one carried an
// empty id that every later agent took for its own, then died writing its logs into a
// sandbox that was not there.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTAINER_SANDBOX, LABEL_AGENT_ID, LABEL_AGENT_INSTANCE, LABEL_TASK_ID } from './container-config.ts';

/** The file in the work dir that holds its instance id. */
export const INSTANCE_FILE = 'agent-instance';

const INSTANCE_PATTERN = /^[0-9a-f]{32}$/;

/** The work dir's instance id, made (and kept) on first use. */
export function workDirInstance(workDir: string): string {
  const path = join(workDir, INSTANCE_FILE);
  try {
    const id = readFileSync(path, 'utf8').trim();
    if (INSTANCE_PATTERN.test(id)) return id;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(workDir, { recursive: true });
  const id = randomBytes(16).toString('hex');
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${id}\n`, { mode: 0o644 });
  renameSync(tmp, path);
  return id;
}

/** What Docker's container list says of a container (the parts read here). */
export interface ListedContainer {
  Id: string;
  Names?: string[];
  Labels: Record<string, string>;
  Mounts?: { Source?: string; Destination?: string }[];
}

export interface Owner {
  instance: string;
  /** The agent id this agent has (stored or given); undefined before it has one. */
  agentId: string | undefined;
  /** Where a task's sandbox is in this agent's work dir. */
  sandboxOf: (taskId: string) => string;
}

export type Ownership = { ours: true } | { ours: false; why: string };

/**
 * Whether a container is this agent's. With an instance label, it must be this work dir's.
 * Without one (launched by an older Cairn), its agent id must be this agent's (never
 * empty) and its sandbox this work dir's sandbox for the task.
 */
export function containerOwnership(c: ListedContainer, me: Owner): Ownership {
  const taskId = c.Labels[LABEL_TASK_ID];
  if (!taskId) return { ours: false, why: 'it names no task' };
  const instance = c.Labels[LABEL_AGENT_INSTANCE];
  if (instance !== undefined) {
    return instance === me.instance ? { ours: true } : { ours: false, why: `it was launched from another agent work dir (instance ${instance.slice(0, 64)})` };
  }
  const agentId = c.Labels[LABEL_AGENT_ID] ?? '';
  if (agentId === '') return { ours: false, why: 'it carries no agent id' };
  if (me.agentId === undefined || agentId !== me.agentId) return { ours: false, why: `it belongs to agent ${agentId.slice(0, 256)}` };
  const sandbox = (c.Mounts ?? []).find((m) => m.Destination === CONTAINER_SANDBOX)?.Source;
  if (sandbox !== me.sandboxOf(taskId)) return { ours: false, why: `its sandbox ${sandbox ?? '(none)'} is not in this agent's work dir` };
  return { ours: true };
}
