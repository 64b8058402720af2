// The paper's dynamic strategy as a state machine: levels go down as the search stagnates and
// up on an improvement or an idle cluster; at level L it declines L × d offers that someone of
// a higher priority wants before it takes one; it never declines what nobody else wants.

import { describe, expect, it } from 'vitest';
import { DynamicPriority } from '../../master/frameworks/tuning/dynamic-priority.ts';

const settings = { declinesPerLevel: 2, patience: 3, maxLevel: 2 };

describe('the dynamic priority of one experiment', () => {
  it('takes every offer at level 0', () => {
    const p = new DynamicPriority(settings);
    for (let i = 0; i < 5; i++) expect(p.offer(true)).toBe('take');
  });

  it('drops a level after `patience` finished trials without a better best, down to maxLevel', () => {
    const p = new DynamicPriority(settings);
    p.trialFinished(false);
    p.trialFinished(false);
    expect(p.level).toBe(0);
    p.trialFinished(false);
    expect(p.level).toBe(1);
    for (let i = 0; i < 9; i++) p.trialFinished(false);
    expect(p.level).toBe(2);
    p.trialFinished(true);
    expect(p.level).toBe(1);
  });

  it('at level L declines L × d wanted offers, then takes one', () => {
    const p = new DynamicPriority(settings);
    for (let i = 0; i < 6; i++) p.trialFinished(false);
    expect(p.level).toBe(2);
    // 2 × 2 declines, a take, and again.
    expect([...Array(10)].map(() => p.offer(true))).toEqual(['decline', 'decline', 'decline', 'decline', 'take', 'decline', 'decline', 'decline', 'decline', 'take']);
  });

  it('takes what nobody else wants, and d such offers in a row raise its priority', () => {
    const p = new DynamicPriority(settings);
    for (let i = 0; i < 6; i++) p.trialFinished(false);
    expect(p.offer(false)).toBe('take');
    expect(p.level).toBe(2);
    expect(p.offer(false)).toBe('take');
    expect(p.level).toBe(1);
    // A wanted offer in between starts the count again.
    expect(p.offer(false)).toBe('take');
    expect(p.offer(true)).toBe('decline');
    expect(p.offer(false)).toBe('take');
    expect(p.level).toBe(1);
    expect(p.offer(false)).toBe('take');
    expect(p.level).toBe(0);
  });
});
