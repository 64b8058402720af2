// cairn quota set's flags refused, each naming its flag, before anything is sent; amounts
// with units; a change merged into the role's present quota; the tables of cairn roles,
// usage, quota list and preemptions from a fabricated answer of the master; then the
// commands against a small fake master (a follower redirecting writes to the leader).

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PreemptionRecord } from '../../master/registry/commands.ts';
import { CairnError } from '../../shared/errors.ts';
import { buildProgram } from '../../bin/commands/program.ts';
import { commandShapes } from '../../bin/commands/cli/completion.ts';
import type { RolesAnswer } from '../../bin/commands/sharing/client.ts';
import { mergedQuota, parseAmounts, quotaChangeFromFlags, type QuotaSetFlags } from '../../bin/commands/sharing/flags.ts';
import { amountsCell, compareRoles, memCell, preemptionsTable, quotasTable, rolesTable, selectPreemptions, usageReport } from '../../bin/commands/sharing/commands.ts';
import { capture, cli } from '../harness/cli-capture.ts';

function refused(flags: QuotaSetFlags): CairnError {
  try {
    quotaChangeFromFlags(flags);
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('CAIRN_BAD_FLAG');
    return err as CairnError;
  }
  throw new Error('expected the flags to be refused');
}

/** Nothing listens here: a command that got past its flags would exit 1, not 2. */
const NOWHERE = 'http://127.0.0.1:1';

describe('cairn quota set: flags', () => {
  it.each([
    [['--guarantee', 'gpu=2'], "option '--guarantee': 'gpu' is not a resource (cpus, mem, disk, gpus)"],
    [['--guarantee', 'cpus=-1'], "option '--guarantee': cpus=-1: must be 0 or more"],
    [['--limit', 'cpus=lots'], "option '--limit': cpus=lots: must be a number of cpus, 0 or more"],
    [['--limit', 'mem=lots'], "option '--limit': mem=lots: must be a number of MB or a size such as 512M, 16G or 16GiB"],
    [['--limit', 'mem=-5G'], "option '--limit': mem=-5G: must be 0 or more"],
    [['--guarantee', ''], "option '--guarantee': names no resource (e.g. cpus=4,mem=8192,gpus=2)"],
    [['--guarantee', ','], "option '--guarantee': names no resource"],
    [['--limit', 'gpus'], "option '--limit': 'gpus' is not NAME=AMOUNT"],
    [['--limit', '=4'], "option '--limit': '=4' is not NAME=AMOUNT"],
    [['--limit', 'gpus=4,gpus=8'], "option '--limit': names gpus twice"],
    [['--limit', 'gpus=4', '--limit', 'gpus=8'], "option '--limit': names gpus twice"],
    [['--limit', 'GPUS=4'], "option '--limit': 'GPUS' is not a resource"],
    [['--limit', 'gpus=4', '--no-limit'], "option '--no-limit': goes against --limit: give one"],
    [['--no-limit', '--limit', 'gpus=4'], "option '--no-limit': goes against --limit: give one"],
    [['--no-guarantee', '--guarantee', 'cpus=1'], "option '--no-guarantee': goes against --guarantee: give one"],
    [[], 'give what to set: --guarantee, --limit, --no-guarantee or --no-limit'],
  ])('%j is a usage error naming the flag', async (flags, message) => {
    const r = await cli(['quota', 'set', 'team', ...flags, '--master', NOWHERE]);
    expect(r.err).toContain(`error: ${message}`);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
  });

  it('a value missing after the flag, a bad role, a bad --role: usage errors', async () => {
    const missing = await cli(['quota', 'set', 'team', '--limit']);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("option '--limit <amounts>' argument missing");
    const role = await cli(['quota', 'set', 'team//a', '--limit', 'gpus=1', '--master', NOWHERE]);
    expect(role.code).toBe(2);
    expect(role.err).toContain("'team//a' has an empty segment");
    const rm = await cli(['quota', 'rm', '-x', '--master', NOWHERE]);
    expect(rm.code).toBe(2);
    const usage = await cli(['usage', '--role', 'a b', '--master', NOWHERE]);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain("option '--role <role>' argument 'a b' is invalid");
    const limit = await cli(['preemptions', '--limit', '-1', '--master', NOWHERE]);
    expect(limit.code).toBe(2);
  });

  it('a refusal is a CAIRN_BAD_FLAG whose field is the flag', () => {
    expect(refused({ guarantee: ['gpu=1'] }).field).toBe('--guarantee');
    expect(refused({ limit: ['cpus=-1'] }).field).toBe('--limit');
    expect(refused({ limit: ['gpus=1'], noLimit: true }).field).toBe('--no-limit');
  });

  it('amounts: numbers of 0 or more; mem and disk in MB or with a binary unit', () => {
    expect(parseAmounts(['cpus=4,mem=8192,gpus=2'], '--guarantee')).toEqual({ cpus: 4, mem: 8192, gpus: 2 });
    expect(parseAmounts(['mem=16G', 'disk=512Mi'], '--limit')).toEqual({ mem: 16384, disk: 512 });
    expect(parseAmounts(['mem=16GiB,disk=1.5g'], '--limit')).toEqual({ mem: 16384, disk: 1536 });
    expect(parseAmounts(['cpus=.5, gpus=0, mem=0'], '--limit')).toEqual({ cpus: 0.5, gpus: 0, mem: 0 });
    expect(parseAmounts(undefined, '--limit')).toBeUndefined();
  });

  it('the change: what is named replaces that part; --no-* removes it; what is not named is kept', () => {
    const current = { role: 'team', guarantee: { cpus: 4, gpus: 2 }, limit: { gpus: 8 } };
    expect(mergedQuota(current, quotaChangeFromFlags({ limit: ['gpus=16,cpus=64'] }))).toEqual({ guarantee: { cpus: 4, gpus: 2 }, limit: { gpus: 16, cpus: 64 } });
    expect(mergedQuota(current, quotaChangeFromFlags({ guarantee: ['cpus=1'] }))).toEqual({ guarantee: { cpus: 1 }, limit: { gpus: 8 } });
    expect(mergedQuota(current, quotaChangeFromFlags({ noLimit: true }))).toEqual({ guarantee: { cpus: 4, gpus: 2 } });
    expect(mergedQuota(current, quotaChangeFromFlags({ noGuarantee: true, limit: ['gpus=4'] }))).toEqual({ guarantee: {}, limit: { gpus: 4 } });
    expect(mergedQuota(undefined, quotaChangeFromFlags({ limit: ['gpus=8'] }))).toEqual({ guarantee: {}, limit: { gpus: 8 } });
  });
});

// ---- formatting -------------------------------------------------------------------------

const ZERO = { cpus: 0, mem: 0, disk: 0, gpus: 0 };

/** GET /api/v1/roles as the master answers it, its roles out of order. */
const ANSWER: RolesAnswer = {
  weights: { team: 2 },
  priorityClasses: { names: ['production', 'iteration', 'research'], default: 'research' },
  total: { cpus: 16, mem: 65536, disk: 512000, gpus: 8 },
  roles: [
    { role: 'team/a', weight: 1, allocated: { cpus: 4, mem: 16384, disk: 0, gpus: 4 }, used: null, guarantee: null, limit: { gpus: 4 }, share: 0.5, weightedShare: 0.5, tasks: 2, frameworks: 1 },
    { role: 'team-b', weight: 1, allocated: { cpus: 0.25, mem: 128, disk: 0, gpus: 0 }, used: { cpus: 0.01, memMb: 3.25, gpus: 0 }, guarantee: null, limit: null, share: 0.015625, weightedShare: 0.015625, tasks: 1, frameworks: 1 },
    { role: 'team', weight: 2, allocated: { cpus: 6, mem: 24576, disk: 10240, gpus: 4 }, used: { cpus: 5.5, memMb: 20000.4, gpus: 4 }, guarantee: { cpus: 4, gpus: 2 }, limit: { gpus: 8, mem: 65536 }, share: 0.5, weightedShare: 0.25, tasks: 3, frameworks: 2 },
    { role: '*', weight: 1, allocated: { cpus: 0.5, mem: 256, disk: 0, gpus: 0 }, used: { cpus: 0.125, memMb: 40.2, gpus: 0 }, guarantee: null, limit: null, share: 0.03125, weightedShare: 0.03125, tasks: 1, frameworks: 1 },
  ],
  principals: [
    { principal: 'carol', allocated: { cpus: 0.5, mem: 256, disk: 0, gpus: 0 }, used: { cpus: 0.125, memMb: 40.2, gpus: 0 }, share: 0.03125, tasks: 1, roles: ['*'] },
    { principal: 'alice', allocated: { cpus: 4, mem: 16384, disk: 0, gpus: 4 }, used: null, share: 0.5, tasks: 2, roles: ['team/a'] },
    { principal: 'dave', allocated: { cpus: 0.25, mem: 128, disk: 0, gpus: 0 }, used: { cpus: 0.01, memMb: 3.25, gpus: 0 }, share: 0.015625, tasks: 1, roles: ['team-b'] },
    { principal: 'bob', allocated: { cpus: 2, mem: 8192, disk: 10240, gpus: 0 }, used: { cpus: 1.5, memMb: 5000, gpus: 0 }, share: 0.125, tasks: 1, roles: ['team'] },
  ],
  usageSample: { atMs: 1_700_000_000_000, agentsAsked: 2, agentsAnswered: 2 },
};

const PREEMPTIONS: PreemptionRecord[] = [
  {
    id: 'p-1', atMs: Date.UTC(2026, 0, 2, 3, 4, 5, 678), cause: 'priority',
    preemptor: { frameworkId: 'fw-jobs', name: 'cairn-jobs', role: 'prod', priorityClass: 'production', for: 'mnist' },
    victims: [
      { taskId: 'train-0-aa', frameworkId: 'fw-r', agentId: 'a1', role: 'research', priorityClass: 'research' },
      { taskId: 'train-1-bb', frameworkId: 'fw-r', agentId: 'a1', role: 'research', priorityClass: 'research' },
      { taskId: 'train-2-cc', frameworkId: 'fw-r', agentId: 'a2', role: 'research', priorityClass: 'research' },
    ],
  },
  {
    id: 'p-2', atMs: Date.UTC(2026, 0, 2, 4, 0, 0), cause: 'guarantee',
    preemptor: { frameworkId: 'fw-t', name: 'team-sched', role: 'team', priorityClass: 'research', for: '' },
    victims: [{ taskId: 'x-0', frameworkId: 'fw-r', agentId: 'a2', role: 'other', priorityClass: 'research' }],
  },
];

describe('the tables', () => {
  it('cells: amounts as --limit takes them, mem in whole GiB where it is one', () => {
    expect(memCell(16384)).toBe('16G');
    expect(memCell(2 * 1024 * 1024)).toBe('2T');
    expect(memCell(1536)).toBe('1536M');
    expect(memCell(40.25)).toBe('40.3M');
    expect(memCell(0)).toBe('0');
    expect(amountsCell({ gpus: 8, cpus: 0.125 })).toBe('cpus=0.125,gpus=8');
    expect(amountsCell({})).toBe('-');
    expect(amountsCell(null)).toBe('-');
    expect(amountsCell(ZERO, ['cpus', 'mem', 'gpus'])).toBe('cpus=0,mem=0,gpus=0');
    expect(['team-b', 'team/a', 'team', '*', 'team/a/x', 'alpha'].sort(compareRoles)).toEqual(['*', 'alpha', 'team', 'team/a', 'team/a/x', 'team-b']);
  });

  it('cairn roles: one row per role, a subtree together, whole role names', () => {
    expect(rolesTable(ANSWER)).toBe(
      [
        'ROLE    WEIGHT  ALLOCATED                  USED                         GUARANTEE      LIMIT           SHARE  TASKS',
        '*       1       cpus=0.5,mem=256M,gpus=0   cpus=0.125,mem=40.2M,gpus=0  -              -               3.1%   1',
        'team    2       cpus=6,mem=24G,gpus=4      cpus=5.5,mem=20000M,gpus=4   cpus=4,gpus=2  mem=64G,gpus=8  50.0%  3',
        'team/a  1       cpus=4,mem=16G,gpus=4      -                            -              gpus=4          50.0%  2',
        'team-b  1       cpus=0.25,mem=128M,gpus=0  cpus=0.01,mem=3.3M,gpus=0    -              -               1.6%   1',
        '',
      ].join('\n'),
    );
    const wide = rolesTable(ANSWER, true).split('\n');
    expect(wide[0]).toMatch(/SHARE\s+TASKS\s+WEIGHTED SHARE\s+FRAMEWORKS$/);
    expect(wide[2]).toContain('cpus=6,mem=24G,disk=10G,gpus=4');
    expect(wide[2]).toMatch(/50\.0%\s+3\s+25\.0%\s+2$/);
  });

  it('cairn usage: the total, then principals by share; --role keeps those with tasks in its subtree', () => {
    expect(usageReport(ANSWER)).toBe(
      [
        'Cluster total: cpus=16,mem=64G,disk=500G,gpus=8',
        '',
        'PRINCIPAL  ROLES   ALLOCATED                  USED                         SHARE  TASKS',
        'alice      team/a  cpus=4,mem=16G,gpus=4      -                            50.0%  2',
        'bob        team    cpus=2,mem=8G,gpus=0       cpus=1.5,mem=5000M,gpus=0    12.5%  1',
        'carol      *       cpus=0.5,mem=256M,gpus=0   cpus=0.125,mem=40.2M,gpus=0  3.1%   1',
        'dave       team-b  cpus=0.25,mem=128M,gpus=0  cpus=0.01,mem=3.3M,gpus=0    1.6%   1',
        '',
      ].join('\n'),
    );
    const team = usageReport(ANSWER, { role: 'team' });
    expect(team).toMatch(/^alice /m);
    expect(team).toMatch(/^bob /m);
    expect(team).not.toMatch(/^dave /m);
    expect(team).not.toMatch(/^carol /m);
    expect(usageReport(ANSWER, { role: 'ops' })).toBe('Cluster total: cpus=16,mem=64G,disk=500G,gpus=8\nNo principal has running tasks in role ops or under it.\n');
    const partial = usageReport({ ...ANSWER, usageSample: { atMs: 1, agentsAsked: 3, agentsAnswered: 1 } });
    expect(partial.split('\n')[0]).toBe('Cluster total: cpus=16,mem=64G,disk=500G,gpus=8 (usage from 1 of 3 agents: USED counts only their tasks)');
  });

  it('cairn quota list: by role; wide with what each holds', () => {
    const quotas = [{ role: 'team/a', guarantee: {}, limit: { gpus: 4 } }, { role: 'team', guarantee: { cpus: 4 }, limit: { gpus: 8 } }];
    expect(quotasTable(quotas)).toBe('ROLE    GUARANTEE  LIMIT\nteam    cpus=4     gpus=8\nteam/a  -          gpus=4\n');
    expect(quotasTable(quotas, ANSWER.roles).split('\n')[1]).toBe('team    cpus=4     gpus=8  cpus=6,mem=24G,disk=10G,gpus=4');
  });

  it('cairn preemptions: newest first, the preemptor and what it was for, the first victims', () => {
    const { shown, more } = selectPreemptions(PREEMPTIONS, 0);
    expect(more).toBe(0);
    expect(preemptionsTable(shown)).toBe(
      [
        'TIME                  PREEMPTOR         CLASS       CAUSE      VICTIMS',
        '2026-01-02T04:00:00Z  team-sched        research    guarantee  1 (x-0)',
        '2026-01-02T03:04:05Z  cairn-jobs/mnist  production  priority   3 (train-0-aa, train-1-bb, +1 more)',
        '',
      ].join('\n'),
    );
    expect(preemptionsTable(shown, true)).toContain('3 (train-0-aa, train-1-bb, train-2-cc)  prod  fw-jobs    p-1');
    expect(selectPreemptions(PREEMPTIONS, 1)).toEqual({ shown: [PREEMPTIONS[1]], more: 1 });
  });

  it('completion knows the new commands and their flags', () => {
    const shapes = commandShapes(buildProgram(capture().io).program);
    expect(shapes.find((s) => s.path === '')!.subcommands).toEqual(expect.arrayContaining(['roles', 'usage', 'quota', 'quotas', 'preemptions']));
    expect(shapes.find((s) => s.path === 'quota')!.subcommands).toEqual(['list', 'set', 'rm', 'remove']);
    expect(shapes.find((s) => s.path === 'quota set')!.flags).toEqual(expect.arrayContaining(['--guarantee', '--no-guarantee', '--limit', '--no-limit', '--master']));
  });
});

// ---- against a fake master --------------------------------------------------------------

describe('the commands against a master', () => {
  let server: Server;
  let url: string;
  const seen: { method: string; url: string; body: string; auth?: string }[] = [];
  const quotas = new Map<string, unknown>([['team', { role: 'team', guarantee: { cpus: 4 }, limit: { gpus: 8 } }]]);

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, body, ...(req.headers.authorization ? { auth: req.headers.authorization } : {}) });
        const send = (status: number, value: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(value));
        };
        // A follower: every change goes to the leader (the same server, another path prefix).
        if (req.url!.startsWith('/api/') && req.method !== 'GET') {
          res.writeHead(307, { location: `/leader${req.url}` });
          return void res.end();
        }
        const path = req.url!.replace(/^\/leader/, '');
        const role = decodeURIComponent(path.split('/')[4] ?? '');
        if (req.method === 'GET' && path.split('?')[0] === '/api/v1/roles') return send(200, ANSWER);
        if (req.method === 'GET' && path === '/api/v1/quotas') return send(200, { quotas: [...quotas.values()] });
        if (req.method === 'GET' && path === '/api/v1/preemptions') return send(200, { preemptions: PREEMPTIONS });
        if (req.method === 'PUT' && path.startsWith('/api/v1/quotas/')) {
          const q = JSON.parse(body) as { limit?: { gpus?: number } };
          if (role === 'team/b' && (q.limit?.gpus ?? 0) > 8) {
            return send(400, { code: 'CAIRN_BAD_REQUEST', message: "limit.gpus: role 'team/b' asks a limit of 16 gpus, above its parent 'team''s limit of 8", field: 'limit.gpus' });
          }
          const stored = { role, ...q };
          quotas.set(role, stored);
          return send(200, stored);
        }
        if (req.method === 'DELETE' && path.startsWith('/api/v1/quotas/')) {
          if (!quotas.delete(role)) return send(404, { code: 'CAIRN_UNKNOWN_QUOTA', message: `role '${role}' has no quota`, field: 'role' });
          return send(200, { role, removed: true });
        }
        send(404, { code: 'CAIRN_BAD_REQUEST', message: `no route ${path}` });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('cairn roles prints the table; -o json the answer as it came', async () => {
    const table = await cli(['roles', '--master', url], { CAIRN_TOKEN: 'tok' });
    expect(table.code).toBe(0);
    expect(table.out).toBe(rolesTable(ANSWER));
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/api/v1/roles', auth: 'Bearer tok' });
    const json = await cli(['roles', '-o', 'json', '--master', url]);
    expect(JSON.parse(json.out)).toEqual(ANSWER);
    const usage = await cli(['usage', '--role', 'team', '-o', 'yaml', '--master', url]);
    expect(usage.code).toBe(0);
    expect(usage.out).toContain('principal: alice');
    expect(usage.out).not.toContain('principal: dave');
  });

  it('cairn quota set keeps what it does not name, sends the role encoded, and follows the redirect to the leader', async () => {
    const r = await cli(['quota', 'set', 'team', '--limit', 'gpus=16', '--master', url], { CAIRN_TOKEN: 'tok' });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toBe('quota of team set: guarantee cpus=4, limit gpus=16\n');
    const put = seen.filter((s) => s.method === 'PUT').at(-1)!;
    expect(put).toMatchObject({ url: '/leader/api/v1/quotas/team', auth: 'Bearer tok' });
    expect(JSON.parse(put.body)).toEqual({ guarantee: { cpus: 4 }, limit: { gpus: 16 } });
    const child = await cli(['quota', 'set', 'team/a', '--guarantee', 'cpus=1,mem=2G', '--master', url]);
    expect(child.code).toBe(0);
    expect(seen.filter((s) => s.method === 'PUT').at(-1)!.url).toBe('/leader/api/v1/quotas/team%2Fa');
    const list = await cli(['quotas', '--master', url]);
    expect(list.out).toBe('ROLE    GUARANTEE      LIMIT\nteam    cpus=4         gpus=16\nteam/a  cpus=1,mem=2G  -\n');
    // Wide adds what each role holds, read without asking the agents for usage samples.
    const wide = await cli(['quota', 'list', '-o', 'wide', '--master', url]);
    expect(wide.out.split('\n')[0]).toMatch(/^ROLE\s+GUARANTEE\s+LIMIT\s+ALLOCATED$/);
    expect(wide.out).toMatch(/^team\s+cpus=4\s+gpus=16\s+cpus=6,mem=24G,disk=10G,gpus=4$/m);
    expect(seen.at(-1)!.url).toBe('/api/v1/roles?usage=false');
  });

  it("the master's refusal names the field; rm of a role without a quota says so, with a hint", async () => {
    const bad = await cli(['quota', 'set', 'team/b', '--limit', 'gpus=16', '--master', url]);
    expect(bad.code).toBe(1);
    expect(bad.err).toBe("cairn quota set: limit.gpus: role 'team/b' asks a limit of 16 gpus, above its parent 'team''s limit of 8\n");
    const rm = await cli(['quota', 'rm', 'team/a', '--master', url]);
    expect(rm.code).toBe(0);
    expect(rm.out).toBe('quota of team/a removed\n');
    const again = await cli(['quota', 'remove', 'team/a', '--master', url]);
    expect(again.code).toBe(1);
    expect(again.err).toBe("cairn quota rm: role 'team/a' has no quota — `cairn quota list` shows the quotas there are\n");
  });

  it('cairn preemptions: --limit cuts, saying how many more there are', async () => {
    const r = await cli(['preemptions', '--limit', '1', '--master', url]);
    expect(r.code).toBe(0);
    expect(r.out.trim().split('\n')).toHaveLength(2);
    expect(r.out).toContain('team-sched');
    expect(r.err).toBe('1 more preemption not shown (--limit 1; --limit 0 shows all)\n');
  });

  it('a master that cannot be reached: exit 1 with the hint', async () => {
    const r = await cli(['roles', '--master', NOWHERE]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^cairn roles: reading the roles: cannot reach the master .* — is a master running at http:\/\/127\.0\.0\.1:1\?/);
  });
});
