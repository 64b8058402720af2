import { describe, expect, it } from 'vitest';
import { encodeRecord, MAX_RECORD_BYTES, RecordIODecoder } from '../../shared/recordio.ts';
import { CairnError } from '../../shared/errors.ts';

function texts(records: Buffer[]): string[] {
  return records.map((r) => r.toString('utf8'));
}

describe('encodeRecord', () => {
  it('prefixes the byte length, not the character length', () => {
    expect(encodeRecord('hello').toString()).toBe('5\nhello');
    // "é" is two bytes, "€" three, "😀" four.
    expect(encodeRecord('é€😀').toString()).toBe('9\né€😀');
  });

  it('writes objects as JSON and bytes as they are', () => {
    expect(encodeRecord({ type: 'HEARTBEAT' }).toString()).toBe('20\n{"type":"HEARTBEAT"}');
    expect(encodeRecord(new Uint8Array([1, 2, 3]))).toEqual(Buffer.from([0x33, 0x0a, 1, 2, 3]));
    expect(encodeRecord('').toString()).toBe('0\n');
  });
});

describe('RecordIODecoder', () => {
  it('reads several records from one chunk', () => {
    const d = new RecordIODecoder();
    const chunk = Buffer.concat([encodeRecord('a'), encodeRecord('bc'), encodeRecord('')]);
    expect(texts(d.decode(chunk))).toEqual(['a', 'bc', '']);
    expect(d.pendingBytes).toBe(0);
    d.end();
  });

  it('reassembles records split at every possible byte', () => {
    const stream = Buffer.concat([encodeRecord('{"type":"HEARTBEAT"}'), encodeRecord('x'.repeat(123)), encodeRecord('ünïcödé ✓')]);
    for (let cut = 0; cut <= stream.length; cut++) {
      const d = new RecordIODecoder();
      const got = [...d.decode(stream.subarray(0, cut)), ...d.decode(stream.subarray(cut))];
      expect(texts(got)).toEqual(['{"type":"HEARTBEAT"}', 'x'.repeat(123), 'ünïcödé ✓']);
      d.end();
    }
  });

  it('reassembles a stream fed one byte at a time, splitting multibyte characters', () => {
    const words = ['Grüße', '日本語のテキスト', '🚀🚀', ''];
    const stream = Buffer.concat(words.map((w) => encodeRecord(w)));
    const d = new RecordIODecoder();
    const got: Buffer[] = [];
    for (const byte of stream) got.push(...d.decode(Buffer.from([byte])));
    expect(texts(got)).toEqual(words);
  });

  it('parses JSON records', () => {
    const d = new RecordIODecoder();
    const stream = Buffer.concat([encodeRecord({ type: 'HEARTBEAT' }), encodeRecord({ type: 'ERROR', error: { message: 'ß' } })]);
    expect(d.decodeJson(stream.subarray(0, 7))).toEqual([]);
    expect(d.decodeJson(stream.subarray(7))).toEqual([{ type: 'HEARTBEAT' }, { type: 'ERROR', error: { message: 'ß' } }]);
  });

  it('accepts string chunks', () => {
    const d = new RecordIODecoder();
    expect(texts(d.decode('3\nab'))).toEqual([]);
    expect(texts(d.decode('c2\nde'))).toEqual(['abc', 'de']);
  });

  it('returns copies that do not change when the caller reuses its chunk', () => {
    const d = new RecordIODecoder();
    const chunk = Buffer.from('3\nabc');
    const [record] = d.decode(chunk);
    chunk.fill(0);
    expect(record.toString()).toBe('abc');
  });

  it('rejects a non-numeric length with CAIRN_BAD_FRAME', () => {
    const d = new RecordIODecoder();
    expect(() => d.decode('12a\n')).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_FRAME' }));
    // The stream cannot be resynchronised: every later call fails too.
    expect(() => d.decode('1\na')).toThrow(CairnError);
  });

  it('rejects an empty length line', () => {
    expect(() => new RecordIODecoder().decode('\nabc')).toThrowError(/empty record length/);
  });

  it('rejects a length over the limit, even before the newline arrives', () => {
    expect(() => new RecordIODecoder().decode(`${MAX_RECORD_BYTES + 1}\n`)).toThrowError(/exceeds/);
    expect(() => new RecordIODecoder().decode('999999999999')).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_FRAME' }));
    // Exactly the limit is allowed (nothing is allocated until bytes arrive).
    const d = new RecordIODecoder();
    expect(d.decode(`${MAX_RECORD_BYTES}\n`)).toEqual([]);
  });

  it('end() reports a stream cut inside a record', () => {
    const d = new RecordIODecoder();
    d.decode('5\nab');
    expect(() => d.end()).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_FRAME' }));
    const d2 = new RecordIODecoder();
    d2.decode('12');
    expect(() => d2.end()).toThrowError(/stream ended inside a record/);
  });

  it('reports non-JSON records from decodeJson', () => {
    expect(() => new RecordIODecoder().decodeJson('3\n{x}')).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_FRAME' }));
  });
});
