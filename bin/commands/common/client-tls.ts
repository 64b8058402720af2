// The command line as a TLS client: `cairn --tls-ca FILE [--tls-cert FILE --tls-key FILE]
// COMMAND ...` (given before the command, for every command that talks to a master), or
// CAIRN_TLS_CA / CAIRN_TLS_CERT / CAIRN_TLS_KEY in the environment; a flag wins over its
// variable. The files are read once per command (shared/tls.ts), and one TlsClient serves
// every request the command makes.

import { resolve } from 'node:path';
import { loadTls, TlsClient, type TlsFiles } from '../../../shared/tls.ts';

/** The program-level flags as commander parses them. */
export interface ClientTlsFlagValues {
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
}

/** The files from the flags, else the environment; undefined when neither names one. */
export function clientTlsFiles(flags: ClientTlsFlagValues, env: Readonly<Record<string, string | undefined>>): TlsFiles | undefined {
  const pick = (flag: string | undefined, variable: string): string | undefined => {
    const v = flag ?? env[variable];
    return v === undefined || v === '' ? undefined : resolve(v);
  };
  const files: TlsFiles = {};
  const ca = pick(flags.tlsCa, 'CAIRN_TLS_CA');
  const cert = pick(flags.tlsCert, 'CAIRN_TLS_CERT');
  const key = pick(flags.tlsKey, 'CAIRN_TLS_KEY');
  if (ca !== undefined) files.ca = ca;
  if (cert !== undefined) files.cert = cert;
  if (key !== undefined) files.key = key;
  return Object.keys(files).length > 0 ? files : undefined;
}

/**
 * The client for a command's requests: verifying masters (and agents) against the CA given,
 * presenting the certificate given; undefined (Node's CAs, nothing presented) without files.
 * Throws a CAIRN_BAD_FLAG naming the flag for a file that cannot be used.
 */
export function clientTls(files: TlsFiles | undefined): TlsClient | undefined {
  const material = loadTls(files);
  return material ? new TlsClient(material) : undefined;
}
