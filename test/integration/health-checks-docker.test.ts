// Health checks of container tasks, as real processes (master, agent, a plain Mesos v1
// client) against a real Docker daemon: an HTTP check names the container port of a BRIDGE
// task and reaches it on its mapped host port; COMMAND checks run inside the container
// (`docker exec`), and one that fails gets its container killed with Mesos' reason. Skipped,
// with the reason printed, where no daemon answers (outside CI).

import { afterEach, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { Cleanup, freePortRun, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';

const why = await dockerUnavailable();
if (why && process.env.CI) throw new Error(`CI must run the Docker tests: ${why}`);
if (why) console.warn(`skipping the container health check tests: ${why}`);

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
const frameworkIds: string[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
  // An agent killed with SIGKILL leaves its containers: removed by their framework's label.
  const docker = new Docker();
  for (const id of frameworkIds.splice(0)) {
    for (const c of await docker.listContainers({ all: true, filters: { label: [`cairn.framework-id=${id}`] } })) {
      await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
  }
});

const FAST = { delay_seconds: 0, interval_seconds: 1, timeout_seconds: 5, grace_period_seconds: 60 };
/** Files only the container has: its sandbox is mounted at /mnt/mesos/sandbox. */
const WEB = 'cd "$MESOS_SANDBOX" && busybox mkdir -p www && echo ok > www/health && exec busybox httpd -f -p 8080 -h www';

function updatesOf(s: RawScheduler, taskId: string): any[] {
  return s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e) => e.update.status);
}

describe.skipIf(!!why)('health checks of container tasks', () => {
  it('checks a BRIDGE container on its mapped host port, and runs COMMAND checks in the container', async () => {
    await ensureTestImage();
    const master = await startMasterProcess(cleanup);
    const p = await freePortRun(4);
    await startAgentProcess(cleanup, master.url, { resources: `cpus:2;mem:1024;ports:[${p}-${p + 3}]` });
    const s = new RawScheduler(master.url);
    schedulers.push(s);
    expect((await s.subscribe({ user: '', name: 'health-docker', failover_timeout: 3600 })).status).toBe(200);
    frameworkIds.push(s.frameworkId);
    autoAck(s);
    const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
    const agentId = offer.agent_id.value as string;
    const container = (network: 'BRIDGE' | 'HOST', portMappings?: unknown[]) => ({ type: 'DOCKER', docker: { image: TEST_IMAGE, network, pull_policy: 'never', ...(portMappings ? { port_mappings: portMappings } : {}) } });
    const infos = [
      // Port 8080 inside; the check names it, the agent reaches the host port Docker maps to it.
      taskInfo('web', agentId, { cpus: 0.1, mem: 32, ports: [[p, p]] }, WEB, {
        container: container('BRIDGE', [{ container_port: 8080 }]),
        health_check: { type: 'HTTP', http: { port: 8080, path: '/health' }, ...FAST },
      }),
      taskInfo('inside', agentId, { cpus: 0.1, mem: 32 }, WEB.replace('8080', String(p + 1)), {
        container: container('HOST'),
        health_check: { type: 'COMMAND', command: { value: 'test -f /mnt/mesos/sandbox/www/health' }, ...FAST },
      }),
      taskInfo('sick', agentId, { cpus: 0.1, mem: 32 }, 'exec sleep 600', {
        container: container('HOST'),
        kill_policy: { grace_period: { nanoseconds: 1e9 } },
        health_check: { type: 'COMMAND', command: { value: 'echo not ready; exit 3' }, ...FAST, grace_period_seconds: 0, consecutive_failures: 2 },
      }),
    ];
    const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }] } });
    expect(r.status).toBe(202);

    await waitFor('web healthy', () => updatesOf(s, 'web').some((u) => u.healthy === true), 60_000);
    expect(updatesOf(s, 'web').find((u) => u.healthy === true).message).toContain(`HTTP GET http://127.0.0.1:${p}/health`);
    await waitFor('inside healthy', () => updatesOf(s, 'inside').some((u) => u.healthy === true), 60_000);
    expect(updatesOf(s, 'inside').find((u) => u.healthy === true).message).toContain('in container cairn-inside');

    await waitFor('sick killed', () => updatesOf(s, 'sick').some((u) => u.state === 'TASK_KILLED'), 60_000);
    const end = updatesOf(s, 'sick').at(-1);
    expect(end).toMatchObject({ state: 'TASK_KILLED', healthy: false, reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED' });
    expect(end.message).toContain('2 times in a row');
    expect(end.message).toContain('exited with code 3: not ready');
  }, 180_000);
});
