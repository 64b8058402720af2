// A launch burst through a real master and agent (both in this process, the tasks real
// children of the agent's launcher): `tasks` tasks running `true`, launched through the
// scheduler API in ACCEPTs of `perAccept`, every update acknowledged; waits until every
// task has reported a terminal state, or the time-out. Used by the burst regression test
// and by `npm run bench -- task-burst` (issue 22: ends lost under a burst).

import { rmSync } from 'node:fs';
import { startMaster } from '../../master/server.ts';
import { startAgent } from '../../agent/agent.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { tempDir } from './processes.ts';
import { RawScheduler, taskInfo, type RawEvent } from './raw-scheduler.ts';

const TASK = { cpus: 0.01, mem: 1 };
const TERMINAL = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_GONE']);

export interface TaskBurstResult {
  tasks: number;
  perAccept: number;
  /** Tasks by their last reported state ('none': no update at all). */
  counts: Record<string, number>;
  /** Tasks with no terminal state when the run ended, with their last state. */
  notEnded: [string, string][];
  /** From SUBSCRIBE until every task had ended (or the time-out). */
  seconds: number;
}

export async function runTaskBurst(opts: { tasks: number; perAccept: number; timeoutMs: number }): Promise<TaskBurstResult> {
  const dir = tempDir('cairn-burst-');
  const master = await startMaster({ auth: MasterAuth.off(), dataDir: `${dir}/master`, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), allocationIntervalMs: 100, defaultRefuseMs: 0 });
  const agent = await startAgent({
    masterUrl: master.url,
    workDir: `${dir}/agent`,
    httpPort: 0,
    hostname: 'localhost',
    resources: `cpus:${opts.tasks * TASK.cpus + 1};mem:${opts.tasks * TASK.mem + 100}`,
    logger: silentLogger(),
  });
  const s = new RawScheduler(master.url);
  const states = new Map<string, string>();
  const seenOffers = new Set<string>();
  const calls: Promise<unknown>[] = [];
  let launched = 0;
  let allEnded: () => void = () => undefined;
  const ended = new Promise<void>((r) => (allEnded = r));
  const check = () => {
    if (launched === opts.tasks && [...states.values()].every((v) => TERMINAL.has(v))) allEnded();
  };
  s.onEvent((e: RawEvent) => {
    if (e.type === 'OFFERS') {
      for (const offer of e.offers.offers) {
        if (seenOffers.has(offer.id.value) || launched >= opts.tasks) continue;
        seenOffers.add(offer.id.value);
        const cpus = offer.resources.find((r: any) => r.name === 'cpus')?.scalar.value ?? 0;
        const n = Math.min(opts.perAccept, Math.floor(cpus / TASK.cpus + 1e-9), opts.tasks - launched);
        const infos = Array.from({ length: n }, () => {
          const id = `burst-${launched++}`;
          states.set(id, 'none');
          return taskInfo(id, offer.agent_id.value, TASK, 'true');
        });
        calls.push(s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }], filters: { refuse_seconds: 0 } } }).catch(() => undefined));
      }
    } else if (e.type === 'UPDATE') {
      const st = e.update.status;
      states.set(st.task_id.value, st.state);
      if (st.uuid) calls.push(s.call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid } }).catch(() => undefined));
      check();
    }
  });
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await s.subscribe({ user: '', name: 'task-burst' });
    await Promise.race([ended, new Promise<void>((r) => (timer = setTimeout(r, opts.timeoutMs)))]);
  } finally {
    clearTimeout(timer);
  }
  const seconds = (performance.now() - t0) / 1000;
  await Promise.allSettled(calls);
  s.close();
  await agent.stop({ killTasks: true });
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
  const counts: Record<string, number> = {};
  for (const v of states.values()) counts[v] = (counts[v] ?? 0) + 1;
  const notEnded = [...states].filter(([, v]) => !TERMINAL.has(v));
  return { tasks: opts.tasks, perAccept: opts.perAccept, counts, notEnded, seconds: Number(seconds.toFixed(2)) };
}
