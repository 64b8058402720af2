// A small disk for tests of what a daemon does when its data dir fills up: a tmpfs of a few
// MiB mounted on a fresh directory (needs root), a filler file that takes every byte left,
// and its removal. unmount() is safe to call after a partial setup and removes the directory.

import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Why a tmpfs cannot be mounted here, or undefined when it can. */
export function smallDiskUnusable(): string | undefined {
  if (process.platform !== 'linux') return 'a tmpfs needs Linux';
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  const probe = new SmallDisk(1);
  try {
    probe.mount();
  } catch (err) {
    return `'mount -t tmpfs' is not usable: ${(err as Error).message.split('\n')[0]}`;
  } finally {
    probe.unmount();
  }
  return undefined;
}

export class SmallDisk {
  readonly dir: string;
  private mounted = false;
  private readonly filler: string;

  /** `dir`: where to mount it (made if missing); default a fresh directory under the system's temp dir. */
  constructor(readonly sizeMiB: number, dir?: string) {
    if (dir !== undefined) mkdirSync(dir, { recursive: true });
    this.dir = dir ?? mkdtempSync(join(tmpdir(), 'cairn-small-disk-'));
    this.filler = join(this.dir, 'filler');
  }

  mount(): this {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${this.sizeMiB}m,mode=0700`, 'tmpfs', this.dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.mounted = true;
    return this;
  }

  /** Takes every byte left with a filler file; returns how many it took. */
  fill(): number {
    const fd = openSync(this.filler, 'a');
    let taken = 0;
    try {
      // Large writes first, then smaller ones for what is left of the last blocks.
      for (const size of [1 << 20, 1 << 16, 4096, 1]) {
        const chunk = Buffer.alloc(size, 0x5a);
        try {
          for (;;) taken += writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        }
      }
    } finally {
      closeSync(fd);
    }
    return taken;
  }

  /** Gives the filler's space back. */
  free(): void {
    try {
      unlinkSync(this.filler);
    } catch {
      // not filled
    }
  }

  unmount(): void {
    if (this.mounted) {
      // Lazily: a daemon the test killed may hold a file open for a moment longer.
      execFileSync('umount', ['-l', this.dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      this.mounted = false;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
