// The Raft endpoint's caps on connections not yet authenticated (per address and in all), and
// the refusal log that keeps a flood of refusals from becoming a flood of log lines.

import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { PreAuthGate } from '../../master/replication/pre-auth-gate.ts';
import { RefusalLog } from '../../shared/refusal-log.ts';

/** A logger that keeps its lines. */
function capture(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const out = new PassThrough();
  out.on('data', (d: Buffer) => lines.push(...d.toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)));
  return { log: pino({ level: 'warn' }, out), lines };
}

/** A socket stand-in: what was written to it, and whether it was hung up. */
function socket(): PassThrough & { written: string } {
  const s = Object.assign(new PassThrough(), { written: '' });
  s.on('data', (d: Buffer) => (s.written += d.toString()));
  return s;
}

const flush = () => new Promise((r) => setImmediate(r));

describe('PreAuthGate', () => {
  const limits = { maxBytes: 1024, timeoutMs: 1000, perAddress: 2, total: 3 };

  it('refuses past the per-address cap and past the total, answering 503 with the reason', async () => {
    const gate = new PreAuthGate(new RefusalLog(pino({ level: 'silent' }), 'refused'), limits);
    expect(gate.admit('10.0.0.1', socket())).toBeDefined();
    expect(gate.admit('10.0.0.1', socket())).toBeDefined();
    const third = socket();
    expect(gate.admit('10.0.0.1', third)).toBeUndefined();
    await flush();
    expect(third.written).toMatch(/^HTTP\/1.1 503 /);
    expect(third.written).toContain('too many unauthenticated connections from this address (2)');
    expect(gate.admit('10.0.0.2', socket())).toBeDefined();
    const fourth = socket();
    expect(gate.admit('10.0.0.3', fourth)).toBeUndefined();
    await flush();
    expect(fourth.written).toContain('too many unauthenticated connections (3)');
    expect(gate.pending).toBe(3);
  });

  it('frees a slot when its connection authenticates or closes, once each', async () => {
    const gate = new PreAuthGate(new RefusalLog(pino({ level: 'silent' }), 'refused'), limits);
    const a = socket();
    const slotA = gate.admit('10.0.0.1', a)!;
    const b = socket();
    gate.admit('10.0.0.1', b);
    slotA.authenticated();
    slotA.authenticated();
    a.destroy();
    await flush();
    expect(gate.pending).toBe(1);
    b.destroy();
    await flush();
    expect(gate.pending).toBe(0);
    expect(gate.admit('10.0.0.1', socket())).toBeDefined();
    expect(gate.admit('10.0.0.1', socket())).toBeDefined();
  });
});

describe('RefusalLog', () => {
  it('logs a reason at most once per interval, saying how many went unlogged', () => {
    const { log, lines } = capture();
    let now = 0;
    const refusals = new RefusalLog(log, 'refused a connection', 10_000, () => now);
    for (let i = 0; i < 100; i++) refusals.refused('handshake timeout', { remote: `10.0.0.${i}` });
    refusals.refused('too many', { remote: '10.0.0.1' });
    now = 10_000;
    refusals.refused('handshake timeout', { remote: '10.0.0.200' });
    return new Promise<void>((resolve) => setImmediate(() => {
      expect(lines.map((l) => [l.reason, l.unloggedSinceLast, l.remote])).toEqual([
        ['handshake timeout', 0, '10.0.0.0'],
        ['too many', 0, '10.0.0.1'],
        ['handshake timeout', 99, '10.0.0.200'],
      ]);
      expect(refusals.counts.get('handshake timeout')).toBe(101);
      expect(refusals.total).toBe(102);
      resolve();
    }));
  });
});
