// Offer filters on their own: when a refusal holds, and that expired ones do not pile up.

import { describe, expect, it } from 'vitest';
import { OfferFilters } from '../../master/allocator/offer-filters.ts';
import { Resources } from '../../shared/resources.ts';

const R = (text: string) => Resources.parse(text);

describe('OfferFilters', () => {
  it('filters what is within the refusal, until it expires', () => {
    const f = new OfferFilters();
    f.add('a1', R('cpus:2;mem:1024;ports:[1-10]'), 0, 100);
    expect(f.filtered('a1', R('cpus:2;mem:1024;ports:[1-10]'), 0)).toBe(true);
    expect(f.filtered('a1', R('cpus:1;mem:512;ports:[2-3]'), 99)).toBe(true); // less than refused
    expect(f.filtered('a1', R('cpus:3;mem:1024'), 50)).toBe(false); // more cpus than refused
    expect(f.filtered('a1', R('cpus:1;ports:[11-11]'), 50)).toBe(false); // a port not refused
    expect(f.filtered('a2', R('cpus:1'), 50)).toBe(false); // another agent
    expect(f.filtered('a1', R('cpus:1'), 100)).toBe(false); // expired, and dropped
    expect(f.size).toBe(0);
  });

  it('drops expired filters of an agent when adding one, and forgets an agent or everything', () => {
    const f = new OfferFilters();
    for (let t = 0; t < 100; t++) f.add('a1', R('cpus:1'), t, t + 5);
    expect(f.size).toBe(5); // only those still live at t = 99
    f.add('a2', R('cpus:1'), 0, 1000);
    f.clearAgent('a1');
    expect(f.size).toBe(1);
    f.clear();
    expect(f.size).toBe(0);
  });
});
