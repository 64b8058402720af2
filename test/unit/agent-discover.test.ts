// Resource discovery: reserves, the --resources merge, GPU indices, and one real
// measurement of this host.

import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Resources } from '../../shared/resources.ts';
import {
  diskReserveMiB,
  discoverResources,
  gpuIndicesFor,
  measuredResources,
  memReserveMiB,
  mergeResources,
  mountFor,
  validateResourcesOverride,
  type HostFacts,
} from '../../agent/resources/discover.ts';

const gpu = (index: number) => ({ index, uuid: `GPU-${index}`, name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920 });

const facts: HostFacts = { cpus: 16, memTotalMiB: 65536, diskAvailableMiB: 100_000, gpus: [gpu(0), gpu(1)], gpuErrors: [] };

describe('reserves', () => {
  it('keeps 1 GiB of memory back, or half of a small machine', () => {
    expect(memReserveMiB(65536)).toBe(1024);
    expect(memReserveMiB(1500)).toBe(750);
    expect(diskReserveMiB(100_000)).toBe(1024);
    expect(diskReserveMiB(100)).toBe(50);
  });

  it('turns facts into resources with the default port range', () => {
    expect(measuredResources(facts).toString()).toBe('cpus:16;mem:64512;disk:98976;gpus:2;ports:[31000-32000]');
  });
});

describe('mergeResources', () => {
  const measured = measuredResources(facts);

  it('keeps what was measured when nothing overrides it', () => {
    expect(mergeResources(measured, undefined).equals(measured)).toBe(true);
    expect(mergeResources(measured, '  ').equals(measured)).toBe(true);
  });

  it('overrides only the names given', () => {
    expect(mergeResources(measured, 'cpus:2;mem:1024').toString()).toBe('cpus:2;mem:1024;disk:98976;gpus:2;ports:[31000-32000]');
    expect(mergeResources(measured, 'ports:[5000-5009]').toString()).toBe('cpus:16;mem:64512;disk:98976;gpus:2;ports:[5000-5009]');
  });

  it('lets an override set a resource to zero', () => {
    expect(mergeResources(measured, 'gpus:0').gpus).toBe(0);
    expect(mergeResources(measured, 'cpus(*):4').cpus).toBe(4);
  });

  it('rejects a malformed override naming the field', () => {
    expect(() => mergeResources(measured, 'cpus:lots')).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_RESOURCES', field: 'resources.cpus' }));
    expect(() => mergeResources(measured, 'bogus:1')).toThrow(/resources/);
    expect(() => validateResourcesOverride('gpus:1.5')).toThrow(expect.objectContaining({ field: 'resources.gpus' }));
    expect(() => validateResourcesOverride('gpus:2;cpus:1')).not.toThrow();
  });
});

describe('gpuIndicesFor', () => {
  it('uses the measured devices first, in index order', () => {
    expect(gpuIndicesFor([gpu(3), gpu(1), gpu(0)], 2)).toEqual({ indices: [0, 1], synthetic: 0 });
  });

  it('continues past the highest device when more are declared than found', () => {
    expect(gpuIndicesFor([gpu(0)], 3)).toEqual({ indices: [0, 1, 2], synthetic: 2 });
    expect(gpuIndicesFor([], 2)).toEqual({ indices: [0, 1], synthetic: 2 });
  });
});

describe('mountFor', () => {
  it('picks the longest mount point holding the path', () => {
    const mounts = [{ mount: '/' }, { mount: '/var' }, { mount: '/var/lib/cairn' }, { mount: '/var/li' }];
    expect(mountFor('/var/lib/cairn/work', mounts)).toBe(2);
    expect(mountFor('/var/lib/other', mounts)).toBe(1);
    expect(mountFor('/home/x', mounts)).toBe(0);
    expect(mountFor('/x', [{ mount: '/data' }])).toBe(-1);
  });
});

describe('discoverResources (this host)', () => {
  const dirs: string[] = [];
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-discover-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('measures cpus, memory and disk, and applies the override', async () => {
    const dir = tempDir();
    const found = await discoverResources(dir, 'cpus:2', { queryGpus: async () => ({ gpus: [], errors: [], reason: 'nvidia-smi not found' }) });
    expect(found.resources.cpus).toBe(2);
    expect(found.facts.cpus).toBeGreaterThan(0);
    expect(found.resources.mem).toBeGreaterThan(0);
    expect(found.resources.disk).toBeGreaterThan(0);
    expect(found.resources.ports).toEqual(Resources.parse('ports:[31000-32000]').ports);
    expect(found.gpuIndices).toEqual([]);
    expect(found.notes).toEqual(['no GPUs discovered: nvidia-smi not found']);
  });

  it('backs declared GPUs with indices and says when no device stands behind them', async () => {
    const dir = tempDir();
    const found = await discoverResources(dir, 'gpus:2', { queryGpus: async () => ({ gpus: [gpu(0)], errors: [] }) });
    expect(found.gpuIndices).toEqual([0, 1]);
    expect(found.notes.join('\n')).toMatch(/declares 2 GPUs but 1 were found/);
  });

  it('offers each device as many times as it is shared', async () => {
    const dir = tempDir();
    const found = await discoverResources(dir, undefined, { gpuSharing: 3, queryGpus: async () => ({ gpus: [gpu(0), gpu(1)], errors: [] }) });
    expect(found.gpuIndices).toEqual([0, 1]);
    expect(found.resources.gpus).toBe(6);
    expect(found.notes.join('\n')).toMatch(/each of 2 devices may be held by 3 tasks/);
    const declared = await discoverResources(dir, 'gpus:1', { gpuSharing: 2, queryGpus: async () => ({ gpus: [gpu(0), gpu(1)], errors: [] }) });
    expect([declared.gpuIndices, declared.resources.gpus]).toEqual([[0], 2]);
  });
});
