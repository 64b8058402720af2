// TLS end to end, with real processes on loopback and certificates made here with openssl:
// three replicated masters and an agent serve HTTPS/WSS (Raft between masters, the agent's
// link, the master's fetches of logs from the agent all over TLS); a task launched with
// `cairn run` through a follower (redirected to the leader) finishes and its log is read
// through the master. The same with mutual TLS, where a client without a certificate is
// refused. A client without the cluster's CA is refused with an error that says why.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MasterClient } from '../../shared/sdk/master-client.ts';
import { loadTls, TlsClient } from '../../shared/tls.ts';
import { TEST_USER } from '../harness/credentials.ts';
import { Cleanup, freePort, runCairn, startCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import { hasOpenssl, makeCerts, type Certs } from '../harness/tls-certs.ts';

const openssl = hasOpenssl();
if (!openssl && !process.env.CI) console.warn('tls.test.ts skipped: openssl is not installed');
const describeTls = openssl || process.env.CI ? describe : describe.skip;

const cleanup = new Cleanup();
const clients: TlsClient[] = [];
let certs: Certs;
beforeAll(() => {
  if (openssl) certs = makeCerts(cleanup.dir('cairn-tls-certs-'));
});
afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await cleanup.run();
});

interface Cluster {
  masters: { id: number; url: string; proc: CairnProcess }[];
  agent: CairnProcess;
  /** A client of the test itself: the CA, and with mutual TLS the user's certificate. */
  tls: TlsClient;
}

async function startCluster(mutual: boolean): Promise<Cluster> {
  const base = cleanup.dir('cairn-tls-');
  const secretFile = join(base, 'secret');
  writeFileSync(secretFile, 'a-test-secret-of-enough-bytes\n');
  const daemonTls = ['--tls-cert', certs.nodeCert, '--tls-key', certs.nodeKey, '--tls-ca', certs.ca, ...(mutual ? ['--tls-client-auth'] : [])];
  const tls = new TlsClient(loadTls(mutual ? { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey } : { ca: certs.ca }));
  clients.push(tls);
  const healthy = (p: CairnProcess) =>
    waitFor(`${p.url}/health over TLS`, async () => {
      if (p.child.exitCode !== null) throw new Error(`exited with ${p.child.exitCode}: ${p.output.slice(-2000)}`);
      return (await tls.fetch(`${p.url}/health`, { signal: AbortSignal.timeout(2000) })).ok ? true : undefined;
    }, 30_000, 100);

  const ports = [await freePort(), await freePort(), await freePort()];
  const urls = ports.map((p) => `https://127.0.0.1:${p}`);
  const peers = urls.map((u, i) => `${i + 1}=${u}`).join(',');
  const masters = urls.map((url, i) => ({
    id: i + 1,
    url,
    proc: cleanup.track(startCairn(['master', '--id', String(i + 1), '--peers', peers, '--secret-file', secretFile, '--port', String(ports[i]), '--host', '127.0.0.1', '--data-dir', join(base, `m${i + 1}`), '--dns-port', '0', ...daemonTls], url)),
  }));
  await Promise.all(masters.map((m) => healthy(m.proc)));
  const agentPort = await freePort();
  const agent = cleanup.track(startCairn(['agent', '--master', urls.join(','), '--port', String(agentPort), '--work-dir', join(base, 'agent'), '--hostname', 'localhost', '--resources', 'cpus:2;mem:1024', ...daemonTls], `https://127.0.0.1:${agentPort}`));
  await healthy(agent);
  return { masters, agent, tls };
}

/** The leader's URL once it has the agent connected (its URL https://). */
async function leaderWithAgent(c: Cluster): Promise<string> {
  return waitFor('a leader with the agent registered over TLS', async () => {
    for (const m of c.masters) {
      try {
        const s = await new MasterClient(m.url, { tls: c.tls, token: TEST_USER.secret, timeoutMs: 2000 }).state();
        if (s.master.role === 'leader' && s.agents.some((a) => a.connected && a.url.startsWith('https://'))) return m.url;
      } catch {
        // starting, or no leader yet
      }
    }
    return undefined;
  }, 60_000, 200);
}

/** `cairn run` through a follower (redirected to the leader); checks the task's log through the master. */
async function runThroughCluster(c: Cluster, clientFlags: string[], word: string): Promise<void> {
  const leader = await leaderWithAgent(c);
  const follower = c.masters.find((m) => m.url !== leader)!.url;
  const r = await runCairn([...clientFlags, 'run', '--master', follower, '--name', word, '--cpus', '0.1', '--mem', '16', '--', 'sh', '-c', `echo ${word}`], {}, 90_000);
  expect(r.stderr).not.toMatch(/certificate/);
  expect(r.stdout).toBe(`${word}\n`);
  expect(r.code).toBe(0);
  // The log again, read by the leader from the agent over TLS and relayed.
  const client = new MasterClient(leader, { tls: c.tls, token: TEST_USER.secret });
  const task = (await client.state()).tasks.find((t) => t.id.startsWith(`${word}-`));
  expect(task?.state).toBe('TASK_FINISHED');
  expect((await client.logs(task!.id, 'stdout', 0)).data).toBe(`${word}\n`);
  // And with `cairn logs`, which reaches the master over TLS as well.
  const logs = await runCairn([...clientFlags, 'logs', task!.id, '--master', leader], {}, 60_000);
  expect(logs.stdout).toBe(`${word}\n`);
}

describeTls('TLS', () => {
  it('runs three masters and an agent over TLS; a client without the CA is refused', async () => {
    const c = await startCluster(false);
    await runThroughCluster(c, ['--tls-ca', certs.ca], 'over-tls');
    // The same CA from the environment.
    const viaEnv = await runCairn(['tasks', '--master', c.masters[0].url], { CAIRN_TLS_CA: certs.ca }, 60_000);
    expect(viaEnv.stdout).toContain('over-tls');

    // No CA: the master's certificate cannot be verified, and the CLI says so in words.
    const noCa = await runCairn(['run', '--master', c.masters[0].url, '--', 'true'], {}, 60_000);
    expect(noCa.code).not.toBe(0);
    expect(noCa.stderr).toMatch(/TLS certificate could not be verified/);
    expect(noCa.stderr).toMatch(/--tls-ca/);
    const noCaState = await runCairn(['state', '--master', c.masters[0].url], {}, 60_000);
    expect(noCaState.code).not.toBe(0);
    expect(noCaState.stderr).toMatch(/TLS certificate could not be verified/);
    // Plain HTTP to a TLS listener gets nothing.
    await expect(fetch(c.masters[0].url.replace('https:', 'http:') + '/health', { signal: AbortSignal.timeout(5000) })).rejects.toThrow();
    await Promise.all([...c.masters.map((m) => m.proc.kill('SIGKILL')), c.agent.kill('SIGKILL')]);
  }, 240_000);

  it('runs over mutual TLS; a client without a certificate is refused', async () => {
    const c = await startCluster(true);
    const clientFlags = ['--tls-ca', certs.ca, '--tls-cert', certs.clientCert, '--tls-key', certs.clientKey];
    await runThroughCluster(c, clientFlags, 'over-mtls');

    const noCert = await runCairn(['--tls-ca', certs.ca, 'state', '--master', c.masters[0].url], {}, 60_000);
    expect(noCert.code).not.toBe(0);
    expect(noCert.stderr).toMatch(/requires a client certificate/);
    const noCertRun = await runCairn(['--tls-ca', certs.ca, 'run', '--master', c.masters[0].url, '--', 'true'], {}, 60_000);
    expect(noCertRun.code).not.toBe(0);
    expect(noCertRun.stderr).toMatch(/client certificate/);
    // Nor does the agent's API answer a client without one.
    const plainClient = new TlsClient(loadTls({ ca: certs.ca }));
    clients.push(plainClient);
    await expect(plainClient.fetch(`${c.agent.url}/health`, { signal: AbortSignal.timeout(5000) })).rejects.toThrow();
    expect((await c.tls.fetch(`${c.agent.url}/health`, { signal: AbortSignal.timeout(5000) })).ok).toBe(true);
  }, 240_000);
});
