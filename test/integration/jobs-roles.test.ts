// Jobs of different roles: the jobs framework subscribes once per role (a framework has one
// role), each subscription named `jobs`, and each job is launched with the offers of its own
// role. A master in this process, simulated agents that finish what they launch.

import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import type { JobView } from '../../shared/jobs/model.ts';

let master: MasterHandle | undefined;
let dir = '';
const agents: FakeAgent[] = [];

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
  await master?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function finished(name: string): Promise<JobView> {
  return waitFor(`job ${name} ended`, async () => {
    const j = (await (await fetch(`${master!.url}/api/v1/jobs/${name}`)).json()) as JobView;
    return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
  }, 20_000);
}

describe('training jobs of several roles', () => {
  it('subscribes once per role and launches each job through its role', async () => {
    dir = tempDir();
    master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    const a = new FakeAgent({ masterUrl: master.url, hostname: 'h1', resources: 'cpus:4;mem:4096;ports:[31000-31009]', finishTasks: true });
    agents.push(a);
    await a.connect();
    for (const [name, role] of [['plain', undefined], ['research', 'team-a']] as const) {
      const res = await fetch(`${master.url}/api/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, kind: 'batch', ...(role ? { role } : {}), groups: [{ name: 'worker', replicas: 2, template: { command: 'true', cpus: 0.5, mem: 64 } }] }),
      });
      expect(res.status).toBe(201);
    }
    expect((await finished('plain')).phase).toBe('Succeeded');
    expect((await finished('research')).phase).toBe('Succeeded');
    const state = master.context.registry.state;
    const jobsFrameworks = [...state.frameworks.values()].filter((f) => f.name === 'jobs');
    expect(jobsFrameworks.map((f) => f.role).sort()).toEqual(['*', 'team-a']);
    const roleOf = (taskPrefix: string) => [...state.tasks.values()].filter((t) => t.id.startsWith(taskPrefix)).map((t) => state.frameworks.get(t.frameworkId)!.role);
    expect(roleOf('plain.')).toEqual(['*', '*']);
    expect(roleOf('research.')).toEqual(['team-a', 'team-a']);
    // Each subscription's id is kept for the next leader.
    expect(master.context.registry.state.builtin.get('jobs')?.get('framework-id/team-a')).toBe(jobsFrameworks.find((f) => f.role === 'team-a')!.id);
  }, 60_000);
});
