// GPUs end to end: an agent with two GPU devices (declared with --resources, as on a host
// whose nvidia-smi is replaced by recorded outputs in the unit tests), a framework that
// opted in with GPU_RESOURCES, and tasks that each get a device of their own.

import { afterEach, describe, expect, it } from 'vitest';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

const gpuTask = (id: string, agentId: string) => {
  const t = taskInfo(id, agentId, { cpus: 0.5, mem: 32 }, 'echo "devices=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES"; sleep 30');
  t.resources.push({ name: 'gpus', type: 'SCALAR', scalar: { value: 1 }, role: '*' });
  return t;
};
const gpusIn = (offer: any) => offer.resources.find((r: any) => r.name === 'gpus')?.scalar.value ?? 0;

describe('GPUs', () => {
  it('gives two one-GPU tasks different devices on a 2-GPU agent; a third waits for an offer with a GPU', async () => {
    const master = await startMasterProcess(cleanup, { extra: ['--offer-timeout', '1m'] });
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:1024;gpus:2' });

    // A framework that did not opt in is offered nothing from a GPU agent.
    const plain = new RawScheduler(master.url);
    schedulers.push(plain);
    await plain.subscribe({ user: '', name: 'cpu-only' });
    await new Promise((r) => setTimeout(r, 1500));
    expect(plain.offers()).toEqual([]);
    plain.close();

    const s = new RawScheduler(master.url);
    schedulers.push(s);
    await s.subscribe({ user: '', name: 'trainer', capabilities: [{ type: 'GPU_RESOURCES' }] });
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    expect(gpusIn(offer)).toBe(2);
    const mark = s.events.length;
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [gpuTask('g0', offer.agent_id.value), gpuTask('g1', offer.agent_id.value)] } }], filters: { refuse_seconds: 0 } } });
    const outputs = await Promise.all(['g0', 'g1'].map((id) => waitFor(`output of ${id}`, async () => {
      const c = await (await authFetch(`${master.url}/api/v1/tasks/${id}/logs?stream=stdout`)).json();
      return c.data || undefined;
    })));
    const devices = outputs.map((o: string) => /devices=(\d+) nvidia=(\d+)/.exec(o)!.slice(1));
    expect(devices.map(([a, b]) => a === b)).toEqual([true, true]);
    expect(new Set(devices.map(([a]) => a)).size).toBe(2);

    // What is left has no GPU: the third task cannot be placed until one ends.
    const next = await s.next((e) => e.type === 'OFFERS', 10_000, mark);
    expect(gpusIn(next.offers.offers[0])).toBe(0);
    const mark2 = s.events.length;
    await s.call({ type: 'KILL', kill: { task_id: { value: 'g0' } } });
    const freed = await waitFor('an offer with a GPU', () => s.offers(mark2).find((o) => gpusIn(o) === 1), 15_000);
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [freed.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [gpuTask('g2', freed.agent_id.value)] } }] } });
    const third = await waitFor('output of g2', async () => (await (await authFetch(`${master.url}/api/v1/tasks/g2/logs?stream=stdout`)).json()).data || undefined);
    expect(/devices=(\d+)/.exec(third)![1]).toBe(devices[0][0]); // the device g0 gave back
  });

  it('with --gpu-sharing 2, two one-GPU tasks share the one device; a third waits', async () => {
    const master = await startMasterProcess(cleanup, { extra: ['--offer-timeout', '1m'] });
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:1024;gpus:1', extra: ['--gpu-sharing', '2'] });
    const s = new RawScheduler(master.url);
    schedulers.push(s);
    await s.subscribe({ user: '', name: 'sharers', capabilities: [{ type: 'GPU_RESOURCES' }] });
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    expect(gpusIn(offer)).toBe(2);
    const mark = s.events.length;
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [gpuTask('s0', offer.agent_id.value), gpuTask('s1', offer.agent_id.value)] } }], filters: { refuse_seconds: 0 } } });
    const outputs = await Promise.all(['s0', 's1'].map((id) => waitFor(`output of ${id}`, async () => {
      const c = await (await authFetch(`${master.url}/api/v1/tasks/${id}/logs?stream=stdout`)).json();
      return c.data || undefined;
    })));
    expect(outputs.map((o: string) => /devices=(\d+)/.exec(o)![1])).toEqual(['0', '0']);
    const next = await s.next((e) => e.type === 'OFFERS', 10_000, mark);
    expect(gpusIn(next.offers.offers[0])).toBe(0);
  });
});
