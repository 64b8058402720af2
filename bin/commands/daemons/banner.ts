// What a daemon started in the foreground says to the person at the terminal: where its
// APIs, DNS and files are, where the credentials are kept (never a secret), how logs are
// written, and how to stop it. Written to stderr, and only when stdout or stderr is a
// terminal: stdout carries only the master URL, which scripts read.

import { DEFAULT_MASTER_URL } from '../common/options.ts';

export interface BannerInfo {
  daemon: 'up' | 'master' | 'agent';
  version: string;
  /** The masters this process runs (up, master). */
  masters?: readonly string[];
  /** The agent this process runs: its API and, once known, its id. */
  agent?: { url: string; id?: string };
  /** The masters an agent registers with ('' : learnt from gossip). */
  follows?: string;
  dns?: { host: string; port: number; domain: string };
  dataDir?: string;
  workDir?: string;
  /** The credentials file of the masters (up, master). */
  credentials?: string;
  /** Where `cairn up` saved the admin token for the CLI. */
  cliToken?: string;
  /** Why `cairn up` did not save it for some of its URLs (another cluster's token is there). */
  cliTokenKept?: string;
  /** The file of the agent's own credential (agent). */
  agentCredential?: string;
  /** Whether the agent runs gossip (agent, master). */
  gossip?: string;
  logs: { format: string; level: string };
}

function dnsLine(d: NonNullable<BannerInfo['dns']>): string {
  const host = d.host === '0.0.0.0' || d.host === '::' ? '127.0.0.1' : d.host;
  const portArg = d.port === 53 ? '' : ` -p ${d.port}`;
  return `${d.host}:${d.port}, zone ${d.domain}  (try: dig @${host}${portArg} leader.${d.domain})`;
}

/** The banner's lines, a blank line at either end. */
export function renderBanner(b: BannerInfo): string {
  const rows: [string, string][] = [];
  const masters = b.masters ?? [];
  if (masters.length === 1) rows.push(['master', masters[0]!]);
  else if (masters.length > 1) rows.push(['masters', masters.join(', ')]);
  if (b.agent) rows.push(['agent', `${b.agent.url}${b.agent.id ? `  (id ${b.agent.id})` : ''}`]);
  if (b.follows !== undefined) rows.push(['registers with', b.follows === '' ? 'the leader gossip names' : b.follows]);
  if (b.dns) rows.push(['DNS', dnsLine(b.dns)]);
  else if (b.daemon !== 'agent') rows.push(['DNS', 'not served']);
  if (b.gossip) rows.push(['gossip', b.gossip]);
  if (b.dataDir) rows.push(['data dir', b.dataDir]);
  if (b.workDir) rows.push(['work dir', b.workDir]);
  if (b.credentials) rows.push(['credentials', b.credentials]);
  if (b.cliToken) rows.push(['CLI token', `saved in ${b.cliToken}`]);
  if (b.cliTokenKept) rows.push([b.cliToken ? '' : 'CLI token', b.cliTokenKept]);
  if (b.agentCredential) rows.push(['credential', b.agentCredential]);
  rows.push(['logs', `${b.logs.format} at ${b.logs.level}, on stderr (--log-format, --log-level)`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const what = b.daemon === 'up'
    ? `${masters.length > 1 ? `${masters.length} masters` : 'a master'} and an agent`
    : b.daemon === 'master' ? 'master' : 'agent';
  const lines = [`cairn ${b.daemon} ${b.version}: ${what}, running`, ''];
  for (const [k, v] of rows) lines.push(`  ${k.padEnd(width)}  ${v}`);
  lines.push('');
  if (b.daemon !== 'agent' && masters.length > 0) {
    const first = masters[0]!;
    lines.push(first === DEFAULT_MASTER_URL ? '  Try: cairn run -- echo hello' : `  Try: CAIRN_MASTER=${masters.join(',')} cairn run -- echo hello`);
  }
  lines.push(b.daemon === 'up'
    ? `  Ctrl-C stops the agent (its tasks are killed) and the master${masters.length > 1 ? 's' : ''}.`
    : b.daemon === 'master'
      ? '  Ctrl-C stops the master.'
      : '  Ctrl-C stops the agent; its tasks keep running, and the agent started again takes them back.');
  return `\n${lines.join('\n')}\n\n`;
}

/** Whether a banner is for someone: stdout or stderr is a terminal. */
export function wantsBanner(io: { stdout: { isTTY?: boolean }; stderr: { isTTY?: boolean } }): boolean {
  return io.stdout.isTTY === true || io.stderr.isTTY === true;
}
