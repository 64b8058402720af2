// shared/tls.ts and the command line's TLS flags: files checked once with errors naming the
// flag, listener options, certificate errors in plain words, and which command gets what.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import { describeTlsError, loadTls, schemeOf, TlsClient, tlsServerOptions } from '../../shared/tls.ts';
import { Cleanup } from '../harness/processes.ts';
import { hasOpenssl, makeCerts, type Certs } from '../harness/tls-certs.ts';

const openssl = hasOpenssl();
if (!openssl && !process.env.CI) console.warn('tls.test.ts (unit) skipped in part: openssl is not installed');
const withCerts = openssl || process.env.CI ? it : it.skip;

const cleanup = new Cleanup();
let certs: Certs;
let dir: string;
beforeAll(() => {
  dir = cleanup.dir('cairn-tls-unit-');
  if (openssl) certs = makeCerts(dir);
});
afterAll(() => cleanup.run());

describe('loadTls', () => {
  it('is undefined without any TLS flag', () => {
    expect(loadTls(undefined)).toBeUndefined();
    expect(loadTls({})).toBeUndefined();
  });

  it('names the flag of a file that cannot be read', () => {
    expect(() => loadTls({ ca: join(dir, 'missing.pem') })).toThrow(/--tls-ca .*missing\.pem: cannot read it \(ENOENT\)/);
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'hello');
    expect(() => loadTls({ ca: notPem })).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'tlsCa' }));
  });

  it('wants the certificate and its key together, and all three for client auth', () => {
    expect(() => loadTls({ cert: '/x.pem' })).toThrow(/--tls-key is missing/);
    expect(() => loadTls({ key: '/x.pem' })).toThrow(/--tls-cert is missing/);
    expect(() => loadTls({ cert: '/a', key: '/b', clientAuth: true })).toThrow(expect.objectContaining({ field: 'tlsClientAuth' }));
  });

  withCerts('loads a matching pair, and refuses a key that is not the certificate\'s', () => {
    const m = loadTls({ cert: certs.nodeCert, key: certs.nodeKey, ca: certs.ca, clientAuth: true })!;
    expect(schemeOf(m)).toBe('https');
    expect(tlsServerOptions(m as Required<typeof m>)).toMatchObject({ requestCert: true, rejectUnauthorized: true });
    expect(schemeOf(loadTls({ ca: certs.ca }))).toBe('http');
    expect(() => loadTls({ cert: certs.nodeCert, key: certs.clientKey })).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'tlsCert' }));
  });
});

describe('TlsClient', () => {
  it('is the global fetch when it has nothing of its own', () => {
    const c = new TlsClient(undefined);
    expect(c.configured).toBe(false);
    expect(c.fetch).toBe(globalThis.fetch);
    expect(c.connectOptions()).toEqual({});
  });

  withCerts('verifies with the CA and presents the certificate', async () => {
    const c = new TlsClient(loadTls({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey }));
    expect(c.configured).toBe(true);
    expect(Object.keys(c.connectOptions()).sort()).toEqual(['ca', 'cert', 'key']);
    await c.close();
  });
});

describe('describeTlsError', () => {
  it('says in words why, and what to give', () => {
    const unverified = new TypeError('fetch failed', { cause: Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }) });
    expect(describeTlsError(unverified)).toMatch(/TLS certificate could not be verified.*--tls-ca/);
    expect(describeTlsError(Object.assign(new Error('x'), { code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' }))).toMatch(/requires a client certificate.*--tls-cert/);
    expect(describeTlsError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBeUndefined();
  });
});

describe('command line', () => {
  function io(env: Record<string, string> = {}): CliIo {
    return { stdout: { write: () => true }, stderr: { write: () => true }, env, onInterrupt: () => () => undefined } as unknown as CliIo;
  }
  const record = () => {
    const calls: { command: string; options: any }[] = [];
    const handlers = Object.fromEntries(['up', 'master', 'agent', 'run', 'agents', 'tasks', 'state', 'logs', 'kill', 'top', 'members', 'masters', 'drain']
      .map((c) => [c, async (options: unknown) => (calls.push({ command: c, options }), 0)])) as unknown as CommandHandlers;
    return { calls, handlers };
  };

  it('gives client commands the files before the command, else from the environment', async () => {
    const r = record();
    expect(await runCli(['--tls-ca', '/ca.pem', '--tls-cert', '/c.pem', '--tls-key', '/k.pem', 'tasks'], io(), r.handlers)).toBe(0);
    expect(r.calls[0].options.tls).toEqual({ ca: '/ca.pem', cert: '/c.pem', key: '/k.pem' });
    expect(await runCli(['state'], io({ CAIRN_TLS_CA: '/env-ca.pem' }), r.handlers)).toBe(0);
    expect(r.calls[1].options.tls).toEqual({ ca: '/env-ca.pem' });
    expect(await runCli(['--tls-ca', '/flag.pem', 'run', 'true'], io({ CAIRN_TLS_CA: '/env-ca.pem' }), r.handlers)).toBe(0);
    expect(r.calls[2].options.tls).toEqual({ ca: '/flag.pem' });
    expect(await runCli(['agents'], io(), r.handlers)).toBe(0);
    expect(r.calls[3].options.tls).toBeUndefined();
  });

  it('gives the daemons their TLS flags', async () => {
    const r = record();
    await runCli(['master', '--tls-cert', '/c.pem', '--tls-key', '/k.pem', '--tls-ca', '/ca.pem', '--tls-client-auth'], io(), r.handlers);
    expect(r.calls[0].options.tls).toEqual({ cert: '/c.pem', key: '/k.pem', ca: '/ca.pem', clientAuth: true });
    await runCli(['agent', '--master', 'https://m:5050', '--tls-ca', '/ca.pem'], io(), r.handlers);
    expect(r.calls[1].options.tls).toEqual({ ca: '/ca.pem' });
    expect(r.calls[1].options.tlsCa).toBeUndefined();
    await runCli(['up', '--tls-cert', '/c.pem', '--tls-key', '/k.pem'], io(), r.handlers);
    expect(r.calls[2].options.tls).toEqual({ cert: '/c.pem', key: '/k.pem' });
    await runCli(['up'], io(), r.handlers);
    expect(r.calls[3].options.tls).toBeUndefined();
  });
});
