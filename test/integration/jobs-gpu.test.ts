// The jobs framework on agents with GPUs: it subscribes GPU-aware, so a replica asking for
// GPUs is placed on an agent that has them (a master offers GPU agents only to such
// frameworks). A master in this process, simulated agents that finish what they launch.

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

describe('training jobs on GPU agents', () => {
  it('places a replica that asks for GPUs on the agent that has them', async () => {
    dir = tempDir();
    master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    for (const [hostname, resources] of [['cpu-only', 'cpus:4;mem:4096;ports:[31000-31009]'], ['gpu-host', 'cpus:4;mem:4096;gpus:2;ports:[31000-31009]']]) {
      const a = new FakeAgent({ masterUrl: master.url, hostname, resources, finishTasks: true });
      agents.push(a);
      await a.connect();
    }
    const res = await fetch(`${master.url}/api/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'gpu', kind: 'pytorch', groups: [{ name: 'master', template: { command: 'nvidia-smi', cpus: 1, mem: 256, gpus: 1 } }, { name: 'worker', template: { command: 'nvidia-smi', cpus: 1, mem: 256, gpus: 1 } }] }),
    });
    expect(res.status).toBe(201);
    const done = await waitFor('the job ended', async () => {
      const j = (await (await fetch(`${master!.url}/api/v1/jobs/gpu`)).json()) as JobView;
      return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
    }, 20_000);
    expect(done.phase, done.message).toBe('Succeeded');
    expect(done.replicas.map((r) => r.host)).toEqual(['gpu-host', 'gpu-host']);
    const fw = [...master.context.registry.state.frameworks.values()].find((f) => f.name === 'jobs')!;
    expect(fw.capabilities).toContain('GPU_RESOURCES');
  }, 60_000);
});
