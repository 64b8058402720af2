// What this agent offers: the host's measured resources, with `--resources` overriding
// whichever names it gives (so `cpus:2;mem:1024` keeps the measured disk, GPUs and ports).
//
// Measuring is a thin shell over systeminformation and nvidia-smi; everything that decides
// numbers (reserves, the merge, GPU indices) is a pure function below it.

import si from 'systeminformation';
import { realpath, statfs } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { CairnError } from '../../shared/errors.ts';
import { Resources, SCALAR_NAMES, type PortRange } from '../../shared/resources.ts';
import { queryNvidiaSmi, type NvidiaGpu, type NvidiaSmiResult } from './nvidia-smi.ts';

/** Mesos' default agent port range. */
export const DEFAULT_PORTS: readonly PortRange[] = [{ begin: 31000, end: 32000 }];

const MIB = 1024 * 1024;

/** Raw facts about the host, before reserves. */
export interface HostFacts {
  /** Logical CPUs. */
  cpus: number;
  memTotalMiB: number;
  /** Free space on the filesystem holding the work directory. */
  diskAvailableMiB: number;
  gpus: NvidiaGpu[];
  /** Why GPU discovery found nothing, when it could not run; for the log. */
  gpuReason?: string;
  /** Lines of nvidia-smi output that were skipped. */
  gpuErrors: string[];
}

/**
 * Memory kept back for the operating system and the agent itself: 1 GiB, or half of a
 * small machine (Mesos' rule).
 */
export function memReserveMiB(totalMiB: number): number {
  return Math.min(1024, totalMiB / 2);
}

/** Disk kept back on the work directory's filesystem so logs and the agent never fill it. */
export function diskReserveMiB(availableMiB: number): number {
  return Math.min(1024, availableMiB / 2);
}

/** The resources the host offers when nothing overrides them. */
export function measuredResources(facts: HostFacts): Resources {
  return Resources.of({
    cpus: facts.cpus,
    mem: Math.max(0, Math.floor(facts.memTotalMiB - memReserveMiB(facts.memTotalMiB))),
    disk: Math.max(0, Math.floor(facts.diskAvailableMiB - diskReserveMiB(facts.diskAvailableMiB))),
    gpus: facts.gpus.length,
    ports: DEFAULT_PORTS,
  });
}

/** The resource names a Mesos text form mentions (role suffixes removed). */
export function namesIn(text: string): Set<string> {
  const names = new Set<string>();
  for (const raw of text.split(';')) {
    const part = raw.trim();
    const colon = part.indexOf(':');
    if (colon <= 0) continue;
    names.add(part.slice(0, colon).trim().replace(/\([^)]*\)$/, ''));
  }
  return names;
}

/**
 * Per resource name: the override's value where the override names it, else the measured
 * one. Throws CairnError (field `resources...`) on a malformed override.
 */
export function mergeResources(measured: Resources, overrideText: string | undefined, field = 'resources'): Resources {
  if (overrideText === undefined || overrideText.trim() === '') return measured;
  const override = Resources.parse(overrideText, field);
  const named = namesIn(overrideText);
  const init: Record<string, number> = {};
  for (const n of SCALAR_NAMES) init[n] = named.has(n) ? override.get(n) : measured.get(n);
  return Resources.of({ ...init, ports: named.has('ports') ? override.ports : measured.ports });
}

/** Checks an override before anything is measured or connected (flags fail fast). */
export function validateResourcesOverride(overrideText: string | undefined, field = 'resources'): void {
  if (overrideText === undefined) return;
  const parsed = Resources.parse(overrideText, field);
  if (!Number.isInteger(parsed.gpus)) {
    throw new CairnError('CAIRN_BAD_RESOURCES', `gpus must be a whole number, got ${parsed.gpus}`, `${field}.gpus`);
  }
}

/**
 * The device indices behind the agent's `gpus` count: the measured devices in index order,
 * first. When the count exceeds what nvidia-smi found (an operator declaring GPUs on a host
 * without the driver, as test clusters do), further indices continue after the highest
 * measured one; `synthetic` says how many, so the agent can warn.
 */
export function gpuIndicesFor(measured: readonly NvidiaGpu[], count: number): { indices: number[]; synthetic: number } {
  const sorted = measured.map((g) => g.index).sort((a, b) => a - b);
  const indices = sorted.slice(0, count);
  let next = sorted.length > 0 ? sorted[sorted.length - 1] + 1 : 0;
  let synthetic = 0;
  while (indices.length < count) {
    indices.push(next++);
    synthetic++;
  }
  return { indices, synthetic };
}

/** Picks the mount holding `path`: the longest mount point that is a prefix of it. */
export function mountFor(path: string, mounts: readonly { mount: string }[]): number {
  let best = -1;
  let bestLen = -1;
  mounts.forEach((m, i) => {
    const mp = m.mount;
    const isPrefix = mp === '/' || path === mp || path.startsWith(mp.endsWith(sep) ? mp : mp + sep);
    if (isPrefix && mp.length > bestLen) {
      best = i;
      bestLen = mp.length;
    }
  });
  return best;
}

export interface MeasureOptions {
  /** Replaces the nvidia-smi query (tests). */
  queryGpus?: () => Promise<NvidiaSmiResult>;
  /** Tasks per device (`--gpu-sharing`): each device is offered this many times. Default 1. */
  gpuSharing?: number;
}

/** Measures the host. The work directory must exist. */
export async function measureHost(workDir: string, opts: MeasureOptions = {}): Promise<HostFacts> {
  const dir = await realpath(resolve(workDir));
  const [cpu, mem, gpu, diskAvailableMiB] = await Promise.all([
    si.cpu(),
    si.mem(),
    (opts.queryGpus ?? (() => queryNvidiaSmi()))(),
    diskAvailableFor(dir),
  ]);
  return {
    cpus: cpu.cores,
    memTotalMiB: Math.floor(mem.total / MIB),
    diskAvailableMiB,
    gpus: gpu.gpus,
    gpuReason: gpu.reason,
    gpuErrors: gpu.errors,
  };
}

async function diskAvailableFor(dir: string): Promise<number> {
  try {
    const mounts = await si.fsSize();
    const i = mountFor(dir, mounts);
    if (i >= 0 && mounts[i].available > 0) return Math.floor(mounts[i].available / MIB);
  } catch {
    // fall through to statfs
  }
  // systeminformation lists only "real" filesystems; a work dir on tmpfs or overlay is
  // still measured exactly by statfs.
  const st = await statfs(dir);
  return Math.floor((st.bavail * st.bsize) / MIB);
}

export interface DiscoveredResources {
  resources: Resources;
  /** The devices behind `resources.gpus`, in order (with sharing, each stands for several). */
  gpuIndices: number[];
  facts: HostFacts;
  /** Things an operator should see in the log (GPU probe failures, synthetic GPUs). */
  notes: string[];
}

/** Measures the host and applies `--resources`. */
export async function discoverResources(
  workDir: string,
  overrideText: string | undefined,
  opts: MeasureOptions = {},
): Promise<DiscoveredResources> {
  validateResourcesOverride(overrideText);
  const facts = await measureHost(workDir, opts);
  const resources = mergeResources(measuredResources(facts), overrideText);
  const notes: string[] = [];
  if (facts.gpuReason !== undefined) notes.push(`no GPUs discovered: ${facts.gpuReason}`);
  for (const e of facts.gpuErrors) notes.push(`nvidia-smi output skipped: ${e}`);
  const { indices, synthetic } = gpuIndicesFor(facts.gpus, resources.gpus);
  if (synthetic > 0) {
    notes.push(`--resources declares ${resources.gpus} GPUs but ${facts.gpus.length} were found; indices ${indices.slice(-synthetic).join(',')} are not backed by a device`);
  }
  // With sharing, `gpus` counts shares: N tasks of one GPU each may hold one device.
  const sharing = opts.gpuSharing ?? 1;
  const offered = sharing > 1 ? resources.subtract(Resources.of({ gpus: resources.gpus })).add(Resources.of({ gpus: indices.length * sharing })) : resources;
  if (sharing > 1 && indices.length > 0) notes.push(`GPUs are shared: each of ${indices.length} devices may be held by ${sharing} tasks at once (${indices.length * sharing} gpus offered)`);
  return { resources: offered, gpuIndices: indices, facts, notes };
}
