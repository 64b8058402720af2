// cairn quota, roles and usage against a real master process, as an operator types them:
// a parent's limit bounds its children's, a bad amount never leaves the command line, and
// what is set shows in the listings until it is removed. Priority classes by seed 002's names:
// `cairn job submit --priority-class PTR` on a master whose default is `Iteration`.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cleanup, runCairn, startMasterProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
let masterUrl: string;

function cairn(...args: string[]): ReturnType<typeof runCairn> {
  return runCairn(args, { CAIRN_MASTER: masterUrl });
}

beforeAll(async () => {
  masterUrl = (await startMasterProcess(cleanup, { extra: ['--default-priority-class', 'Iteration'] })).url;
});

afterAll(async () => {
  await cleanup.run();
});

describe('cairn quota, roles and usage against a master', () => {
  it("a child's limit within its parent's is set; one above it is refused naming the amount and the parent", async () => {
    const team = await cairn('quota', 'set', 'team', '--limit', 'gpus=8');
    expect(team.stderr).toBe('');
    expect(team.stdout).toBe('quota of team set: guarantee -, limit gpus=8\n');
    expect(team.code).toBe(0);

    const a = await cairn('quota', 'set', 'team/a', '--limit', 'gpus=4');
    expect(a.stdout).toBe('quota of team/a set: guarantee -, limit gpus=4\n');
    expect(a.code).toBe(0);

    const b = await cairn('quota', 'set', 'team/b', '--limit', 'gpus=16');
    expect(b.code).toBe(1);
    expect(b.stderr).toContain('limit.gpus');
    expect(b.stderr).toContain("parent 'team'");
    expect(b.stdout).toBe('');

    const negative = await cairn('quota', 'set', 'team/b', '--guarantee', 'cpus=-1');
    expect(negative.code).toBe(2);
    expect(negative.stderr).toContain("option '--guarantee': cpus=-1: must be 0 or more");
  });

  it('quota list and roles -o json show both quotas; usage prints the cluster total', async () => {
    const [list, roles, usage] = await Promise.all([cairn('quota', 'list'), cairn('roles', '-o', 'json'), cairn('usage')]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ROLE\s+GUARANTEE\s+LIMIT\n/);
    expect(list.stdout).toMatch(/^team\s+-\s+gpus=8$/m);
    expect(list.stdout).toMatch(/^team\/a\s+-\s+gpus=4$/m);
    expect(list.stdout).not.toContain('team/b');

    expect(roles.code).toBe(0);
    const answer = JSON.parse(roles.stdout) as { roles: { role: string; limit: unknown; guarantee: unknown }[] };
    expect(answer.roles.find((r) => r.role === 'team')).toMatchObject({ limit: { gpus: 8 }, guarantee: null });
    expect(answer.roles.find((r) => r.role === 'team/a')).toMatchObject({ limit: { gpus: 4 }, guarantee: null });

    expect(usage.code).toBe(0);
    expect(usage.stdout).toMatch(/^Cluster total: cpus=0,mem=0,disk=0,gpus=0\n/);
  });

  it('quota rm removes a quota; a second rm says there is none', async () => {
    const rm = await cairn('quota', 'rm', 'team/a');
    expect(rm.stdout).toBe('quota of team/a removed\n');
    expect(rm.code).toBe(0);
    const again = await cairn('quota', 'rm', 'team/a');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("role 'team/a' has no quota");
    const list = await cairn('quotas');
    expect(list.stdout).not.toContain('team/a');
    expect(list.stdout).toMatch(/^team\s+-\s+gpus=8$/m);
  });
});

describe("priority classes by seed 002's names", () => {
  it('cairn job submit --priority-class PTR runs in research; the default set as Iteration is iteration; an unknown class is refused naming it', async () => {
    const ptr = await cairn('job', 'submit', '--kind', 'batch', '--name', 'ptr-job', '--priority-class', 'PTR', '--', 'true');
    expect(ptr.stderr).toBe('');
    expect(ptr.code).toBe(0);
    expect(((await (await authFetch(`${masterUrl}/api/v1/jobs/ptr-job`)).json()) as any).spec.priorityClass).toBe('research');

    const roles = await cairn('roles', '-o', 'json');
    expect(JSON.parse(roles.stdout).priorityClasses).toEqual({ names: ['production', 'iteration', 'research'], default: 'iteration' });

    const unknown = await cairn('job', 'submit', '--kind', 'batch', '--name', 'urgent-job', '--priority-class', 'Urgent', '--', 'true');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown priority class 'Urgent'");
    expect(unknown.stderr).toContain('priorityClassName');
    expect((await authFetch(`${masterUrl}/api/v1/jobs/urgent-job`)).status).toBe(404);
    const malformed = await cairn('job', 'submit', '--kind', 'batch', '--priority-class', 'not a class', '--', 'true');
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--priority-class');

    const badDefault = await runCairn(['master', '--port', '0', '--default-priority-class', 'Urgent']);
    expect(badDefault.code).toBe(2);
    expect(badDefault.stderr).toMatch(/--default-priority-class'.*the default class 'Urgent' is not one of production, iteration, research/);
  }, 60_000);
});
