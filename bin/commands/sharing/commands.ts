// `cairn roles`, `cairn usage`, `cairn quota list|set|rm` and `cairn preemptions`: clients of
// the sharing API. Each exits 0, or prints why not (with a hint where one helps) and exits 1.

import type { Amounts, PrincipalRow, RoleRow, TaskUse, PreemptionRecord, QuotaJson } from '../../../shared/sharing/views.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import { SCALAR_NAMES, type ScalarName } from '../../../shared/resources.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import { isUnreachable, unreachableHint } from '../common/hints.ts';
import type { CliIo } from '../common/io.ts';
import { apiClientOptions } from '../common/master-api-client.ts';
import { formatObjects, printList, type OutputFormat } from '../common/output.ts';
import { inSubtree, mergedQuota, type QuotaChange } from './flags.ts';
import { SharingClient, type RolesAnswer } from './client.ts';
import { formatTable } from '../common/table.ts';
import { exitCodeOf } from '../common/exit-codes.ts';

export interface SharingCommandOptions {
  masterUrl: string;
  tls?: TlsFiles;
}

function client(o: SharingCommandOptions, io: CliIo): SharingClient {
  return new SharingClient(o.masterUrl, apiClientOptions(o.masterUrl, o.tls, io));
}

async function withSharing(name: string, o: SharingCommandOptions, io: CliIo, body: (c: SharingClient) => Promise<number | void>): Promise<number> {
  try {
    return (await body(client(o, io))) ?? 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    io.stderr.write(`cairn ${name}: ${message}${hintFor(err, o.masterUrl)}\n`);
    return exitCodeOf(err);
  }
}

function hintFor(err: unknown, masterUrl: string): string {
  if (!(err instanceof MasterHttpError)) return isUnreachable(err instanceof Error ? err.message : '') ? ` — ${unreachableHint(masterUrl)}` : '';
  if (err.code === 'CAIRN_UNKNOWN_QUOTA') return ' — `cairn quota list` shows the quotas there are';
  if (err.status === 404) return ' — does this master serve the sharing API? (`cairn version` on both sides)';
  return '';
}

// ---- formatting -------------------------------------------------------------------------

const ALLOCATION_SCALARS: readonly ScalarName[] = ['cpus', 'mem', 'gpus'];

/** A count of cpus or GPUs, three decimals at most (Resources keep no more). */
function countCell(n: number): string {
  return String(Number(n.toFixed(3)));
}

/** MB as `cairn quota set` takes them back: whole GiB or TiB with their unit, else MB (M). */
export function memCell(mb: number): string {
  if (mb === 0) return '0';
  if (Number.isInteger(mb) && mb % (1024 * 1024) === 0) return `${mb / (1024 * 1024)}T`;
  if (Number.isInteger(mb) && mb % 1024 === 0) return `${mb / 1024}G`;
  return `${Number(mb.toFixed(mb >= 100 ? 0 : 1))}M`;
}

function scalarCell(name: ScalarName, v: number): string {
  return name === 'mem' || name === 'disk' ? memCell(v) : countCell(v);
}

/** Amounts as `--guarantee` and `--limit` write them (cpus=4,mem=8G,gpus=2); those absent left out, '-' when none. */
export function amountsCell(a: Partial<Amounts> | null | undefined, names: readonly ScalarName[] = SCALAR_NAMES): string {
  if (!a) return '-';
  const parts = names.filter((n) => a[n] !== undefined).map((n) => `${n}=${scalarCell(n, a[n]!)}`);
  return parts.length > 0 ? parts.join(',') : '-';
}

/** What the usage samples say is used; '-' when no agent of these tasks answered. */
export function usedCell(u: TaskUse | null): string {
  return u ? `cpus=${countCell(u.cpus)},mem=${memCell(u.memMb)},gpus=${countCell(u.gpus)}` : '-';
}

export function percent(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

/** By segment, so a subtree stays together: team, team/a, team-b (plain order puts team-b between). */
export function compareRoles(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

/** `cairn roles`: one row per role; a role's row counts its whole subtree. */
export function rolesTable(answer: Pick<RolesAnswer, 'roles'>, wide = false): string {
  const allocated = wide ? SCALAR_NAMES : ALLOCATION_SCALARS;
  const rows = [...answer.roles].sort((a, b) => compareRoles(a.role, b.role)).map((r: RoleRow) => [
    r.role,
    countCell(r.weight),
    amountsCell(r.allocated, allocated),
    usedCell(r.used),
    amountsCell(r.guarantee),
    amountsCell(r.limit),
    percent(r.share),
    String(r.tasks),
    ...(wide ? [percent(r.weightedShare), String(r.frameworks)] : []),
  ]);
  const headers = ['ROLE', 'WEIGHT', 'ALLOCATED', 'USED', 'GUARANTEE', 'LIMIT', 'SHARE', 'TASKS'];
  return formatTable(wide ? [...headers, 'WEIGHTED SHARE', 'FRAMEWORKS'] : headers, rows);
}

/** The principals with tasks in `role` or under it; all without a role. Highest share first. */
export function selectPrincipals(principals: readonly PrincipalRow[], role?: string): PrincipalRow[] {
  return principals
    .filter((p) => role === undefined || p.roles.some((r) => inSubtree(r, role)))
    .sort((a, b) => b.share - a.share || (a.principal < b.principal ? -1 : a.principal > b.principal ? 1 : 0));
}

/** Why USED may count less than is used: some agents did not answer for their tasks. */
function samplingNote(answer: Pick<RolesAnswer, 'usageSample'>): string | undefined {
  const s = answer.usageSample;
  return s.agentsAnswered < s.agentsAsked ? `usage from ${s.agentsAnswered} of ${s.agentsAsked} agents: USED counts only their tasks` : undefined;
}

/** `cairn usage`: the cluster's total, then one row per principal, highest share first. */
export function usageReport(answer: Pick<RolesAnswer, 'total' | 'principals' | 'usageSample'>, opts: { role?: string; wide?: boolean } = {}): string {
  const allocated = opts.wide ? SCALAR_NAMES : ALLOCATION_SCALARS;
  const note = samplingNote(answer);
  const header = `Cluster total: ${amountsCell(answer.total)}${note ? ` (${note})` : ''}\n`;
  const principals = selectPrincipals(answer.principals, opts.role);
  if (principals.length === 0) {
    return `${header}No principal has running tasks${opts.role !== undefined ? ` in role ${opts.role} or under it` : ''}.\n`;
  }
  const rows = principals.map((p) => [p.principal, p.roles.join(','), amountsCell(p.allocated, allocated), usedCell(p.used), percent(p.share), String(p.tasks)]);
  return `${header}\n${formatTable(['PRINCIPAL', 'ROLES', 'ALLOCATED', 'USED', 'SHARE', 'TASKS'], rows)}`;
}

/** `cairn quota list`; wide adds what each role's subtree holds (from `roles`). */
export function quotasTable(quotas: readonly QuotaJson[], roles?: readonly RoleRow[]): string {
  const held = new Map((roles ?? []).map((r) => [r.role, r.allocated]));
  const rows = [...quotas].sort((a, b) => compareRoles(a.role, b.role)).map((q) => [
    q.role,
    amountsCell(q.guarantee),
    amountsCell(q.limit),
    ...(roles ? [amountsCell(held.get(q.role) ?? { cpus: 0, mem: 0, disk: 0, gpus: 0 })] : []),
  ]);
  return formatTable(['ROLE', 'GUARANTEE', 'LIMIT', ...(roles ? ['ALLOCATED'] : [])], rows);
}

/** A time to the second, UTC. */
function timeCell(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function victimsCell(p: PreemptionRecord, all: boolean): string {
  const ids = p.victims.map((v) => v.taskId);
  const shown = all ? ids : ids.slice(0, 2);
  const more = ids.length - shown.length;
  return ids.length === 0 ? '0' : `${ids.length} (${shown.join(', ')}${more > 0 ? `, +${more} more` : ''})`;
}

/** The preemptions newest first, cut at `limit` (0: all). */
export function selectPreemptions(list: readonly PreemptionRecord[], limit: number): { shown: PreemptionRecord[]; more: number } {
  const newest = [...list].sort((a, b) => b.atMs - a.atMs);
  const shown = limit > 0 ? newest.slice(0, limit) : newest;
  return { shown, more: newest.length - shown.length };
}

/** `cairn preemptions`: who preempted, in which class and why, and whose tasks it took. */
export function preemptionsTable(list: readonly PreemptionRecord[], wide = false): string {
  const rows = list.map((p) => [
    timeCell(p.atMs),
    p.preemptor.for && p.preemptor.for !== p.preemptor.name ? `${p.preemptor.name}/${p.preemptor.for}` : p.preemptor.name,
    p.preemptor.priorityClass,
    p.cause,
    victimsCell(p, wide),
    ...(wide ? [p.preemptor.role, p.preemptor.frameworkId, p.id] : []),
  ]);
  const headers = ['TIME', 'PREEMPTOR', 'CLASS', 'CAUSE', 'VICTIMS'];
  return formatTable(wide ? [...headers, 'ROLE', 'FRAMEWORK', 'ID'] : headers, rows);
}

// ---- commands ---------------------------------------------------------------------------

export function runRoles(o: SharingCommandOptions & { output?: OutputFormat }, io: CliIo): Promise<number> {
  return withSharing('roles', o, io, async (c) => {
    const answer = await c.roles();
    if (o.output === 'json' || o.output === 'yaml') {
      io.stdout.write(formatObjects(o.output, answer));
      return;
    }
    io.stdout.write(rolesTable(answer, o.output === 'wide'));
    const note = samplingNote(answer);
    if (note) io.stderr.write(`cairn roles: ${note}\n`);
  });
}

export function runUsage(o: SharingCommandOptions & { output?: OutputFormat; role?: string }, io: CliIo): Promise<number> {
  return withSharing('usage', o, io, async (c) => {
    const answer = await c.roles();
    if (o.output === 'json' || o.output === 'yaml') {
      io.stdout.write(formatObjects(o.output, { total: answer.total, principals: selectPrincipals(answer.principals, o.role), usageSample: answer.usageSample }));
      return;
    }
    io.stdout.write(usageReport(answer, { ...(o.role !== undefined ? { role: o.role } : {}), wide: o.output === 'wide' }));
  });
}

export function runQuotaList(o: SharingCommandOptions & { output?: OutputFormat }, io: CliIo): Promise<number> {
  return withSharing('quota list', o, io, async (c) => {
    const quotas = await c.quotas();
    const roles = o.output === 'wide' && quotas.length > 0 ? (await c.roles({ usage: false })).roles : undefined;
    printList(io, o.output, quotas, () => quotasTable(quotas, roles));
  });
}

export function runQuotaSet(o: SharingCommandOptions & { role: string; change: QuotaChange }, io: CliIo): Promise<number> {
  return withSharing('quota set', o, io, async (c) => {
    // Read, then written whole by the leader, which checks it against every other quota.
    const current = (await c.quotas()).find((q) => q.role === o.role);
    const stored = await c.setQuota(o.role, mergedQuota(current, o.change));
    io.stdout.write(`quota of ${o.role} set: guarantee ${amountsCell(stored.guarantee)}, limit ${amountsCell(stored.limit)}\n`);
  });
}

export function runQuotaRemove(o: SharingCommandOptions & { role: string }, io: CliIo): Promise<number> {
  return withSharing('quota rm', o, io, async (c) => {
    await c.removeQuota(o.role);
    io.stdout.write(`quota of ${o.role} removed\n`);
  });
}

export function runPreemptions(o: SharingCommandOptions & { output?: OutputFormat; limit: number }, io: CliIo): Promise<number> {
  return withSharing('preemptions', o, io, async (c) => {
    const { shown, more } = selectPreemptions(await c.preemptions(), o.limit);
    printList(io, o.output, shown, () => preemptionsTable(shown, o.output === 'wide'));
    if (more > 0) io.stderr.write(`${more} more preemption${more === 1 ? '' : 's'} not shown (--limit ${o.limit}; --limit 0 shows all)\n`);
  });
}
