// The operator's allow-list of host paths containers may mount (`cairn agent
// --host-path-allow DIR[,DIR...]`): a volume's host path must be one of these directories or
// lie under one, after symlinks are resolved (a link planted inside an allowed directory
// that points at / is judged where it points). None by default: a container then mounts
// nothing of the host but its own sandbox. Whatever the flag says, the host's root, the
// Docker daemon's socket (the agent's `--docker-socket`) and the agent's own directories
// (work dir, job dirs) are never allowed: a flag naming one, or a directory that holds one,
// is refused at start, naming it.

import { realpathSync } from 'node:fs';
import { dirname, basename, join, resolve } from 'node:path';
import { CairnError } from '../../../shared/errors.ts';
import { hostPathProblem, isWithin } from '../../../shared/host-paths.ts';

/** The flag, for messages. */
export const HOST_PATH_FLAG = '--host-path-allow';

export interface HostPathGuards {
  /** The Docker daemon's socket the agent talks to. */
  dockerSocket: string;
  /** The agent's own directories (work dir, job dirs): never a container's to mount. */
  ownDirs: readonly string[];
}

/** Resolves symlinks in the longest part of `path` that exists; the rest is kept as written. */
export function resolveExisting(path: string, realpath: (p: string) => string = realpathSync): string {
  const rest: string[] = [];
  let at = path;
  for (;;) {
    try {
      return rest.length === 0 ? realpath(at) : join(realpath(at), ...rest.reverse());
    } catch {
      if (at === '/') return path;
      rest.push(basename(at));
      at = dirname(at);
    }
  }
}

export class HostPathAllowList {
  private constructor(
    /** As given (normalised), for messages. */
    readonly dirs: readonly string[],
    /** The same with symlinks resolved, what paths are judged against. */
    private readonly real: readonly string[],
    private readonly realpath: (p: string) => string,
  ) {}

  /** An allow-list that lets nothing in (the default). */
  static none(): HostPathAllowList {
    return new HostPathAllowList([], [], realpathSync);
  }

  /**
   * Checks the flag's directories once, at start: each absolute and normalised, none that a
   * container must never reach (shared/host-paths.ts), none that is or holds the Docker socket
   * or one of the agent's own directories, and none inside one of those.
   */
  static compile(dirs: readonly string[], guards: HostPathGuards, realpath: (p: string) => string = realpathSync): HostPathAllowList {
    const given: string[] = [];
    const real: string[] = [];
    const socket = resolveExisting(resolve(guards.dockerSocket), realpath);
    const own = guards.ownDirs.flatMap((d) => [resolve(d), resolveExisting(resolve(d), realpath)]);
    for (const raw of dirs) {
      const dir = raw.trim();
      if (dir === '') continue;
      const refuse = (why: string): never => {
        throw new CairnError('CAIRN_BAD_FLAG', `${HOST_PATH_FLAG} '${dir}' ${why}`, 'hostPathAllow');
      };
      const wrong = hostPathProblem(dir);
      if (wrong) refuse(wrong);
      const r = resolveExisting(dir, realpath);
      if (r === '/') refuse("resolves to the host's root");
      const again = hostPathProblem(r);
      if (again) refuse(`resolves to '${r}', which ${again}`);
      if (isWithin(resolve(guards.dockerSocket), dir) || isWithin(socket, r)) refuse(`holds the Docker daemon's socket (${guards.dockerSocket})`);
      for (const d of own) {
        if (isWithin(d, r) || isWithin(r, d) || isWithin(d, dir) || isWithin(dir, d)) refuse(`overlaps the agent's own directory ${d}`);
      }
      given.push(dir);
      real.push(r);
    }
    return new HostPathAllowList(given, real, realpath);
  }

  /** Why a container may not mount `hostPath` from this host, or undefined where it may. */
  refusal(hostPath: string): string | undefined {
    const wrong = hostPathProblem(hostPath);
    if (wrong) return `host path '${hostPath}' ${wrong}`;
    if (this.dirs.length === 0) return `host path '${hostPath}' is not allowed: this agent lets containers mount no host path (${HOST_PATH_FLAG} names none)`;
    const r = resolveExisting(hostPath, this.realpath);
    if (this.real.some((d) => isWithin(r, d))) return undefined;
    const where = r === hostPath ? '' : ` (it resolves to '${r}')`;
    return `host path '${hostPath}'${where} is not under a directory of this agent's ${HOST_PATH_FLAG} (${this.dirs.join(', ')})`;
  }
}
