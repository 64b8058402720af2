// The tuning tests' refusals: what a function throws, which must be a CAIRN_BAD_REQUEST.

import { expect } from 'vitest';
import { CairnError } from '../../shared/errors.ts';

/** The error `fn` throws: it must be a CairnError with code CAIRN_BAD_REQUEST. */
export function refusal(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('CAIRN_BAD_REQUEST');
    return err as CairnError;
  }
  throw new Error('expected a refusal');
}
