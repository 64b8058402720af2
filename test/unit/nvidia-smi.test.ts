// GPU discovery: the nvidia-smi parser against recorded outputs, and the runner's
// behaviour when the command is missing, failing or hanging.

import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseNvidiaSmi, queryNvidiaSmi } from '../../agent/resources/nvidia-smi.ts';
import { parseGpuUsage } from '../../agent/resources/gpu-usage.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A stand-in nvidia-smi: a shell script printing `out` and exiting with `code`. */
function fakeSmi(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-smi-'));
  made.push(dir);
  const path = join(dir, 'nvidia-smi');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('parseNvidiaSmi', () => {
  it('reads "No devices were found" as no GPUs and no errors', () => {
    expect(parseNvidiaSmi(fixture('none.txt'))).toEqual({ gpus: [], errors: [] });
    expect(parseNvidiaSmi('')).toEqual({ gpus: [], errors: [] });
  });

  it('reads one GPU', () => {
    expect(parseNvidiaSmi(fixture('one.txt'))).toEqual({
      gpus: [{ index: 0, uuid: 'GPU-5d1f8a43-9c1e-7b2a-3f44-0e6c2d9b8a11', name: 'NVIDIA GeForce RTX 3090', memoryMiB: 24576 }],
      errors: [],
    });
  });

  it('reads what a real H100 host printed for the discovery and the usage queries', () => {
    // Recorded on a host with one NVIDIA H100 80GB HBM3, with exactly the flags the agent passes.
    expect(parseNvidiaSmi(fixture('real-h100-discover.txt'))).toEqual({
      gpus: [{ index: 0, uuid: 'GPU-06b7b670-9271-6419-e2f8-5182787e910f', name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559 }],
      errors: [],
    });
    expect(parseGpuUsage(fixture('real-h100-usage.txt'))).toEqual({
      gpus: [{ index: 0, uuid: 'GPU-06b7b670-9271-6419-e2f8-5182787e910f', memoryUsedMiB: 0, memoryTotalMiB: 81559, utilizationPercent: 0 }],
      lost: [],
      failed: [],
      errors: [],
    });
  });

  it('reads eight A100s and eight H100s', () => {
    const a100 = parseNvidiaSmi(fixture('eight-a100.txt'));
    expect(a100.errors).toEqual([]);
    expect(a100.gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(a100.gpus.every((g) => g.name === 'NVIDIA A100-SXM4-80GB' && g.memoryMiB === 81920)).toBe(true);
    expect(new Set(a100.gpus.map((g) => g.uuid)).size).toBe(8);

    const h100 = parseNvidiaSmi(fixture('eight-h100.txt'));
    expect(h100.errors).toEqual([]);
    expect(h100.gpus).toHaveLength(8);
    expect(h100.gpus[7]).toEqual({ index: 7, uuid: 'GPU-a7e4c1f2-33d5-4c6b-9e87-1f2a3b4c5d67', name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559 });
  });

  it('skips a malformed line with an error naming it, and keeps the others', () => {
    const r = parseNvidiaSmi(fixture('malformed.txt'));
    expect(r.gpus.map((g) => g.index)).toEqual([0, 2]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatch(/^line 2 /);
    expect(r.errors[0]).toContain('GPU-1b1c2d3e');
  });

  it('rejects bad indices, bad memory and repeated indices', () => {
    const r = parseNvidiaSmi([
      'x, GPU-a, Tesla T4, 15360',
      '1, GPU-b, Tesla T4, [N/A]',
      '2, GPU-c, Tesla T4, 15360',
      '2, GPU-d, Tesla T4, 15360',
    ].join('\n'));
    expect(r.gpus.map((g) => g.uuid)).toEqual(['GPU-c']);
    expect(r.errors.map((e) => e.slice(0, 6))).toEqual(['line 1', 'line 2', 'line 4']);
  });

  it('keeps a comma inside a GPU name', () => {
    expect(parseNvidiaSmi('0, GPU-x, Odd, Name, 1024').gpus[0]).toMatchObject({ name: 'Odd, Name', memoryMiB: 1024 });
  });
});

describe('queryNvidiaSmi', () => {
  it('has 0 GPUs with a reason when the command is missing', async () => {
    const r = await queryNvidiaSmi({ command: '/no/such/nvidia-smi' });
    expect(r.gpus).toEqual([]);
    expect(r.reason).toMatch(/not found/);
  });

  it('has 0 GPUs with a reason when the command fails', async () => {
    const r = await queryNvidiaSmi({ command: fakeSmi('echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2; exit 9') });
    expect(r.gpus).toEqual([]);
    expect(r.reason).toMatch(/exit code 9.*could not communicate/);
  });

  it('has 0 GPUs when no device is present', async () => {
    const r = await queryNvidiaSmi({ command: fakeSmi('echo "No devices were found"; exit 6') });
    expect(r).toMatchObject({ gpus: [], reason: expect.stringMatching(/No devices were found/) });
  });

  it('has 0 GPUs with a reason when the command hangs', async () => {
    const r = await queryNvidiaSmi({ command: fakeSmi('exec sleep 10'), timeoutMs: 200 });
    expect(r.gpus).toEqual([]);
    expect(r.reason).toMatch(/timed out/);
  });

  it('parses what a working nvidia-smi prints, passing the query flags', async () => {
    const script = fakeSmi(`[ "$1" = "--query-gpu=index,uuid,name,memory.total" ] && [ "$2" = "--format=csv,noheader,nounits" ] || exit 2\ncat <<'EOF'\n${fixture('eight-h100.txt')}EOF`);
    const r = await queryNvidiaSmi({ command: script });
    expect(r.reason).toBeUndefined();
    expect(r.gpus).toHaveLength(8);
  });
});
