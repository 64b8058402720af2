// Disk limits of tasks, as Mesos' `disk/du` isolator keeps them (pure): a task's limit is
// its `disk` resource; its usage is what its sandbox holds (plus, for a container, what it
// wrote to its own filesystem layer), measured every `--disk-watch-interval`; a task found
// over its limit is killed and ends TASK_FAILED with REASON_CONTAINER_LIMITATION_DISK and a
// message naming the limit and what was measured. A task that asks for no disk is measured
// and reported, not limited (Mesos sets no quota without a disk resource), unless the
// operator gives one with --default-task-disk.
//
// The watcher (disk-watcher.ts) measures and kills; everything it decides is here.

import { Resources } from '../../shared/resources.ts';
import type { TaskStatusChange } from '../executors/process/executor.ts';

export const DISK_LIMITATION_REASON = 'REASON_CONTAINER_LIMITATION_DISK';

const MIB = 1024 * 1024;

/** What one measurement of a task found. */
export interface DiskMeasurement {
  /** Bytes the sandbox takes on disk (allocated blocks, as du counts them; hard links once). */
  sandboxBytes: number;
  /** Bytes of the container's writable layer (Docker's SizeRw); undefined for a process task or when Docker did not say. */
  layerBytes?: number;
  /**
   * False when the walk stopped before it saw everything (it passed the limit, or ran out of
   * time): the figure is then a lower bound.
   */
  complete: boolean;
}

/** The disk limit of a task in bytes, or undefined when it has none. */
export function diskLimitBytes(resources: string, defaultMiB: number): number | undefined {
  let asked = 0;
  try {
    asked = Resources.parse(resources).disk;
  } catch {
    asked = 0;
  }
  const mib = asked > 0 ? asked : defaultMiB;
  return mib > 0 ? Math.floor(mib * MIB) : undefined;
}

export function usedBytes(m: DiskMeasurement): number {
  return m.sandboxBytes + (m.layerBytes ?? 0);
}

/** A size as people read it: `512 KiB`, `37.5 MiB`, `2.1 GiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < MIB) return `${Math.ceil(bytes / 1024)} KiB`;
  if (bytes < 1024 * MIB) return `${trim(bytes / MIB)} MiB`;
  return `${trim(bytes / (1024 * MIB))} GiB`;
}

function trim(x: number): string {
  return x >= 100 ? String(Math.round(x)) : String(Math.round(x * 10) / 10);
}

export type DiskVerdict = { over: false } | { over: true; message: string };

/** Whether a task is over its limit, and the message its end carries if so. */
export function judgeDisk(limitBytes: number | undefined, m: DiskMeasurement): DiskVerdict {
  if (limitBytes === undefined) return { over: false };
  const used = usedBytes(m);
  if (used <= limitBytes) return { over: false };
  const atLeast = m.complete ? '' : 'at least ';
  const parts = m.layerBytes !== undefined && m.layerBytes > 0 ? ` (sandbox ${formatBytes(m.sandboxBytes)}, container layer ${formatBytes(m.layerBytes)})` : ' in its sandbox';
  return { over: true, message: `disk limit of ${formatBytes(limitBytes)} exceeded: the task used ${atLeast}${formatBytes(used)}${parts}; it was killed` };
}

/**
 * A task killed over its disk limit ends TASK_FAILED, as Mesos reports a limitation; the
 * executors report any end after a kill as TASK_KILLED, so its end is restated here. The
 * reason is kept in the executors' checkpointed end, so this holds for an end re-sent after
 * an agent restart too.
 */
export function asDiskLimitation(change: TaskStatusChange): TaskStatusChange {
  if (change.reason !== DISK_LIMITATION_REASON || change.state !== 'TASK_KILLED') return change;
  return { ...change, state: 'TASK_FAILED' };
}
