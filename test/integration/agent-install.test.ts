// deploy/install.sh into a staging root: the units it writes pass `systemd-analyze verify`,
// a second run changes nothing, a `cairn agent` started with exactly the unit's ExecStart
// line (its paths mapped into the staging root) registers with a running master using the
// credential the script installed, and a `cairn master` started as its unit says
// authenticates with the credentials file the script installed.

import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentCgroupName } from '../../agent/isolation/cgroups.ts';
import { Cleanup, CairnProcess, freePort, startMasterProcess, waitFor } from '../harness/processes.ts';
import { authFetch, testCredentialsFile } from '../harness/credentials.ts';

const INSTALL = fileURLToPath(new URL('../../deploy/install.sh', import.meta.url));
const cleanup = new Cleanup();
const agentWorkDirs: string[] = [];
afterEach(async () => {
  await cleanup.run();
  // The agent leaves its (empty) cgroup directories for a successor; this test has none.
  for (const w of agentWorkDirs.splice(0)) {
    for (const h of ['memory', 'cpu', 'cpuacct', 'unified', '']) {
      try {
        rmdirSync(join('/sys/fs/cgroup', h, 'cairn', agentCgroupName(w)));
      } catch {
        // not there, or not ours to remove
      }
    }
  }
});

/**
 * Splits a systemd command line into words: whitespace separates, double quotes group
 * with C-style escapes inside, `%%` is `%` and `$$` is `$` (systemd.service(5), "Command lines").
 */
function systemdWords(line: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (i >= line.length) break;
    let word = '';
    if (line[i] === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length) i++;
        word += line[i++];
      }
      i++;
    } else {
      while (i < line.length && line[i] !== ' ' && line[i] !== '\t') word += line[i++];
    }
    words.push(word.replaceAll('%%', '%').replaceAll('$$', '$'));
  }
  return words;
}

function unitValue(unit: string, key: string): string {
  const line = unit.split('\n').find((l) => l.startsWith(`${key}=`));
  if (!line) throw new Error(`no ${key}= in the unit`);
  return line.slice(key.length + 1);
}

/** The value after `flag` among a command line's words. */
function flagValue(words: string[], flag: string): string | undefined {
  const i = words.indexOf(flag);
  return i === -1 ? undefined : words[i + 1];
}

/** Words of a unit's ExecStart with the installed paths mapped into the staging root. */
function stagedWords(root: string, unit: string): string[] {
  return systemdWords(unitValue(unit, 'ExecStart')).map((w) => (/^\/(opt|var\/lib|etc)\/cairn(\/|$)/.test(w) ? join(root, w) : w));
}

function install(root: string, args: string[]): string {
  return execFileSync('bash', [INSTALL, '--root', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

const systemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;
if (!systemdAnalyze) {
  if (process.env.CI) throw new Error('systemd-analyze is required in CI (apt-get install systemd)');
  console.log('skipping systemd-analyze checks: systemd-analyze is not installed');
}

describe('deploy/install.sh', () => {
  it('parses systemd command lines', () => {
    expect(systemdWords('/usr/bin/node a "b c" "d;e:[1-2]" "x\\"y" "100%%" "$$HOME"')).toEqual(['/usr/bin/node', 'a', 'b c', 'd;e:[1-2]', 'x"y', '100%', '$HOME']);
  });

  it('stages units that systemd accepts and an agent that registers when started as the unit says', async () => {
    const master = await startMasterProcess(cleanup);
    const root = cleanup.dir('cairn-stage-');
    const secret = join(cleanup.dir('cairn-secret-'), 'secret');
    writeFileSync(secret, 'a-cluster-secret-of-32-bytes-0123');
    const port = await freePort();
    // The harness's credentials file holds one agent entry: an agent takes that one.
    const credential = testCredentialsFile();
    const args = ['--master', master.url, '--secret-file', secret, '--credential', credential, '--work-dir', '/var/lib/cairn/agent', '--resources', 'cpus:2;mem:1024;ports:[31000-31010]', '--attributes', 'rack:r1;zone:%a', '--agent-port', String(port)];

    const first = install(root, args);
    expect(first).toMatch(/installed the project in \/opt\/cairn/);
    expect(first).toMatch(/wrote \/etc\/systemd\/system\/cairn-agent\.service/);
    // Idempotent: the same flags again change nothing. (The project is copied again only if
    // the checkout changed meanwhile, as it may while other work goes on in it.)
    const second = install(root, args);
    expect(second).not.toMatch(/wrote/);
    expect(second).toMatch(/up to date|installed the project/);
    expect((readFileSync(join(root, 'etc/cairn/secret'), 'utf8'))).toBe('a-cluster-secret-of-32-bytes-0123');
    expect(readFileSync(join(root, 'etc/cairn/agent-credential.json'), 'utf8')).toBe(readFileSync(credential, 'utf8'));
    expect(statSync(join(root, 'etc/cairn/agent-credential.json')).mode & 0o777).toBe(0o600);

    const agentUnit = readFileSync(join(root, 'etc/systemd/system/cairn-agent.service'), 'utf8');
    expect(unitValue(agentUnit, 'Restart')).toBe('always');
    expect(unitValue(agentUnit, 'KillMode')).toBe('process');
    expect(unitValue(agentUnit, 'LimitNOFILE')).toBe('1048576');
    expect(flagValue(systemdWords(unitValue(agentUnit, 'ExecStart')), '--credential')).toBe('/etc/cairn/agent-credential.json');
    // An installed master listens on every interface unless told otherwise (agents elsewhere
    // reach it); without --credentials it makes its own in its data dir.
    const masterWords = systemdWords(unitValue(readFileSync(join(root, 'etc/systemd/system/cairn-master.service'), 'utf8'), 'ExecStart'));
    expect(flagValue(masterWords, '--host')).toBe('0.0.0.0');
    expect(masterWords).not.toContain('--credentials');
    expect(masterWords).not.toContain('--acls');

    if (systemdAnalyze) {
      for (const unit of ['cairn-agent.service', 'cairn-master.service']) {
        const r = spawnSync('systemd-analyze', ['verify', join(root, 'etc/systemd/system', unit)], { encoding: 'utf8' });
        // verify exits 0 even for settings it ignores; anything it says is a defect.
        expect({ unit, status: r.status, said: r.stderr.trim() }).toEqual({ unit, status: 0, said: '' });
      }
    }

    // Start the agent exactly as the unit would, its paths mapped into the staging root. Its
    // environment holds no credential: the one it registers with is the unit's --credential.
    const words = stagedWords(root, agentUnit);
    expect(words.slice(1, 3)).toEqual([join(root, 'opt/cairn/bin/cairn.js'), 'agent']);
    expect(words).toContain('rack:r1;zone:%a');
    const env = Object.fromEntries([unitValue(agentUnit, 'Environment').split('=') as [string, string]]);
    agentWorkDirs.push(join(root, 'var/lib/cairn/agent'));
    const child = spawn(words[0], words.slice(1), { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const agent = cleanup.track(new CairnProcess(child, `http://127.0.0.1:${port}`));
    await agent.waitHealthy();
    const registered = await waitFor('the agent in the master\'s state', async () => {
      const st = (await (await authFetch(`${master.url}/api/v1/state`)).json()) as { agents: { reachable: boolean; resources: string; attributes: Record<string, string> }[] };
      return st.agents.find((a) => a.reachable);
    });
    expect(registered.resources).toMatch(/^cpus:2;mem:1024;(disk:\d+;)?ports:\[31000-31010\]$/);
    expect(registered.attributes).toEqual({ rack: 'r1', zone: '%a' });
    await agent.kill('SIGTERM');

    // Without --credential and none installed, there is no agent to install; once one is
    // installed, a run without the flag keeps it.
    const bare = cleanup.dir('cairn-stage-');
    const refused = spawnSync('bash', [INSTALL, '--root', bare, '--master', master.url], { encoding: 'utf8' });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/the agent needs a credential.*--credential FILE/);
    expect(spawnSync('ls', [bare], { encoding: 'utf8' }).stdout).toBe('');
    const kept = install(root, ['--master', master.url]);
    expect(kept).not.toMatch(/wrote \/etc\/cairn\/agent-credential\.json/);
    expect(flagValue(systemdWords(unitValue(readFileSync(join(root, 'etc/systemd/system/cairn-agent.service'), 'utf8'), 'ExecStart')), '--credential')).toBe('/etc/cairn/agent-credential.json');

    // With the secret, --join names a gossip member: the agent needs no master address.
    const gossipRoot = cleanup.dir('cairn-stage-');
    install(gossipRoot, ['--secret-file', secret, '--join', '10.0.0.9:7946', '--docker-runtime', 'crun', '--credential', credential]);
    const gossipUnit = readFileSync(join(gossipRoot, 'etc/systemd/system/cairn-agent.service'), 'utf8');
    const gw = systemdWords(unitValue(gossipUnit, 'ExecStart'));
    expect(gw.slice(gw.indexOf('--join'), gw.indexOf('--join') + 2)).toEqual(['--join', '10.0.0.9:7946']);
    expect(gw.slice(gw.indexOf('--secret-file'), gw.indexOf('--secret-file') + 2)).toEqual(['--secret-file', '/etc/cairn/secret']);
    expect(gw).not.toContain('--master');
    expect(gw.slice(gw.indexOf('--docker-runtime'), gw.indexOf('--docker-runtime') + 2)).toEqual(['--docker-runtime', 'crun']);
    expect(words).not.toContain('--docker-runtime');
    expect(systemdWords(unitValue(readFileSync(join(gossipRoot, 'etc/systemd/system/cairn-master.service'), 'utf8'), 'ExecStart'))).toContain('--secret-file');
  });

  it('stages a master that authenticates with the credentials and ACLs it was given', async () => {
    const root = cleanup.dir('cairn-stage-');
    const src = cleanup.dir('cairn-acls-');
    const acls = join(src, 'acls.json');
    // The harness's user may set the weight of role 'open' only; everything else as Mesos' default.
    writeFileSync(acls, JSON.stringify({ update_weights: [{ principals: { values: ['tester'] }, roles: { values: ['open'] } }, { principals: { type: 'ANY' }, roles: { type: 'NONE' } }] }));
    const port = await freePort();
    // A master-only host needs no agent credential.
    install(root, ['--enable', 'master', '--master-host', '127.0.0.1', '--master-port', String(port), '--credentials', testCredentialsFile(), '--acls', acls]);
    const unit = readFileSync(join(root, 'etc/systemd/system/cairn-master.service'), 'utf8');
    const w = systemdWords(unitValue(unit, 'ExecStart'));
    expect(flagValue(w, '--host')).toBe('127.0.0.1');
    expect(flagValue(w, '--credentials')).toBe('/etc/cairn/credentials.json');
    expect(flagValue(w, '--acls')).toBe('/etc/cairn/acls.json');
    for (const f of ['credentials.json', 'acls.json']) expect(statSync(join(root, 'etc/cairn', f)).mode & 0o777).toBe(0o600);
    // The master's data dir is its own (every tenant's task environments are in its registry); the agent's work dir is passed through, not listed.
    expect(statSync(join(root, 'var/lib/cairn/master')).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, 'var/lib/cairn/agent')).mode & 0o777).toBe(0o711);
    expect(unitValue(unit, 'UMask')).toBe('0077');
    // The agent unit written alongside still names the credential an agent will need.
    expect(flagValue(systemdWords(unitValue(readFileSync(join(root, 'etc/systemd/system/cairn-agent.service'), 'utf8'), 'ExecStart')), '--credential')).toBe('/etc/cairn/agent-credential.json');
    if (systemdAnalyze) {
      const r = spawnSync('systemd-analyze', ['verify', join(root, 'etc/systemd/system/cairn-master.service')], { encoding: 'utf8' });
      expect({ status: r.status, said: r.stderr.trim() }).toEqual({ status: 0, said: '' });
    }

    const words = stagedWords(root, unit);
    const env = Object.fromEntries([unitValue(unit, 'Environment').split('=') as [string, string]]);
    const child = spawn(words[0], words.slice(1), { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const master = cleanup.track(new CairnProcess(child, `http://127.0.0.1:${port}`));
    await master.waitHealthy();
    expect((await fetch(`${master.url}/api/v1/state`)).status).toBe(401);
    expect((await authFetch(`${master.url}/api/v1/state`)).status).toBe(200);
    const weight = (role: string) => authFetch(`${master.url}/api/v1/roles/${role}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weight: 2 }) });
    expect((await weight('open')).status).toBe(200);
    expect((await weight('closed')).status).toBe(403);
    // The staged master made no bootstrap credentials of its own.
    expect(spawnSync('ls', [join(root, 'var/lib/cairn/master')], { encoding: 'utf8' }).stdout).not.toMatch(/credentials\.json/);
    await master.kill('SIGTERM');
  });

  it('with --split-dns, fixes the task resolver address and sends the zone to it through systemd-resolved', () => {
    const root = cleanup.dir('cairn-stage-');
    install(root, ['--master', 'http://10.0.0.1:5050', '--credential', testCredentialsFile(), '--split-dns', '169.254.53.53', '--dns-domain', 'mesos']);
    const words = systemdWords(unitValue(readFileSync(join(root, 'etc/systemd/system/cairn-agent.service'), 'utf8'), 'ExecStart'));
    expect(flagValue(words, '--task-dns-address')).toBe('169.254.53.53');
    const dropIn = readFileSync(join(root, 'etc/systemd/resolved.conf.d/cairn.conf'), 'utf8');
    expect(dropIn).toMatch(/^\[Resolve\]\nDNS=169\.254\.53\.53\nDomains=~mesos$/m);
    // Without the flag, nothing of the host's resolver is touched.
    const plain = cleanup.dir('cairn-stage-');
    install(plain, ['--master', 'http://10.0.0.1:5050', '--credential', testCredentialsFile()]);
    expect(spawnSync('ls', [join(plain, 'etc/systemd')], { encoding: 'utf8' }).stdout).not.toContain('resolved.conf.d');
  });

  it('refuses bad flags before touching anything', () => {
    const root = cleanup.dir('cairn-stage-');
    for (const [args, said] of [
      [['--master', 'not-a-url'], /is not a URL/],
      [['--join', 'nohostport'], /HOST:PORT/],
      [['--work-dir', 'relative'], /absolute/],
      [['--master-id', '1'], /go together/],
      [['--docker-runtime', 'a b'], /--docker-runtime must be a runtime name/],
      [['--split-dns', 'resolver.local'], /--split-dns must be an IPv4 address/],
      [['--split-dns', '169.254.53.53', '--dns-domain', 'Bad_Zone'], /--dns-domain must be a domain name/],
      [['--master-host', 'a b'], /--master-host must be an address/],
      [['--credential', '/nonexistent/agent.json'], /cannot read --credential/],
      [['--credentials', '/nonexistent/credentials.json', '--enable', 'master'], /cannot read --credentials/],
      [['--bogus', 'x'], /unknown option/],
    ] as [string[], RegExp][]) {
      const r = spawnSync('bash', [INSTALL, '--root', root, ...args], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(said);
    }
    expect(spawnSync('ls', [root], { encoding: 'utf8' }).stdout).toBe('');
  });
});
