// Docker for tests: whether a daemon answers, and a tiny local image made with
// `docker import` from the host's busybox (no registry is reachable).

import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, copyFileSync, mkdirSync } from 'node:fs';
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
