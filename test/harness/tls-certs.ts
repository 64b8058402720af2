// Certificates for TLS tests and benches, made with openssl in a directory the caller owns
// (and removes): a CA, a certificate for the daemons (127.0.0.1 and localhost, for serving
// and for dialling each other) and a user's client certificate. P-256 keys: quick to make.

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface Certs {
  dir: string;
  ca: string;
  /** The daemons' certificate: 127.0.0.1 and localhost, for serving and for dialling each other. */
  nodeCert: string;
  nodeKey: string;
  /** A user's client certificate, signed by the same CA. */
  clientCert: string;
  clientKey: string;
}

/** A CA and two certificates it signs, in `dir` (P-256 keys: quick to make). */
export function makeCerts(dir: string): Certs {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const key = (name: string) => run('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name);
  key('ca.key');
  run('req', '-x509', '-new', '-key', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=cairn test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  const sign = (name: string, cn: string, ext: string) => {
    key(`${name}.key`);
    run('req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`);
  };
  sign('node', 'cairn node', 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  sign('client', 'tester', 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n');
  return { dir, ca: join(dir, 'ca.pem'), nodeCert: join(dir, 'node.pem'), nodeKey: join(dir, 'node.key'), clientCert: join(dir, 'client.pem'), clientKey: join(dir, 'client.key') };
}
