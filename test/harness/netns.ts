// Network namespaces for tests that need processes on distinct addresses: each node gets its
// own namespace with one veth into a bridge in the root namespace, so the nodes (and the test,
// through the bridge's address) reach each other by IP, and a node can be cut off by taking its
// link down. Needs root and `ip`; everything made is named with a random tag and removed by
// cleanup(), which is safe to call after a partial setup.

import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { CairnProcess } from './processes.ts';
import { authHeaders, credentialEnv } from './credentials.ts';

const CAIRN = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));

function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why namespaces cannot be used here, or undefined when they can. */
export function netnsUnusable(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = `cairn-probe-${randomBytes(3).toString('hex')}`;
  try {
    run('ip', ['netns', 'add', probe]);
    run('ip', ['netns', 'exec', probe, 'ip', 'link', 'set', 'lo', 'up']);
  } catch (err) {
    return `'ip netns' is not usable: ${(err as Error).message.split('\n')[0]}`;
  } finally {
    try {
      run('ip', ['netns', 'del', probe]);
    } catch {
      // it was never made
    }
  }
  return undefined;
}

export class NetnsLab {
  readonly tag = randomBytes(2).toString('hex');
  /** A /24 no interface of this host uses: 10.213.N.0. */
  readonly subnet: string;
  readonly bridge = `cg${this.tag}br`;
  private readonly namespaces: string[] = [];
  private readonly links: string[] = [];
  private readonly procs: CairnProcess[] = [];
  private forwardRule = false;

  constructor() {
    const used = run('ip', ['-4', '-o', 'addr']);
    let n = 0;
    do n = 1 + (randomBytes(1)[0] % 250);
    while (used.includes(`10.213.${n}.`));
    this.subnet = `10.213.${n}`;
  }

  /** The bridge (with .1, the test's own address on it) and the forwarding rule. */
  up(): void {
    run('ip', ['link', 'add', this.bridge, 'type', 'bridge']);
    this.links.push(this.bridge);
    run('ip', ['addr', 'add', `${this.subnet}.1/24`, 'dev', this.bridge]);
    run('ip', ['link', 'set', this.bridge, 'up']);
    // Where bridged traffic passes the firewall (br_netfilter) and forwarding drops by default
    // (as Docker sets it), traffic between the bridge's ports must be let through.
    try {
      run('iptables', ['-I', 'FORWARD', '-i', this.bridge, '-o', this.bridge, '-j', 'ACCEPT']);
      this.forwardRule = true;
    } catch {
      // no iptables: nothing filters
    }
  }

  /** A namespace `name` with address subnet.`host`, joined to the bridge; returns the address. */
  node(name: string, host: number): string {
    const ns = this.ns(name);
    const veth = `cg${this.tag}${name}`.slice(0, 15);
    run('ip', ['netns', 'add', ns]);
    this.namespaces.push(ns);
    run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    this.links.push(veth);
    run('ip', ['link', 'set', veth, 'master', this.bridge, 'up']);
    const ip = `${this.subnet}.${host}`;
    run('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
    run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'eth0', 'up']);
    run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
    return ip;
  }

  /** Cuts the node off (its only link down) or reconnects it. */
  setLink(name: string, up: boolean): void {
    run('ip', ['netns', 'exec', this.ns(name), 'ip', 'link', 'set', 'eth0', up ? 'up' : 'down']);
  }

  /** Runs `cairn ARGS` inside the node's namespace (`ip netns exec` execs: the pid is cairn's). */
  cairn(name: string, args: string[], url: string): CairnProcess {
    const child = spawn('ip', ['netns', 'exec', this.ns(name), process.execPath, CAIRN, ...args], {
      env: { ...process.env, CAIRN_LOG_LEVEL: process.env.CAIRN_LOG_LEVEL ?? 'warn', ...credentialEnv() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new CairnProcess(child, url);
    this.procs.push(p);
    return p;
  }

  /**
   * GETs `url` from inside the node's namespace, where a daemon still answers on its own
   * address while its link is down; resolves with the parsed JSON, or undefined when nothing
   * answered within `timeoutMs`. Asynchronous, so that a test's other work goes on meanwhile.
   */
  fetchJsonInside(name: string, url: string, timeoutMs = 2000): Promise<unknown> {
    const script = `fetch(process.argv[1], { headers: JSON.parse(process.argv[2]), signal: AbortSignal.timeout(${timeoutMs}) }).then((r) => r.text()).then((t) => process.stdout.write(t), () => process.exit(1))`;
    return new Promise((resolve) => {
      execFile('ip', ['netns', 'exec', this.ns(name), process.execPath, '-e', script, url, JSON.stringify(authHeaders())], { encoding: 'utf8', timeout: timeoutMs + 5000 }, (err, stdout) => {
        if (err) return resolve(undefined);
        try {
          resolve(JSON.parse(stdout));
        } catch {
          resolve(undefined);
        }
      });
    });
  }

  /** Kills what it started and removes namespaces, links and the rule; never throws. */
  async cleanup(): Promise<void> {
    await Promise.all(this.procs.splice(0).map((p) => p.kill('SIGKILL')));
    for (const ns of this.namespaces.splice(0).reverse()) quietly(() => run('ip', ['netns', 'del', ns]));
    for (const link of this.links.splice(0).reverse()) quietly(() => run('ip', ['link', 'del', link]));
    if (this.forwardRule) {
      this.forwardRule = false;
      quietly(() => run('iptables', ['-D', 'FORWARD', '-i', this.bridge, '-o', this.bridge, '-j', 'ACCEPT']));
    }
  }

  private ns(name: string): string {
    return `cairn-${this.tag}-${name}`;
  }
}

function quietly(f: () => void): void {
  try {
    f();
  } catch {
    // already gone
  }
}
