// GPU discovery through nvidia-smi: a pure parser of its CSV output, and a thin runner.
//
// The runner never throws: a host without the NVIDIA driver (command missing, failing or
// hanging) simply has no GPUs, and the reason comes back so the agent can log it once.

import { execa } from 'execa';

export interface NvidiaGpu {
  /** The device index CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES name. */
  index: number;
  uuid: string;
  name: string;
  memoryMiB: number;
}

export interface NvidiaSmiParse {
  gpus: NvidiaGpu[];
  /** One entry per skipped line, naming the line. */
  errors: string[];
}

export interface NvidiaSmiResult extends NvidiaSmiParse {
  /** Why no GPU list could be read (command missing, failed, timed out); absent on success. */
  reason?: string;
}

export const NVIDIA_SMI_ARGS = [
  '--query-gpu=index,uuid,name,memory.total',
  '--format=csv,noheader,nounits',
] as const;

/** What nvidia-smi prints (exit code 6) when the driver is loaded but no device is present. */
const NO_DEVICES = /^No devices were found\.?$/i;

/**
 * Parses `index, uuid, name, memory.total` lines. A GPU name could in principle hold a
 * comma, so the first two fields and the last one are taken from the ends and the name
 * is whatever lies between.
 */
export function parseNvidiaSmi(text: string): NvidiaSmiParse {
  const gpus: NvidiaGpu[] = [];
  const errors: string[] = [];
  const seen = new Set<number>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || NO_DEVICES.test(line)) return;
    const where = `line ${i + 1} ('${line}')`;
    const fields = line.split(',').map((f) => f.trim());
    if (fields.length < 4) {
      errors.push(`${where}: expected 4 fields "index, uuid, name, memory.total", got ${fields.length}`);
      return;
    }
    const [indexText, uuid] = fields;
    const memText = fields[fields.length - 1];
    const name = fields.slice(2, -1).join(', ');
    if (!/^\d+$/.test(indexText)) {
      errors.push(`${where}: index '${indexText}' is not a non-negative integer`);
      return;
    }
    const index = Number(indexText);
    if (seen.has(index)) {
      errors.push(`${where}: index ${index} appears twice`);
      return;
    }
    if (uuid === '') {
      errors.push(`${where}: empty uuid`);
      return;
    }
    if (!/^\d+(\.\d+)?$/.test(memText)) {
      errors.push(`${where}: memory.total '${memText}' is not a number of MiB`);
      return;
    }
    seen.add(index);
    gpus.push({ index, uuid, name, memoryMiB: Math.floor(Number(memText)) });
  });
  gpus.sort((a, b) => a.index - b.index);
  return { gpus, errors };
}

export interface NvidiaSmiOptions {
  /** The program to run; tests point this at a stand-in. */
  command?: string;
  /** nvidia-smi can hang on a wedged driver; past this the host counts as having no GPUs. */
  timeoutMs?: number;
}

export const DEFAULT_NVIDIA_SMI_TIMEOUT_MS = 10_000;

/** Runs nvidia-smi and parses its output; never throws. */
export async function queryNvidiaSmi(opts: NvidiaSmiOptions = {}): Promise<NvidiaSmiResult> {
  const command = opts.command ?? 'nvidia-smi';
  const timeout = opts.timeoutMs ?? DEFAULT_NVIDIA_SMI_TIMEOUT_MS;
  let result;
  try {
    result = await execa(command, [...NVIDIA_SMI_ARGS], { timeout, reject: false, stdin: 'ignore' });
  } catch (err) {
    return { gpus: [], errors: [], reason: `${command} could not run: ${(err as Error).message}` };
  }
  const stdout = typeof result.stdout === 'string' ? result.stdout : '';
  const stderr = typeof result.stderr === 'string' ? result.stderr : '';
  if (result.timedOut) {
    return { gpus: [], errors: [], reason: `${command} timed out after ${timeout} ms` };
  }
  if (result.failed) {
    const said = (stdout.trim() || stderr.trim()).split('\n')[0] ?? '';
    if (NO_DEVICES.test(said.trim())) return { gpus: [], errors: [], reason: `${command}: ${said.trim()}` };
    const code = (result as { code?: string }).code;
    if (code === 'ENOENT') return { gpus: [], errors: [], reason: `${command} not found` };
    const detail = said !== '' ? said : result.shortMessage ?? 'failed';
    return { gpus: [], errors: [], reason: `${command} failed (exit code ${result.exitCode ?? '?'}): ${detail}` };
  }
  return parseNvidiaSmi(stdout);
}
