// The gossip replay guard: a packet seen before, too far behind its sender's newest, or sent
// further than the window from our clock is refused; reordering within the window is not;
// runs and channels are apart; memory stays bounded.

import { describe, expect, it } from 'vitest';
import { ReplayGuard, type PacketStamp } from '../../shared/gossip/replay-guard.ts';

const T0 = 1_700_000_000_000;
const stamp = (seq: number, over: Partial<PacketStamp> = {}): PacketStamp => ({ run: 'aaaaaaaaaaaaaaaa', stream: false, seq, sentAtMs: T0, ...over });

describe('gossip replay guard', () => {
  it('takes each sequence number once, in any order within the window', () => {
    const g = new ReplayGuard();
    expect(g.check(stamp(5), T0)).toBe('fresh');
    expect(g.check(stamp(5), T0)).toBe('replayed');
    expect(g.check(stamp(7), T0)).toBe('fresh');
    expect(g.check(stamp(6), T0)).toBe('fresh'); // late, but not seen: a reordered datagram
    expect(g.check(stamp(6), T0)).toBe('replayed');
    expect(g.check(stamp(3), T0)).toBe('fresh'); // before the first one seen, still within the window
    for (const s of [3, 5, 6, 7]) expect(g.check(stamp(s), T0), `seq ${s}`).toBe('replayed');
  });

  it('refuses what is too far behind the newest to tell, and forgets nothing it still covers when sliding', () => {
    const g = new ReplayGuard({ seqWindow: 64 });
    expect(g.check(stamp(10), T0)).toBe('fresh');
    expect(g.check(stamp(70), T0)).toBe('fresh'); // 10 is now 60 behind: still known
    expect(g.check(stamp(10), T0)).toBe('replayed');
    expect(g.check(stamp(6), T0)).toBe('replayed'); // 64 behind: too old to tell
    expect(g.check(stamp(20), T0)).toBe('fresh'); // a slot reused by the slide is clear
    expect(g.check(stamp(500), T0)).toBe('fresh'); // a jump past the whole window clears it
    expect(g.check(stamp(70), T0)).toBe('replayed');
    expect(g.check(stamp(499), T0)).toBe('fresh');
    expect(g.check(stamp(499), T0)).toBe('replayed');
  });

  it('refuses a packet sent more than the window away from our clock, either way', () => {
    const g = new ReplayGuard({ windowMs: 30_000 });
    expect(g.check(stamp(1, { sentAtMs: T0 - 30_001 }), T0)).toBe('stale');
    expect(g.check(stamp(2, { sentAtMs: T0 + 30_001 }), T0)).toBe('stale');
    expect(g.check(stamp(3, { sentAtMs: T0 - 29_000 }), T0)).toBe('fresh'); // a clock 29 s behind
    expect(g.check(stamp(4, { sentAtMs: T0 + 29_000 }), T0)).toBe('fresh'); // or ahead
    // A packet taken once, sent again after the window: refused by its time.
    expect(g.check(stamp(3, { sentAtMs: T0 - 29_000 }), T0 + 2_000)).toBe('stale');
  });

  it('keeps runs and channels apart: a restarted member starts again at 1', () => {
    const g = new ReplayGuard();
    expect(g.check(stamp(1), T0)).toBe('fresh');
    expect(g.check(stamp(1, { stream: true }), T0)).toBe('fresh');
    expect(g.check(stamp(1, { run: 'bbbbbbbbbbbbbbbb' }), T0)).toBe('fresh');
    expect(g.check(stamp(1, { run: 'bbbbbbbbbbbbbbbb' }), T0)).toBe('replayed');
    expect(g.check(stamp(1, { stream: true }), T0)).toBe('replayed');
  });

  it('forgets runs silent for two windows, and still refuses their packets by time', () => {
    const g = new ReplayGuard({ windowMs: 1_000 });
    for (let r = 0; r < 100; r++) g.check(stamp(1, { run: r.toString(16).padStart(16, '0') }), T0);
    expect(g.tracked).toBe(100);
    g.check(stamp(2, { run: 'cccccccccccccccc', sentAtMs: T0 + 1_500 }), T0 + 1_500);
    expect(g.tracked).toBe(101); // swept at most once a window, and none was old enough yet
    expect(g.check(stamp(3, { run: 'cccccccccccccccc', sentAtMs: T0 + 3_000 }), T0 + 3_000)).toBe('fresh');
    expect(g.tracked).toBe(1);
    expect(g.check(stamp(1, { run: '0'.repeat(16) }), T0 + 3_000)).toBe('stale');
  });

  it('refuses a bad configuration', () => {
    expect(() => new ReplayGuard({ seqWindow: 100 })).toThrow(/multiple of 32/);
    expect(() => new ReplayGuard({ windowMs: 0 })).toThrow(/positive/);
  });
});
