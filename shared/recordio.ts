// Mesos RecordIO framing: every record is `<decimal length in bytes>\n<bytes>`.
// The scheduler API's SUBSCRIBE answer is one long chunked stream of such records, each
// a JSON event. Chunk boundaries of the transport have nothing to do with record
// boundaries, so the decoder keeps whatever it has not yet been able to complete.

import { CairnError } from './errors.ts';

/** No Cairn event comes near this; a larger length means the stream is not RecordIO. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

/** "67108864" has 8 digits; a longer length line cannot be valid. */
const MAX_LENGTH_DIGITS = String(MAX_RECORD_BYTES).length;

const NEWLINE = 0x0a;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

/** Frames one record. Objects are written as JSON; strings as UTF-8. */
export function encodeRecord(record: string | Uint8Array | object): Buffer {
  let body: Buffer;
  if (typeof record === 'string') body = Buffer.from(record, 'utf8');
  else if (record instanceof Uint8Array) body = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  else body = Buffer.from(JSON.stringify(record), 'utf8');
  return Buffer.concat([Buffer.from(`${body.length}\n`, 'ascii'), body]);
}

/**
 * Incremental decoder: feed it chunks as they arrive; each call returns the records that
 * became complete. A malformed length throws CAIRN_BAD_FRAME, after which the decoder
 * refuses further input (the stream cannot be resynchronised).
 */
export class RecordIODecoder {
  /** Digits of the length line read so far, while no length is known. */
  private lengthDigits = '';
  /** Length of the record being read; undefined while reading its length line. */
  private expected: number | undefined;
  /** Pieces of the record being read, and their total size. */
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private failed: CairnError | undefined;

  /** Feeds one chunk; returns every record completed by it, in order. */
  decode(chunk: Uint8Array | string): Buffer[] {
    if (this.failed) throw this.failed;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: Buffer[] = [];
    let pos = 0;
    while (pos < buf.length) {
      if (this.expected === undefined) {
        pos = this.readLength(buf, pos);
        if (this.expected === 0) this.finishRecord(out);
        continue;
      }
      const want = this.expected - this.partsBytes;
      const take = Math.min(want, buf.length - pos);
      this.parts.push(buf.subarray(pos, pos + take));
      this.partsBytes += take;
      pos += take;
      if (this.partsBytes === this.expected) this.finishRecord(out);
    }
    return out;
  }

  /** Convenience for JSON streams: decodes and parses each completed record. */
  decodeJson<T = unknown>(chunk: Uint8Array | string): T[] {
    return this.decode(chunk).map((record) => {
      try {
        return JSON.parse(record.toString('utf8')) as T;
      } catch (err) {
        throw this.fail(`record is not JSON: ${(err as Error).message}`);
      }
    });
  }

  /** Bytes held for a record (or length line) not yet complete. */
  get pendingBytes(): number {
    return this.lengthDigits.length + this.partsBytes;
  }

  /** Call when the stream ends: throws if it ended in the middle of a record. */
  end(): void {
    if (this.failed) throw this.failed;
    if (this.pendingBytes > 0 || this.expected !== undefined) {
      throw this.fail(`stream ended inside a record (${this.pendingBytes} bytes pending)`);
    }
  }

  /** Reads length digits from buf at pos; returns the position after what it consumed. */
  private readLength(buf: Buffer, pos: number): number {
    while (pos < buf.length) {
      const byte = buf[pos++];
      if (byte === NEWLINE) {
        if (this.lengthDigits === '') throw this.fail('empty record length');
        const length = Number(this.lengthDigits);
        if (length > MAX_RECORD_BYTES) {
          throw this.fail(`record length ${length} exceeds the ${MAX_RECORD_BYTES}-byte limit`);
        }
        this.lengthDigits = '';
        this.expected = length;
        return pos;
      }
      if (byte < DIGIT_0 || byte > DIGIT_9) {
        throw this.fail(`record length is not a decimal number (byte 0x${byte.toString(16).padStart(2, '0')})`);
      }
      this.lengthDigits += String.fromCharCode(byte);
      if (this.lengthDigits.length > MAX_LENGTH_DIGITS) {
        throw this.fail(`record length ${this.lengthDigits}… exceeds the ${MAX_RECORD_BYTES}-byte limit`);
      }
    }
    return pos;
  }

  private finishRecord(out: Buffer[]): void {
    // A copy: the pieces are views into the caller's chunks, which it may reuse.
    out.push(Buffer.concat(this.parts, this.partsBytes));
    this.parts = [];
    this.partsBytes = 0;
    this.expected = undefined;
  }

  private fail(message: string): CairnError {
    this.failed = new CairnError('CAIRN_BAD_FRAME', message, 'recordio');
    return this.failed;
  }
}
