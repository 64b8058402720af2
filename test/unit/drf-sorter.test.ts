// The DRF sorter on its own: clients, weights, allocations, a total, and the order that follows.
// Expected shares are written beside each expected order.

import { describe, expect, it } from 'vitest';
import { DrfSorter } from '../../master/allocator/drf-sorter.ts';
import { Resources } from '../../shared/resources.ts';
import { mulberry32 } from '../harness/mulberry32.ts';

const r = (text: string) => Resources.parse(text);

function sorterWith(total: string, ...clients: string[]): DrfSorter {
  const s = new DrfSorter();
  s.setTotal(r(total));
  for (const c of clients) {
    s.add(c);
    s.activate(c);
  }
  return s;
}

describe('DrfSorter', () => {
  it('orders by dominant share, lowest first', () => {
    const s = sorterWith('cpus:100;mem:100', 'a', 'b');
    s.allocated('a', r('cpus:5;mem:5'));
    s.allocated('b', r('cpus:6;mem:6'));
    expect(s.sort()).toEqual(['a', 'b']); // a = .05, b = .06

    s.allocated('a', r('cpus:2')); // a's cpus 7
    expect(s.sort()).toEqual(['b', 'a']); // a = .07, b = .06

    s.add('c');
    s.activate('c');
    s.allocated('c', r('mem:10'));
    expect(s.sort()).toEqual(['b', 'a', 'c']); // a = .07, b = .06, c = .10

    s.add('d');
    s.activate('d');
    s.allocated('d', r('cpus:10;mem:20'));
    expect(s.sort()).toEqual(['b', 'a', 'c', 'd']); // a = .07, b = .06, c = .10, d = .20

    s.unallocated('d', r('cpus:5;mem:15'));
    expect(s.sort()).toEqual(['d', 'b', 'a', 'c']); // a = .07, b = .06, c = .10, d = .05

    s.remove('a');
    expect(s.sort()).toEqual(['d', 'b', 'c']); // b = .06, c = .10, d = .05
    expect(s.share('c')).toBeCloseTo(0.1, 12);
  });

  it('breaks ties by name so the order is deterministic', () => {
    const s = sorterWith('cpus:10;mem:10', 'charlie', 'alpha', 'bravo');
    expect(s.sort()).toEqual(['alpha', 'bravo', 'charlie']); // all 0
    s.allocated('alpha', r('cpus:1'));
    s.allocated('charlie', r('mem:1'));
    expect(s.sort()).toEqual(['bravo', 'alpha', 'charlie']); // alpha = .1, bravo = 0, charlie = .1
  });

  it('follows the DRF paper: A <1 cpu, 4 GB> and B <3 cpus, 1 GB> tasks on 9 cpus, 18 GB', () => {
    // Mem in GB to keep the numbers of the paper. Each step gives a task to the first in order.
    const s = sorterWith('cpus:9;mem:18', 'A', 'B');
    const task = { A: r('cpus:1;mem:4'), B: r('cpus:3;mem:1') };
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      const next = s.sort()[0] as 'A' | 'B';
      order.push(next);
      s.allocated(next, task[next]);
    }
    // Shares before each pick:
    //   A = 0,   B = 0    → A (tie, by name); A becomes 2/9 (mem 4/18)
    //   A = 2/9, B = 0    → B;                B becomes 1/3 (cpus 3/9)
    //   A = 2/9, B = 1/3  → A;                A becomes 4/9
    //   A = 4/9, B = 1/3  → B;                B becomes 2/3
    //   A = 4/9, B = 2/3  → A;                A becomes 2/3
    // After that 9 cpus and 14 GB are in use and no further task fits.
    expect(order).toEqual(['A', 'B', 'A', 'B', 'A']);
    expect(s.share('A')).toBeCloseTo(2 / 3, 12); // 3 tasks: 3 cpus, 12 GB → mem 12/18
    expect(s.share('B')).toBeCloseTo(2 / 3, 12); // 2 tasks: 6 cpus, 2 GB → cpus 6/9
  });

  it('divides shares by weight', () => {
    const s = new DrfSorter();
    s.setTotal(r('cpus:100;mem:100'));
    s.add('heavy', 2);
    s.add('light');
    s.activate('heavy');
    s.activate('light');
    s.allocated('heavy', r('cpus:30'));
    s.allocated('light', r('cpus:20'));
    expect(s.sort()).toEqual(['heavy', 'light']); // heavy = .30/2 = .15, light = .20
    expect(s.share('heavy')).toBeCloseTo(0.3, 12);
    expect(s.weightedShare('heavy')).toBeCloseTo(0.15, 12);
    s.setWeight('heavy', 1);
    expect(s.sort()).toEqual(['light', 'heavy']); // heavy = .30, light = .20
  });

  it('rejects weights that are not > 0, naming the field', () => {
    const s = new DrfSorter();
    for (const w of [0, -1, NaN, Infinity]) {
      expect(() => s.add('x', w)).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_REQUEST', field: 'weight' }));
    }
  });

  it('resorts everyone when the total changes', () => {
    const s = sorterWith('cpus:10;mem:100', 'cpuHeavy', 'memHeavy');
    s.allocated('cpuHeavy', r('cpus:5'));
    s.allocated('memHeavy', r('mem:40'));
    expect(s.sort()).toEqual(['memHeavy', 'cpuHeavy']); // cpuHeavy = .5, memHeavy = .4
    s.setTotal(r('cpus:20;mem:100'));
    expect(s.sort()).toEqual(['cpuHeavy', 'memHeavy']); // cpuHeavy = .25, memHeavy = .4
  });

  it('ignores ports and scalars the cluster has none of', () => {
    const s = sorterWith('cpus:10;mem:100;ports:[1-100]', 'a', 'b');
    s.allocated('a', r('cpus:1;ports:[1-100]')); // ports do not count
    s.allocated('b', r('cpus:2;gpus:1')); // no gpus in the cluster: ignored
    expect(s.sort()).toEqual(['a', 'b']); // a = .1, b = .2
    expect(s.share('b')).toBeCloseTo(0.2, 12);
    s.setTotal(r('cpus:10;mem:100;gpus:2'));
    expect(s.sort()).toEqual(['a', 'b']); // a = .1, b = .5 (gpus)
    expect(s.share('b')).toBeCloseTo(0.5, 12);
  });

  it('leaves inactive clients out of the order but keeps their allocation', () => {
    const s = sorterWith('cpus:10', 'a', 'b', 'c');
    s.allocated('a', r('cpus:1'));
    s.deactivate('a');
    expect(s.sort()).toEqual(['b', 'c']); // b = 0, c = 0
    s.allocated('a', r('cpus:1'));
    s.allocated('b', r('cpus:3'));
    s.activate('a');
    expect(s.sort()).toEqual(['c', 'a', 'b']); // a = .2, b = .3, c = 0
    expect(s.activeCount).toBe(3);
    expect(s.size).toBe(3);
    expect(s.first((name) => name !== 'c')).toBe('a');
    expect(s.first(() => false)).toBeUndefined();
  });

  it('refuses to give back more than a client holds', () => {
    const s = sorterWith('cpus:10', 'a');
    s.allocated('a', r('cpus:1'));
    expect(() => s.unallocated('a', r('cpus:2'))).toThrowError(expect.objectContaining({ code: 'CAIRN_INSUFFICIENT_RESOURCES' }));
    expect(s.allocation('a').equals(r('cpus:1'))).toBe(true);
  });

  it('keeps the incremental order equal to a full sort under random changes (seed 7)', () => {
    const rand = mulberry32(7);
    const s = new DrfSorter();
    const names = Array.from({ length: 40 }, (_, i) => `c${i}`);
    const held = new Map<string, number[]>();
    let total = [1000, 4000, 0, 0];
    s.setTotal(Resources.of({ cpus: total[0], mem: total[1] }));
    const reference = (): string[] => {
      const key = (n: string) => {
        const h = held.get(n)!;
        let d = 0;
        total.forEach((t, k) => {
          if (t > 0) d = Math.max(d, h[k] / t);
        });
        return d / s.weight(n);
      };
      return [...held.keys()]
        .filter((n) => s.isActive(n))
        .sort((a, b) => key(a) - key(b) || (a < b ? -1 : a > b ? 1 : 0));
    };
    for (let step = 0; step < 3000; step++) {
      const name = names[Math.floor(rand() * names.length)];
      const op = rand();
      if (!held.has(name)) {
        s.add(name, 1 + Math.floor(rand() * 3));
        held.set(name, [0, 0, 0, 0]);
        if (rand() < 0.8) s.activate(name);
      } else if (op < 0.5) {
        const c = Math.floor(rand() * 10);
        const m = Math.floor(rand() * 40);
        s.allocated(name, Resources.of({ cpus: c, mem: m }));
        held.get(name)![0] += c;
        held.get(name)![1] += m;
      } else if (op < 0.7) {
        const h = held.get(name)!;
        const c = Math.floor(rand() * (h[0] + 1));
        const m = Math.floor(rand() * (h[1] + 1));
        s.unallocated(name, Resources.of({ cpus: c, mem: m }));
        h[0] -= c;
        h[1] -= m;
      } else if (op < 0.8) {
        if (s.isActive(name)) s.deactivate(name);
        else s.activate(name);
      } else if (op < 0.85) {
        s.setWeight(name, 1 + Math.floor(rand() * 3));
      } else if (op < 0.88) {
        total = [500 + Math.floor(rand() * 1000), 2000 + Math.floor(rand() * 4000), 0, 0];
        s.setTotal(Resources.of({ cpus: total[0], mem: total[1] }));
      } else if (op < 0.9) {
        s.remove(name);
        held.delete(name);
      }
      // Read the order only sometimes, so changes also pile up between reads.
      if (step % 3 === 0) expect(s.sort(), `step ${step}`).toEqual(reference());
    }
  });
});
