import { describe, expect, it } from 'vitest';
import { fitTasks, offerRole } from '../../shared/sdk/offer-fit.ts';
import { Resources } from '../../shared/resources.ts';

const offer = Resources.parse('cpus:1;mem:1024;disk:100;gpus:1;ports:[31000-31002,32000-32001]').toMesos('*');

describe('fitTasks', () => {
  it('packs tasks exactly: ten tasks of 0.1 cpus fill one cpu', () => {
    const fit = fitTasks(offer, Array.from({ length: 12 }, () => ({ cpus: 0.1, mem: 32 })));
    expect(fit.placed.map((p) => p.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(fit.unplaced).toEqual([10, 11]);
    expect(fit.remaining.cpus).toBe(0);
    expect(fit.remaining.mem).toBe(1024 - 320);
    expect(fit.placed[0].resources).toEqual([
      { name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 }, role: '*' },
      { name: 'mem', type: 'SCALAR', scalar: { value: 32 }, role: '*' },
    ]);
  });

  it('gives every task its own ports, across ranges', () => {
    const fit = fitTasks(offer, [
      { cpus: 0.1, mem: 10, ports: 2 },
      { cpus: 0.1, mem: 10, ports: 2 },
      { cpus: 0.1, mem: 10, ports: 2 },
      { cpus: 0.1, mem: 10, ports: 1 },
    ]);
    expect(fit.placed.map((p) => p.ports)).toEqual([[31000, 31001], [31002, 32000], [32001]]);
    expect(fit.unplaced).toEqual([2]);
    expect(fit.placed[1].resources.find((r) => r.name === 'ports')).toEqual({
      name: 'ports',
      type: 'RANGES',
      ranges: { range: [{ begin: 31002, end: 31002 }, { begin: 32000, end: 32000 }] },
      role: '*',
    });
    expect(fit.remaining.portCount()).toBe(0);
    // What was placed plus what remains is the offer.
    const total = fit.placed.reduce((acc, p) => acc.add(p.taken), fit.remaining);
    expect(total.equals(Resources.fromMesos(offer))).toBe(true);
  });

  it('places a later, smaller task when an earlier one does not fit', () => {
    const fit = fitTasks(offer, [{ cpus: 0.5, mem: 1000 }, { cpus: 0.5, mem: 100 }, { cpus: 0.5, mem: 24 }]);
    expect(fit.placed.map((p) => p.index)).toEqual([0, 2]);
    expect(fit.unplaced).toEqual([1]);
  });

  it('handles disk and gpus', () => {
    const fit = fitTasks(offer, [{ cpus: 0.1, mem: 1, disk: 60, gpus: 1 }, { cpus: 0.1, mem: 1, gpus: 1 }, { cpus: 0.1, mem: 1, disk: 60 }]);
    expect(fit.placed.map((p) => p.index)).toEqual([0]);
    expect(fit.placed[0].taken.toString()).toBe('cpus:0.1;mem:1;disk:60;gpus:1');
  });

  it('respects a limit', () => {
    const fit = fitTasks(offer, [{ cpus: 0.1, mem: 1 }, { cpus: 0.1, mem: 1 }, { cpus: 0.1, mem: 1 }], { limit: 2 });
    expect(fit.placed).toHaveLength(2);
    expect(fit.unplaced).toEqual([2]);
  });

  it('writes the offer role on task resources', () => {
    const reserved = Resources.parse('cpus:2;mem:64').toMesos('ml');
    expect(offerRole(reserved)).toBe('ml');
    expect(fitTasks(reserved, [{ cpus: 1, mem: 1 }]).placed[0].resources.every((r) => r.role === 'ml')).toBe(true);
    expect(offerRole([...reserved, ...Resources.parse('disk:1').toMesos('*')])).toBe('*');
    expect(fitTasks(reserved, [{ cpus: 1, mem: 1 }], { role: 'other' }).placed[0].resources[0].role).toBe('other');
  });

  it('accepts a Resources value as the offer', () => {
    const fit = fitTasks(Resources.parse('cpus:0.3;mem:3'), [{ cpus: 0.1, mem: 1 }, { cpus: 0.2, mem: 2 }]);
    expect(fit.placed).toHaveLength(2);
    expect(fit.remaining.isEmpty()).toBe(true);
  });

  it('rejects bad requirements naming the task', () => {
    expect(() => fitTasks(offer, [{ cpus: -1, mem: 1 }])).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_RESOURCES', field: 'tasks[0].cpus', message: 'tasks[0].cpus: must be a finite non-negative number, got -1' }));
    expect(() => fitTasks(offer, [{ cpus: 1, mem: 1 }, { cpus: 1, mem: 1, ports: 1.5 }])).toThrowError(
      expect.objectContaining({ code: 'CAIRN_BAD_RESOURCES', field: 'tasks[1].ports' }),
    );
  });
});
