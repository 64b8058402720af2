// Docker for tests: whether a daemon answers, and a tiny local image made with
// `docker import` from the host's busybox (no registry is reachable).

import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TEST_IMAGE = 'cairn-test/busybox:latest';
const BUSYBOX_APPLETS = ['sh', 'echo', 'cat', 'sleep', 'ls', 'env', 'head', 'tail', 'true', 'false', 'dd', 'trap', 'kill', 'wc', 'test', '['];

/** Undefined when Docker is usable, else why not (for a skip message). */
export async function dockerUnavailable(): Promise<string | undefined> {
  if (!existsSync('/var/run/docker.sock')) return 'no Docker daemon socket at /var/run/docker.sock';
  try {
    await new Docker().ping();
    return undefined;
  } catch (err) {
    return `Docker daemon does not answer: ${(err as Error).message}`;
  }
}

export async function ensureTestImage(): Promise<void> {
  const docker = new Docker();
  if (await docker.getImage(TEST_IMAGE).inspect().then(() => true, () => false)) return;
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) throw new Error('busybox is needed to build the test image (apt-get install busybox-static)');
  const root = mkdtempSync(join(tmpdir(), 'cairn-image-'));
  try {
    mkdirSync(join(root, 'bin'));
    mkdirSync(join(root, 'tmp'));
    copyFileSync(busybox, join(root, 'bin', 'busybox'));
    for (const a of BUSYBOX_APPLETS) symlinkSync('busybox', join(root, 'bin', a));
    const tar = execFileSync('tar', ['-C', root, '-c', '.'], { maxBuffer: 256 * 1024 * 1024 });
    execFileSync('docker', ['import', '-c', 'ENV PATH=/bin', '-', TEST_IMAGE], { input: tar });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Undefined when the daemon has the named OCI runtime registered, else why not (for a skip message). */
export async function dockerRuntimeMissing(name: string): Promise<string | undefined> {
  const why = await dockerUnavailable();
  if (why) return why;
  const info = (await new Docker().info()) as { Runtimes?: Record<string, unknown> };
  const has = Object.keys(info.Runtimes ?? {});
  return has.includes(name) ? undefined : `the Docker daemon has no '${name}' runtime registered (it has: ${has.join(', ')})`;
}

/**
 * The program a setuid-root image carries: it asks for uid and gid 0 and runs `sh -c ARG`.
 * Where the kernel honours the setuid bit it becomes root; under no-new-privileges its
 * setuid(0) fails and it says so.
 */
const ESCALATE_C = `#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (setgid(0) != 0 || setuid(0) != 0) { perror("escalate: setuid(0)"); return 1; }
  execl("/bin/sh", "sh", "-c", argc > 1 ? argv[1] : "id -u", (char *)0);
  perror("escalate: exec");
  return 1;
}
`;

/** Undefined where a C compiler can build the setuid image's program, else why not. */
export function setuidImageUnbuildable(): string | undefined {
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'no C compiler (cc) to build the setuid test program';
  }
}

/**
 * A busybox image (as TEST_IMAGE) whose /suid/escalate is a static program owned by root
 * with the setuid bit set: what a hostile image brings to regain uid 0. Imported under
 * `tag`; the caller removes it.
 */
export function buildSetuidImage(tag: string): void {
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) throw new Error('busybox is needed to build the test image (apt-get install busybox-static)');
  const root = mkdtempSync(join(tmpdir(), 'cairn-suid-image-'));
  try {
    for (const d of ['bin', 'tmp', 'suid', 'src']) mkdirSync(join(root, d));
    copyFileSync(busybox, join(root, 'bin', 'busybox'));
    for (const a of [...BUSYBOX_APPLETS, 'id']) symlinkSync('busybox', join(root, 'bin', a));
    writeFileSync(join(root, 'src', 'escalate.c'), ESCALATE_C);
    execFileSync('cc', ['-static', '-O2', '-o', join(root, 'suid', 'escalate'), join(root, 'src', 'escalate.c')]);
    rmSync(join(root, 'src'), { recursive: true });
    chmodSync(join(root, 'suid', 'escalate'), 0o4755);
    const tar = execFileSync('tar', ['--owner=0', '--group=0', '-C', root, '-c', '.'], { maxBuffer: 256 * 1024 * 1024 });
    execFileSync('docker', ['import', '-c', 'ENV PATH=/bin', '-', tag], { input: tar });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
