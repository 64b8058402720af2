// The worked example of docs/architecture.md ("Adding a framework"): run-once, a framework of
// under 200 lines built only on the host's contract, the framework runtime and the placement
// pipeline (test/fixtures/frameworks/run-once.ts), plugged into a real master beside a real
// agent. Its commands run, each once; a failing one is recorded as failed; bad input is
// refused naming the field; and a master started again on the same data (a new leader's
// instance, from the replicated store) launches nothing twice.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type AgentHandle } from '../../agent/agent.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import type { HostedFramework } from '../../shared/framework-host/contract.ts';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { silentLogger } from '../../shared/logger.ts';
import { killTasksUnder, tempDir, waitFor } from '../harness/processes.ts';
import { runOnceFramework, type CommandRecord } from '../fixtures/frameworks/run-once.ts';

describe('a framework built only on the runtime (run-once)', () => {
  let master: MasterHandle | undefined;
  let agent: AgentHandle | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await agent?.stop();
    await master?.stop();
    killTasksUnder(dirs);
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const start = (dataDir: string): Promise<MasterHandle> =>
    startMaster({ auth: MasterAuth.off(), dataDir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), allocationIntervalMs: 50, frameworks: [runOnceFramework() as unknown as HostedFramework] });

  const list = async (): Promise<CommandRecord[]> => (await (await fetch(`${master!.url}/run-once/commands`)).json()) as CommandRecord[];
  const submit = (name: string, body: unknown): Promise<Response> =>
    fetch(`${master!.url}/run-once/commands/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  /** The tasks the master has ever been told of for run-once's commands, by command name. */
  const tasksByName = (): Map<string, string[]> => {
    const out = new Map<string, string[]>();
    for (const t of master!.master.registry.state.tasks.values()) out.set(t.name, [...(out.get(t.name) ?? []), t.id]);
    return out;
  };

  it('runs each command once, records how it ended, and a new instance launches nothing again', async () => {
    const base = tempDir('cairn-run-once-');
    dirs.push(base);
    const dataDir = join(base, 'master');
    master = await start(dataDir);
    agent = await startAgent({ masterUrl: master.url, workDir: join(base, 'agent'), httpPort: 0, ip: '127.0.0.1', hostname: 'run-once-host', resources: 'cpus:1;mem:256', cgroups: false, logger: silentLogger() });

    // Bad input names its field; nothing is recorded.
    const bad = await submit('a', { cmd: 'true', cpus: -1 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/^cpus:/);
    expect(await list()).toEqual([]);

    // Five commands of 0.3 cpus: three fit the agent at a time, so some wait for others' ends.
    for (const n of ['a', 'b', 'c', 'd']) expect((await submit(n, { cmd: 'sleep 0.3', cpus: 0.3 })).status).toBe(201);
    expect((await submit('fails', { cmd: 'exit 3', cpus: 0.3 })).status).toBe(201);
    expect((await submit('a', { cmd: 'true' })).status).toBe(409);

    const ended = await waitFor('every command ended', async () => {
      const all = await list();
      return all.length === 5 && all.every((c) => c.state !== 'pending' && c.state !== 'launched') ? all : undefined;
    }, 60_000, 100);
    expect(Object.fromEntries(ended.map((c) => [c.name, c.state])), JSON.stringify(ended)).toEqual({ a: 'TASK_FINISHED', b: 'TASK_FINISHED', c: 'TASK_FINISHED', d: 'TASK_FINISHED', fails: 'TASK_FAILED' });
    const launched = tasksByName();
    for (const n of ['a', 'b', 'c', 'd', 'fails']) expect(launched.get(n), n).toHaveLength(1);

    // A new master on the same data: the framework's instance resumes from its store.
    const frameworkId = master.master.registry.state.builtin.get('run-once')?.get('framework-id');
    expect(typeof frameworkId).toBe('string');
    await agent.stop();
    agent = undefined;
    await master.stop();
    master = await start(dataDir);
    agent = await startAgent({ masterUrl: master.url, workDir: join(base, 'agent'), httpPort: 0, ip: '127.0.0.1', hostname: 'run-once-host', resources: 'cpus:1;mem:256', cgroups: false, logger: silentLogger() });
    // One more command shows the new instance is subscribed (with the same framework id) and launching.
    expect((await submit('after', { cmd: 'true', cpus: 0.3 })).status).toBe(201);
    await waitFor('the new command ran', async () => (await list()).find((c) => c.name === 'after' && c.state === 'TASK_FINISHED'), 60_000, 100);
    expect(master.master.registry.state.builtin.get('run-once')?.get('framework-id')).toBe(frameworkId);
    const again = tasksByName();
    for (const n of ['a', 'b', 'c', 'd', 'fails', 'after']) expect(again.get(n), n).toHaveLength(1);
    expect(Object.fromEntries((await list()).map((c) => [c.name, c.state]))).toMatchObject({ a: 'TASK_FINISHED', fails: 'TASK_FAILED' });
  }, 120_000);
});
