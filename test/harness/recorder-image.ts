// A local image whose command records what a task was given — its environment, its mounts,
// its resolvers, what its DMLC_PS_ROOT_URI resolves to and the data file SW2V_DATA names —
// on stdout, then runs until it is stopped: the stand-in for a registry image that tests of
// users' unchanged app files run instead (no registry is reachable). The recorder is the
// image's own default command, so an app with `cmd: null` runs it. Built with `docker import`
// from the host's busybox, like the busybox test image (docker.ts), plus glibc's `getent`
// (resolver-image.ts): the name is looked up by getaddrinfo through the container's
// /etc/resolv.conf, as any program in a glibc-based image looks names up.

import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { addGetent } from './resolver-image.ts';

const APPLETS = ['sh', 'env', 'grep', 'sed', 'awk', 'sort', 'cat', 'echo', 'sleep', 'wc', 'ls', 'test', '[', 'true', 'false', 'kill'];

/** Where the recorder lives in the image (its default command); `commandPaths` are links to it. */
export const RECORDER = '/bin/record-task';

/** How long the recorder tries to resolve DMLC_PS_ROOT_URI (its scheduler may start later). */
const RESOLVE_ATTEMPTS = 240;
const RESOLVE_EVERY_S = 0.5;

/**
 * The recorder. Its stdout, line by line:
 *   record begin
 *   args ARG...                      its arguments
 *   env NAME=VALUE                   the task's variables that Marathon, Mesos, Cairn, ps-lite and
 *                                    the word2vec seed set (LD_LIBRARY_PATH, SW2V_*)
 *   mount PATH OPTIONS               each mount (from /proc/mounts)
 *   resolver IP                      each nameserver the container was given
 *   resolved NAME ADDRESS            DMLC_PS_ROOT_URI's first IPv4 address, from getaddrinfo
 *                                    (`getent ahostsv4`: /etc/hosts, then those nameservers)
 *   unresolved NAME                  ...or that it never resolved
 *   data PATH BYTES                  the size of the file SW2V_DATA names
 *   nodata PATH                      ...or that it cannot read it
 *   record end
 */
const SCRIPT = `#!/bin/sh
echo "record begin"
echo "args $*"
env | grep -E '^(PORT[A-Z0-9_]*|PORTS|HOST|MARATHON_[A-Z0-9_]*|MESOS_[A-Z0-9_]*|CAIRN_[A-Z0-9_]*|DMLC_[A-Z0-9_]*|PS_[A-Z0-9_]*|SW2V_[A-Z0-9_]*|LD_LIBRARY_PATH)=' | sort | sed 's/^/env /'
awk '{ print "mount " $2 " " $4 }' /proc/mounts
awk '$1 == "nameserver" { print "resolver " $2 }' /etc/resolv.conf
if [ -n "$DMLC_PS_ROOT_URI" ]; then
  i=0
  addr=
  while [ $i -lt ${RESOLVE_ATTEMPTS} ]; do
    addr=$(getent ahostsv4 "$DMLC_PS_ROOT_URI" 2>/dev/null | awk 'NR == 1 { print $1 }')
    [ -n "$addr" ] && break
    i=$((i + 1))
    sleep ${RESOLVE_EVERY_S}
  done
  if [ -n "$addr" ]; then echo "resolved $DMLC_PS_ROOT_URI $addr"; else echo "unresolved $DMLC_PS_ROOT_URI"; fi
fi
if [ -n "$SW2V_DATA" ]; then
  if [ -r "$SW2V_DATA" ]; then echo "data $SW2V_DATA $(wc -c < "$SW2V_DATA")"; else echo "nodata $SW2V_DATA"; fi
fi
echo "record end"
trap 'exit 0' TERM INT
sleep 2147483 &
wait $!
`;

/** What one task's recorder wrote, parsed. */
export interface TaskRecord {
  args: string;
  env: Record<string, string>;
  /** Mount point → its options, e.g. `ro,relatime`. */
  mounts: Record<string, string>;
  resolvers: string[];
  /** DMLC_PS_ROOT_URI → its address; undefined when the recorder gave up. */
  resolved?: { name: string; address: string };
  unresolved?: string;
  /** SW2V_DATA → its size in bytes, or null where the task cannot read it; undefined without SW2V_DATA. */
  data?: { path: string; bytes: number | null };
}

/** The record in a task's stdout, or undefined until the recorder has written all of it. */
export function parseTaskRecord(stdout: string): TaskRecord | undefined {
  const lines = stdout.split('\n');
  const begin = lines.indexOf('record begin');
  const end = lines.indexOf('record end');
  if (begin < 0 || end < begin) return undefined;
  const r: TaskRecord = { args: '', env: {}, mounts: {}, resolvers: [] };
  for (const line of lines.slice(begin + 1, end)) {
    const sp = line.indexOf(' ');
    const kind = sp < 0 ? line : line.slice(0, sp);
    const rest = sp < 0 ? '' : line.slice(sp + 1);
    if (kind === 'args') r.args = rest;
    else if (kind === 'env') {
      const eq = rest.indexOf('=');
      if (eq > 0) r.env[rest.slice(0, eq)] = rest.slice(eq + 1);
    } else if (kind === 'mount') {
      const [path, options] = rest.split(' ');
      if (path) r.mounts[path] = options ?? '';
    } else if (kind === 'resolver') r.resolvers.push(rest);
    else if (kind === 'resolved') {
      const [name, address] = rest.split(' ');
      if (name && address) r.resolved = { name, address };
    } else if (kind === 'unresolved') r.unresolved = rest;
    else if (kind === 'data') {
      const [path, bytes] = rest.split(' ');
      if (path && bytes) r.data = { path, bytes: Number(bytes) };
    } else if (kind === 'nodata') r.data = { path: rest, bytes: null };
  }
  return r;
}

/**
 * Builds the recorder image once per content (its tag names a hash of the script and the
 * paths), with the recorder as its default command (an app with `cmd: null` runs it) and at
 * each of `commandPaths` too, so an app's own `cmd` (e.g. `/opt/sw2v/bin/sw2v -train ...`)
 * runs it. Returns the image's name.
 */
export async function ensureRecorderImage(commandPaths: readonly string[] = []): Promise<string> {
  for (const p of commandPaths) {
    if (!posix.isAbsolute(p) || p.split('/').includes('..')) throw new Error(`'${p}' must be an absolute path in the image`);
  }
  const hash = createHash('sha256').update(SCRIPT).update('\0').update(commandPaths.join('\0')).digest('hex').slice(0, 12);
  const image = `cairn-test/task-recorder:${hash}`;
  const docker = new Docker();
  if (await docker.getImage(image).inspect().then(() => true, () => false)) return image;
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) throw new Error('busybox is needed to build the recorder image (apt-get install busybox-static)');
  const root = mkdtempSync(join(tmpdir(), 'cairn-recorder-image-'));
  try {
    for (const d of ['bin', 'tmp', 'etc']) mkdirSync(join(root, d));
    copyFileSync(busybox, join(root, 'bin', 'busybox'));
    for (const a of APPLETS) symlinkSync('busybox', join(root, 'bin', a));
    addGetent(root);
    writeFileSync(join(root, RECORDER), SCRIPT);
    chmodSync(join(root, RECORDER), 0o755);
    for (const p of commandPaths) {
      mkdirSync(join(root, dirname(p)), { recursive: true });
      if (!existsSync(join(root, p))) symlinkSync(RECORDER, join(root, p));
    }
    const tar = execFileSync('tar', ['-C', root, '-c', '.'], { maxBuffer: 256 * 1024 * 1024 });
    execFileSync('docker', ['import', '-c', 'ENV PATH=/bin:/usr/bin', '-c', `CMD ["${RECORDER}"]`, '-', image], { input: tar });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return image;
}
