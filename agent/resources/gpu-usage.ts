// Per-GPU memory and utilisation from nvidia-smi, and which GPUs are out of service: a
// pure parser of its CSV output and a thin runner that never throws.
//
// A GPU that fell off the bus is not a line of CSV: nvidia-smi prints
//   Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU
// in its place (and exits non-zero), while still listing the healthy ones. The query
// names no bus id, so a lost GPU is the known device that is missing from the listing
// when such a line appears. A device listed with "[GPU requires reset]" or "[Unknown
// Error]" in a field is out of service too. Fields a device does not support ("[N/A]",
// "[Not Supported]", as MIG-enabled GPUs say for utilisation) are unknown, not errors.

import { execa } from 'execa';
import type { GpuUsage } from '../../shared/agent-usage.ts';

export const NVIDIA_SMI_USAGE_ARGS = [
  '--query-gpu=index,uuid,memory.used,memory.total,utilization.gpu',
  '--format=csv,noheader,nounits',
] as const;

export interface GpuUsageParse {
  gpus: GpuUsage[];
  /** Devices listed but out of service, with nvidia-smi's words. */
  failed: { index: number; uuid: string; message: string }[];
  /** "GPU is lost"-style lines: a device nvidia-smi could not even open. */
  lost: { busId: string | null; message: string }[];
  /** Lines that made no sense. */
  errors: string[];
}

const UNAVAILABLE = /^\[(N\/A|Not Supported)\]$/i;
const FAULT = /^\[(GPU requires reset|Unknown Error|GPU is lost|Insufficient Permissions)\]$/i;
const LOST_LINE = /^Unable to determine the device handle for (?:GPU\s*)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])?:?\s*(.*)$/;

function numberOrNull(field: string): number | null | 'fault' | 'bad' {
  if (UNAVAILABLE.test(field)) return null;
  if (FAULT.test(field)) return 'fault';
  return /^\d+(\.\d+)?$/.test(field) ? Number(field) : 'bad';
}

export function parseGpuUsage(text: string): GpuUsageParse {
  const out: GpuUsageParse = { gpus: [], failed: [], lost: [], errors: [] };
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || /^No devices were found/i.test(line)) return;
    const lost = LOST_LINE.exec(line);
    if (lost) {
      out.lost.push({ busId: lost[1] ?? null, message: line });
      return;
    }
    const fields = line.split(',').map((f) => f.trim());
    if (fields.length !== 5 || !/^\d+$/.test(fields[0])) {
      out.errors.push(`line ${i + 1} ('${line}'): expected "index, uuid, memory.used, memory.total, utilization.gpu"`);
      return;
    }
    const [indexText, uuid, ...rest] = fields;
    const index = Number(indexText);
    const values = rest.map(numberOrNull);
    const faultAt = values.indexOf('fault');
    if (faultAt >= 0) {
      out.failed.push({ index, uuid, message: rest[faultAt].slice(1, -1) });
      return;
    }
    if (values.includes('bad')) {
      out.errors.push(`line ${i + 1} ('${line}'): a value is not a number`);
      return;
    }
    const [used, total, util] = values as (number | null)[];
    out.gpus.push({ index, uuid, memoryUsedMiB: used, memoryTotalMiB: total, utilizationPercent: util });
  });
  out.gpus.sort((a, b) => a.index - b.index);
  return out;
}

/**
 * Which of the agent's GPUs are out of service, by index with the reason (pure). `known`
 * are the devices found at start; a listed-but-failed device is out, and so is every
 * known device missing from the listing when nvidia-smi reported a lost GPU.
 */
export function unhealthyGpus(known: readonly { index: number; uuid: string }[], parse: GpuUsageParse): Map<number, string> {
  const out = new Map<number, string>();
  for (const f of parse.failed) out.set(f.index, `nvidia-smi: ${f.message}`);
  if (parse.lost.length > 0) {
    const listed = new Set([...parse.gpus.map((g) => g.uuid), ...parse.failed.map((f) => f.uuid)]);
    for (const g of known) {
      if (!listed.has(g.uuid) && !out.has(g.index)) out.set(g.index, parse.lost.map((l) => l.message).join('; '));
    }
  }
  return out;
}

export interface GpuUsageResult extends GpuUsageParse {
  /** Why nvidia-smi could not be asked at all; absent when it answered (even partly). */
  reason?: string;
}

/** Runs the usage query; never throws. A non-zero exit with output (a lost GPU) is parsed. */
export async function queryGpuUsage(opts: { command?: string; timeoutMs?: number } = {}): Promise<GpuUsageResult> {
  const command = opts.command ?? 'nvidia-smi';
  const timeout = opts.timeoutMs ?? 10_000;
  try {
    const r = await execa(command, [...NVIDIA_SMI_USAGE_ARGS], { timeout, reject: false, stdin: 'ignore' });
    if (r.timedOut) return { gpus: [], failed: [], lost: [], errors: [], reason: `${command} timed out after ${timeout} ms` };
    if ((r as { code?: string }).code === 'ENOENT') return { gpus: [], failed: [], lost: [], errors: [], reason: `${command} not found` };
    const text = `${typeof r.stdout === 'string' ? r.stdout : ''}\n${typeof r.stderr === 'string' ? r.stderr : ''}`;
    const parsed = parseGpuUsage(text);
    if (r.failed && parsed.gpus.length === 0 && parsed.lost.length === 0 && parsed.failed.length === 0) {
      return { ...parsed, reason: `${command} failed (exit code ${r.exitCode ?? '?'})` };
    }
    return parsed;
  } catch (err) {
    return { gpus: [], failed: [], lost: [], errors: [], reason: `${command} could not run: ${(err as Error).message}` };
  }
}
