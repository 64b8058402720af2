// The token in an Authorization header, in the spellings clients send it: `Bearer TOKEN`
// (RFC 6750) and DC/OS's `token=TOKEN` (what DC/OS clients and the libraries written for it
// send). Masters, agents and the dashboard's login links read tokens through this one
// function, so a spelling accepted by one is accepted by all. Pure.

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const DCOS_TOKEN = /^token=(\S+)\s*$/i;

/** The token of `Bearer TOKEN` or `token=TOKEN`; undefined for anything else (Basic included). */
export function bearerToken(header: string | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  return (BEARER.exec(header) ?? DCOS_TOKEN.exec(header))?.[1];
}
