// Turning a master's non-2xx answer into a CairnError the caller can match on.
// The master answers bad input with a JSON body `{code, message, field}`; anything else
// (a proxy's HTML page, an empty 503) still becomes a CairnError that says what happened.

import { CairnError, type CairnErrorCode } from '../errors.ts';

/** A CairnError raised from an HTTP answer; `status` is the HTTP status code. */
export class MasterHttpError extends CairnError {
  readonly status: number;

  constructor(status: number, code: CairnErrorCode, message: string, field?: string) {
    super(code, message, field);
    this.name = 'MasterHttpError';
    this.status = status;
  }
}

/**
 * Builds the error for an answer with the given status and body text. The code comes from
 * the body when the master sent one; otherwise CAIRN_BAD_REQUEST, with the status in the
 * message so a 5xx is not mistaken for bad input.
 */
export function errorFromResponse(status: number, bodyText: string, what: string): MasterHttpError {
  let parsed: unknown;
  try {
    parsed = bodyText === '' ? undefined : JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const body = parsed as { code?: unknown; message?: unknown; field?: unknown; error?: unknown };
    const message = typeof body.message === 'string' ? body.message : typeof body.error === 'string' ? body.error : undefined;
    if (typeof body.code === 'string' || message !== undefined) {
      const code = (typeof body.code === 'string' && body.code.startsWith('CAIRN_') ? body.code : 'CAIRN_BAD_REQUEST') as CairnErrorCode;
      return new MasterHttpError(status, code, message ?? `${what} failed with HTTP ${status}`, typeof body.field === 'string' ? body.field : undefined);
    }
  }
  const text = bodyText.trim().slice(0, 500);
  return new MasterHttpError(status, 'CAIRN_BAD_REQUEST', `${what} failed with HTTP ${status}${text ? `: ${text}` : ''}`);
}
