// Removes the Docker containers that agents of a test launched, found by the instance id
// each agent keeps in its work dir. An agent killed with SIGKILL, or a test that failed
// before it killed its tasks, leaves them running; the next agent on the host then finds
// containers with Cairn's labels that are not its own.

import Docker from 'dockerode';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTANCE_FILE } from '../../agent/executors/docker/ownership.ts';
import { LABEL_AGENT_INSTANCE } from '../../agent/executors/docker/container-config.ts';

const SOCKET = '/var/run/docker.sock';
/** How deep below a test's directory an agent work dir may lie (`cairn up` nests them). */
const MAX_DEPTH = 3;

/** The instance ids of the agent work dirs at or below these directories. */
export function agentInstancesUnder(dirs: readonly string[]): Set<string> {
  const found = new Set<string>();
  const visit = (dir: string, depth: number): void => {
    try {
      const id = readFileSync(join(dir, INSTANCE_FILE), 'utf8').trim();
      if (id) found.add(id);
    } catch {
      // not an agent work dir
    }
    if (depth >= MAX_DEPTH) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) visit(join(dir, e.name), depth + 1);
  };
  for (const d of dirs) visit(d, 0);
  return found;
}

/** Force-removes every container launched from an agent work dir at or below these directories. */
export async function removeContainersUnder(dirs: readonly string[]): Promise<void> {
  if (dirs.length === 0 || !existsSync(SOCKET)) return;
  const instances = agentInstancesUnder(dirs);
  if (instances.size === 0) return;
  const docker = new Docker({ socketPath: SOCKET });
  let list: Docker.ContainerInfo[];
  try {
    list = await docker.listContainers({ all: true, filters: { label: [LABEL_AGENT_INSTANCE] } });
  } catch {
    return; // no daemon answers: nothing of ours can be running in it
  }
  const ours = list.filter((c) => instances.has(c.Labels[LABEL_AGENT_INSTANCE] ?? ''));
  await Promise.all(ours.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
}
