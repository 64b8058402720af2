// TLS for every HTTP and WebSocket endpoint of Cairn and for every client of them, in one
// place: the certificate files are read and checked once, at the edge, with errors that name
// the flag; the same loaded material then gives the listener's options (fastify's `https`),
// a fetch that verifies against the cluster's CA and presents this process's certificate,
// the options of a `ws` client and those of a node:https agent. Nothing here turns
// verification off: a client given no CA verifies against Node's default trusted CAs.
//
// Why undici: Node 20's global fetch takes no CA and no client certificate (only a
// `dispatcher`, whose class Node does not export). The undici package is the code Node's fetch
// is built on; its own `fetch` with an `Agent({ connect: { ca, cert, key } })` as dispatcher
// is that same fetch with our TLS settings. Its major version (6) is the one Node 20 bundles,
// so the two never meet mismatched (a dispatcher of one major handed to the other's fetch
// breaks), and it runs on every Node the project supports.

import { readFileSync } from 'node:fs';
import type { AgentOptions as HttpsAgentOptions, ServerOptions as HttpsServerOptions } from 'node:https';
import { isIP } from 'node:net';
import { connect as tlsConnect, createSecureContext } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { CairnError } from './errors.ts';

/** The TLS flags as given: paths to PEM files, and whether clients must present a certificate. */
export interface TlsFiles {
  /** `--tls-cert`: this process's certificate (chain), PEM. */
  cert?: string;
  /** `--tls-key`: its private key, PEM. */
  key?: string;
  /** `--tls-ca`: the CA(s) that peers' certificates must be signed by, PEM. */
  ca?: string;
  /** `--tls-client-auth`: the listener refuses clients without a certificate signed by the CA. */
  clientAuth?: boolean;
}

/** The loaded files. `cert` and `key` come together; `clientAuth` needs them and `ca`. */
export interface TlsMaterial {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
  clientAuth: boolean;
}

/** The flag each file came from, for error messages. */
const FLAG = { cert: '--tls-cert', key: '--tls-key', ca: '--tls-ca' } as const;
const FIELD = { cert: 'tlsCert', key: 'tlsKey', ca: 'tlsCa' } as const;

function readPem(which: 'cert' | 'key' | 'ca', path: string): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FLAG', `${FLAG[which]} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, FIELD[which]);
  }
  if (!data.includes('-----BEGIN ')) throw new CairnError('CAIRN_BAD_FLAG', `${FLAG[which]} ${path}: not a PEM file (no -----BEGIN line)`, FIELD[which]);
  return data;
}

/**
 * Reads and checks the files once. Undefined when no TLS flag was given. Throws a
 * CAIRN_BAD_FLAG naming the flag: a file that cannot be read or is not PEM, a certificate
 * without its key (or the other way round), a key that does not match the certificate,
 * `--tls-client-auth` without a certificate, key and CA.
 */
export function loadTls(files: TlsFiles | undefined): TlsMaterial | undefined {
  if (!files || (files.cert === undefined && files.key === undefined && files.ca === undefined && !files.clientAuth)) return undefined;
  if ((files.cert === undefined) !== (files.key === undefined)) {
    const missing = files.cert === undefined ? 'cert' : 'key';
    throw new CairnError('CAIRN_BAD_FLAG', `${FLAG.cert} and ${FLAG.key} go together: ${FLAG[missing]} is missing`, FIELD[missing]);
  }
  if (files.clientAuth && (files.cert === undefined || files.ca === undefined)) {
    throw new CairnError('CAIRN_BAD_FLAG', '--tls-client-auth needs --tls-cert, --tls-key (what this process presents) and --tls-ca (what client certificates must be signed by)', 'tlsClientAuth');
  }
  const m: TlsMaterial = { clientAuth: files.clientAuth === true };
  if (files.ca !== undefined) m.ca = readPem('ca', files.ca);
  if (files.cert !== undefined && files.key !== undefined) {
    m.cert = readPem('cert', files.cert);
    m.key = readPem('key', files.key);
    try {
      createSecureContext({ cert: m.cert, key: m.key });
    } catch (err) {
      throw new CairnError('CAIRN_BAD_FLAG', `${FLAG.cert} ${files.cert} with ${FLAG.key} ${files.key}: ${(err as Error).message}`, FIELD.cert);
    }
  }
  if (m.ca) {
    try {
      createSecureContext({ ca: m.ca });
    } catch (err) {
      throw new CairnError('CAIRN_BAD_FLAG', `${FLAG.ca} ${files.ca}: ${(err as Error).message}`, FIELD.ca);
    }
  }
  return m;
}

/** Whether a listener with this material serves HTTPS/WSS (it has a certificate and key). */
export function servesTls(m: TlsMaterial | undefined): m is TlsMaterial & { cert: Buffer; key: Buffer } {
  return m?.cert !== undefined && m.key !== undefined;
}

/** `https` or `http`, as a listener with this material serves. */
export function schemeOf(m: TlsMaterial | undefined): 'https' | 'http' {
  return servesTls(m) ? 'https' : 'http';
}

/**
 * A listener's options (fastify's `https`, or https.createServer's). With client auth, a
 * client without a certificate signed by the CA is refused during the handshake.
 */
export function tlsServerOptions(m: TlsMaterial & { cert: Buffer; key: Buffer }): HttpsServerOptions {
  return {
    cert: m.cert,
    key: m.key,
    ...(m.ca ? { ca: m.ca } : {}),
    requestCert: m.clientAuth,
    rejectUnauthorized: m.clientAuth,
  };
}

/**
 * How one process dials HTTPS and WSS: verifying servers against `ca` (Node's default CAs
 * when none), presenting `cert`/`key` to servers that ask for one (mutual TLS). Made once
 * per process (or daemon) and shared by all its clients, so connections are pooled.
 */
export class TlsClient {
  /** fetch with these settings (the global fetch when there are none to apply). */
  readonly fetch: typeof globalThis.fetch;
  private readonly dispatcher: Agent | undefined;

  constructor(private readonly material: Pick<TlsMaterial, 'ca' | 'cert' | 'key'> | undefined = undefined) {
    const connect = this.connectOptions();
    if (Object.keys(connect).length === 0) {
      this.dispatcher = undefined;
      this.fetch = globalThis.fetch;
    } else {
      const dispatcher = new Agent({ connect });
      this.dispatcher = dispatcher;
      // undici's Request/Response are the classes Node's own fetch uses; only the type
      // declarations differ between the package and @types/node.
      this.fetch = (async (input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) => {
        try {
          return await undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]);
        } catch (err) {
          throw await this.explainClosed(err, input);
        }
      }) as unknown as typeof globalThis.fetch;
    }
  }

  /** Whether this client has anything of its own (a CA or a certificate). */
  get configured(): boolean {
    return this.dispatcher !== undefined;
  }

  /** The TLS options of a `ws` client or a node:https request/agent. */
  connectOptions(): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
    const m = this.material;
    return {
      ...(m?.ca ? { ca: m.ca } : {}),
      ...(m?.cert && m.key ? { cert: m.cert, key: m.key } : {}),
    };
  }

  /** Options for a node:https Agent. */
  httpsAgentOptions(base: HttpsAgentOptions = {}): HttpsAgentOptions {
    return { ...base, ...this.connectOptions() };
  }

  /**
   * undici reports a server's TLS alert (a client certificate required or refused) only as
   * "other side closed". When an HTTPS request fails so, one handshake alone asks the server
   * why, and the alert becomes the error's cause (describeTlsError then says it in words).
   * Costs nothing unless a request has already failed.
   */
  private async explainClosed(err: unknown, input: unknown): Promise<unknown> {
    if (!codesOf(err).includes('UND_ERR_SOCKET')) return err;
    let url: URL;
    try {
      url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : (input as { url: string }).url);
    } catch {
      return err;
    }
    if (url.protocol !== 'https:') return err;
    const alert = await new Promise<Error | undefined>((resolve) => {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const socket = tlsConnect({ host, port: Number(url.port) || 443, ...(isIP(host) === 0 ? { servername: host } : {}), ...this.connectOptions() });
      const done = (e: Error | undefined) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(e);
      };
      // A TLS 1.3 server judges the client's certificate after the client's handshake ends.
      const timer = setTimeout(() => done(undefined), 2_000);
      socket.once('error', (e) => done(e));
      socket.once('close', () => done(undefined));
      socket.once('secureConnect', () => socket.write('HEAD / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'));
      socket.once('data', () => done(undefined));
    });
    if (alert === undefined || describeTlsError(alert) === undefined) return err;
    return new TypeError(`fetch failed: ${(alert as Error).message}`, { cause: alert });
  }

  /** Closes pooled connections (daemons stopping; a CLI's idle sockets do not hold it open). */
  async close(): Promise<void> {
    await this.dispatcher?.close().catch(() => undefined);
  }
}

/** The client side of a daemon's material: it verifies with the CA and presents its own certificate. */
export function daemonTlsClient(m: TlsMaterial | undefined): TlsClient {
  return new TlsClient(m);
}

/** Certificate errors a TLS client reports when it cannot verify the server. */
const UNVERIFIED = new Map<string, string>([
  ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'it is not signed by a CA this client trusts'],
  ['UNABLE_TO_GET_ISSUER_CERT', 'it is not signed by a CA this client trusts'],
  ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'it is not signed by a CA this client trusts'],
  ['SELF_SIGNED_CERT_IN_CHAIN', 'it is signed by a CA this client does not trust'],
  ['DEPTH_ZERO_SELF_SIGNED_CERT', 'it is self-signed'],
  ['CERT_UNTRUSTED', 'it is not trusted'],
  ['CERT_SIGNATURE_FAILURE', 'its signature is wrong'],
  ['CERT_HAS_EXPIRED', 'it has expired'],
  ['CERT_NOT_YET_VALID', 'it is not valid yet'],
  ['ERR_TLS_CERT_ALTNAME_INVALID', 'it is not issued for this address'],
]);

/** Alerts a server sends when it refuses the client's certificate (or the lack of one). */
const REFUSED_CLIENT = new Set([
  'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
]);

function codesOf(err: unknown): string[] {
  const out: string[] = [];
  let e = err as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (typeof e.code === 'string') out.push(e.code);
    e = e.cause as typeof e;
  }
  return out;
}

/**
 * A TLS failure in plain words, with what to do about it; undefined when `err` (or its
 * cause) is not one. Clients put this in front of the socket's code.
 */
export function describeTlsError(err: unknown): string | undefined {
  for (const code of codesOf(err)) {
    const why = UNVERIFIED.get(code);
    if (why !== undefined) {
      return `the server's TLS certificate could not be verified: ${why} (${code}); give the CA that signed it with --tls-ca or CAIRN_TLS_CA`;
    }
    if (REFUSED_CLIENT.has(code)) {
      return `the server refused the connection: it requires a client certificate signed by its CA (mutual TLS) (${code}); give one with --tls-cert and --tls-key`;
    }
    if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') {
      return `the server does not speak TLS (${code}): use an http:// URL`;
    }
  }
  return undefined;
}
