// Which host paths a container task may name as a volume, as far as the master can tell.
// The agent's operator allow-list (`cairn agent --host-path-allow`, agent/executors/docker/
// host-path-allow.ts) is what decides; the master refuses at submit what no agent may ever
// mount, so that such a request is refused naming its field instead of failing at launch:
// a path that is not absolute or not normalised (`.`, `..`, `//`, a trailing `/`), the host's
// root, the kernel's and the devices' views (/proc, /sys, /dev), its configuration (/etc,
// where the password hashes live), and the Docker daemon's socket at its usual places (or a
// directory holding it). Pure: no file is looked at.

/** Directories that are refused with everything under them. */
const FORBIDDEN_TREES = ['/proc', '/sys', '/dev', '/etc', '/boot'] as const;

/** The Docker daemon's socket where distributions put it; it and its directories are refused. */
export const DOCKER_SOCKETS = ['/var/run/docker.sock', '/run/docker.sock'] as const;

/** Whether `path` is `dir` or lies under it (both normalised absolute paths). */
export function isWithin(path: string, dir: string): boolean {
  return dir === '/' || path === dir || path.startsWith(`${dir}/`);
}

/**
 * Why `path` can never be a container's host path, or undefined where an agent's allow-list
 * may let it in. The reason reads after the path: "'/etc' is ...".
 */
export function hostPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must be an absolute path';
  if (path.includes('\0')) return 'must not hold a NUL byte';
  const parts = path.split('/').slice(1);
  if (parts.some((p) => p === '..')) return "must not have '..' parts";
  if (path !== '/' && parts.some((p) => p === '.' || p === '')) return "must be a normalised path (no '.' parts, '//' or trailing '/')";
  if (path === '/') return "is the host's root: a container never mounts it";
  for (const tree of FORBIDDEN_TREES) {
    if (isWithin(path, tree)) return `is under ${tree}, which a container never mounts from the host`;
  }
  for (const socket of DOCKER_SOCKETS) {
    if (isWithin(socket, path)) return `${path === socket ? 'is' : 'holds'} the Docker daemon's socket (${socket}): a container never mounts it`;
  }
  return undefined;
}
