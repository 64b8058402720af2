// The address the agent's task resolver answers on: a /32 on the loopback interface in
// 169.254.53.0/24 (link-local, never routed off the host), as Kubernetes' NodeLocal DNSCache
// does with 169.254.20.10. An address on `lo` is local to the host's network namespace, so a
// process task reaches it directly and a container on a Docker bridge through its gateway (the
// host), where a 127.x address would be the container's own loopback.
//
// Several agents may share a host (tests, a laptop), so each claims its own: it binds UDP port
// 53 on a candidate address, and the bound socket is the claim. An address left by an agent
// that was killed (labelled `lo:cairn…`, nobody bound to it) is taken over like a free one, so
// killed agents never use the range up. A clean stop removes the address.

import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { execa } from 'execa';

export const TASK_DNS_PREFIX = '169.254.53.';
/** Address labels of task resolvers: `lo:` and at most 11 more characters (IFNAMSIZ). */
const LABEL_PREFIX = 'lo:cairn';
/** Candidate addresses tried before giving up. */
const MAX_TRIES = 16;

export interface ClaimedAddress {
  address: string;
  udp: dgram.Socket;
  /** Undefined where TCP port 53 is taken (a resolver listening on every address). */
  tcp: net.Server | undefined;
  tcpProblem: string | undefined;
  /** Removes the address (when this agent added it or took it over). */
  release(): Promise<void>;
}

/** The label this work dir's agent gives its address. */
export function addressLabel(workDir: string): string {
  return LABEL_PREFIX + createHash('sha1').update(workDir).digest('hex').slice(0, 15 - LABEL_PREFIX.length);
}

/** Addresses on this host now, with the interface (or label) they are on. */
function localAddresses(): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, list] of Object.entries(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4') out.set(a.address, name);
  }
  return out;
}

/**
 * Candidates, best first: a given address; else the one this work dir's agent had (its label),
 * then addresses from a start the work dir picks, free or left by a killed agent. The same work
 * dir gets the same address again, so tasks that outlive an agent restart keep their resolver.
 */
export function candidateAddresses(workDir: string, local: ReadonlyMap<string, string>, given?: string): string[] {
  if (given !== undefined) return [given];
  const label = addressLabel(workDir);
  const own = [...local].filter(([a, name]) => name === label && a.startsWith(TASK_DNS_PREFIX)).map(([a]) => a);
  const start = createHash('sha1').update(workDir).digest().readUInt8(0) % 254;
  const out = [...own];
  for (let i = 0; i < 254 && out.length < MAX_TRIES; i++) {
    const a = `${TASK_DNS_PREFIX}${((start + i) % 254) + 1}`;
    const on = local.get(a);
    if (!out.includes(a) && (on === undefined || on.startsWith(LABEL_PREFIX))) out.push(a);
  }
  return out;
}

function bindUdp(address: string, port: number): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket({ type: 'udp4', reuseAddr: false });
    s.once('error', (err) => {
      s.close();
      reject(err);
    });
    s.bind({ address, port, exclusive: true }, () => {
      s.removeAllListeners('error');
      resolve(s);
    });
  });
}

function bindTcp(address: string, port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ host: address, port, exclusive: true }, () => {
      server.removeAllListeners('error');
      resolve(server);
    });
  });
}

async function ip(args: string[]): Promise<void> {
  await execa('ip', args, { timeout: 10_000 });
}

/**
 * Claims an address and port 53 on it; throws with the reason when none can be had (not
 * root, no `ip`, every candidate taken). `port` is for tests of the claim itself.
 */
export async function claimAddress(workDir: string, given?: string, port = 53): Promise<ClaimedAddress> {
  const label = addressLabel(workDir);
  let lastError = 'no candidate address';
  for (const address of candidateAddresses(workDir, localAddresses(), given)) {
    // Looked at afresh for each candidate: another agent may have claimed one meanwhile.
    const on = localAddresses().get(address);
    let added = false;
    if (on === undefined) {
      try {
        await ip(['addr', 'add', `${address}/32`, 'dev', 'lo', 'label', label]);
        added = true;
      } catch (err) {
        throw new Error(`cannot add ${address} to the loopback interface: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}`);
      }
    }
    const owned = added || on?.startsWith(LABEL_PREFIX) === true;
    let udp: dgram.Socket;
    try {
      udp = await bindUdp(address, port);
    } catch (err) {
      lastError = `${address}:${port}: ${(err as Error).message}`;
      if (added) await ip(['addr', 'del', `${address}/32`, 'dev', 'lo']).catch(() => undefined);
      if (given !== undefined) break;
      continue;
    }
    let tcp: net.Server | undefined;
    let tcpProblem: string | undefined;
    try {
      tcp = await bindTcp(address, port);
    } catch (err) {
      tcpProblem = (err as Error).message;
    }
    return {
      address,
      udp,
      tcp,
      tcpProblem,
      release: async () => {
        if (owned) await ip(['addr', 'del', `${address}/32`, 'dev', 'lo']).catch(() => undefined);
      },
    };
  }
  throw new Error(`no address for the task resolver could be claimed (${lastError})`);
}
