// A local image for resolver tests (no registry is reachable): busybox for the shell and nc,
// and the host's glibc `getent` with the libraries it loads, so that a container looks names
// up through glibc's getaddrinfo and /etc/resolv.conf as a program in any Debian-based image
// does (busybox's own lookups would not).

import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const RESOLVER_IMAGE = 'cairn-test/getent:latest';
const APPLETS = ['sh', 'echo', 'cat', 'nc', 'head', 'sleep', 'true', 'tr', 'cut'];

/**
 * Puts the host's glibc `getent` into the image tree at `root`, with the loader and every
 * library it loads at the paths ldd names, and an /etc/nsswitch.conf and /etc/hosts that send
 * host lookups to /etc/resolv.conf's nameservers: `getent ahostsv4 NAME` in the container is
 * then the system resolver's answer, as in any glibc-based image.
 */
export function addGetent(root: string): void {
  const put = (file: string) => {
    const to = join(root, file);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(file, to);
  };
  put('/usr/bin/getent');
  const ldd = execFileSync('ldd', ['/usr/bin/getent'], { encoding: 'utf8' });
  for (const m of ldd.matchAll(/(\/\S+)/g)) if (existsSync(m[1]!)) put(m[1]!);
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(join(root, 'etc', 'nsswitch.conf'), 'hosts: files dns\n');
  writeFileSync(join(root, 'etc', 'hosts'), '127.0.0.1 localhost\n');
}

export async function ensureResolverImage(): Promise<void> {
  const docker = new Docker();
  if (await docker.getImage(RESOLVER_IMAGE).inspect().then(() => true, () => false)) return;
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) throw new Error('busybox is needed to build the resolver image (apt-get install busybox-static)');
  const root = mkdtempSync(join(tmpdir(), 'cairn-image-'));
  try {
    for (const d of ['bin', 'tmp', 'etc']) mkdirSync(join(root, d));
    copyFileSync(busybox, join(root, 'bin', 'busybox'));
    for (const a of APPLETS) symlinkSync('busybox', join(root, 'bin', a));
    addGetent(root);
    const tar = execFileSync('tar', ['-C', root, '-c', '.'], { maxBuffer: 256 * 1024 * 1024 });
    execFileSync('docker', ['import', '-c', 'ENV PATH=/bin:/usr/bin', '-', RESOLVER_IMAGE], { input: tar });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
