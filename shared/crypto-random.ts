// The random source daemons hand their cores: bits from the operating system's CSPRNG,
// drawn in blocks so a busy leader does not make a system call per uuid.

import { randomFillSync } from 'node:crypto';
import type { RandomSource } from './random.ts';

export function cryptoRandom(): RandomSource {
  const block = new Uint32Array(1024);
  let next = block.length;
  return {
    nextU32(): number {
      if (next === block.length) {
        randomFillSync(block);
        next = 0;
      }
      return block[next++];
    },
  };
}
