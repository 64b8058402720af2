// A master, one agent and a framework subscribed through the scheduler API holding the
// agent's first offer, all real processes; and the status updates the framework saw, for
// tests that launch tasks by ACCEPT and wait for their ends.

import { expect } from 'vitest';
import { startAgentProcess, startMasterProcess, waitFor, type Cleanup } from './processes.ts';
import { autoAck, RawScheduler, type RawEvent } from './raw-scheduler.ts';

/** What frameworkCluster started: the master, the agent (and its work dir), the framework `s` (closed by the caller), the agent's id and the first offer. */
export type FrameworkCluster = Awaited<ReturnType<typeof frameworkCluster>>;

/** Starts the three; the framework subscribes as `user` (named `name`) and waits for its first offer. */
export async function frameworkCluster(cleanup: Cleanup, opts: { user: string; name: string; agentResources: string; agentFlags?: string[] }) {
  const master = await startMasterProcess(cleanup);
  const workDir = cleanup.dir('cairn-agent-');
  const agent = await startAgentProcess(cleanup, master.url, { workDir, resources: opts.agentResources, extra: opts.agentFlags ?? [] });
  const s = new RawScheduler(master.url);
  expect((await s.subscribe({ user: opts.user, name: opts.name, failover_timeout: 3600 })).status).toBe(200);
  autoAck(s);
  const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
  return { master, agent, workDir, s, agentId: offer.agent_id.value as string, offer };
}

export const TERMINAL_STATES: readonly string[] = ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_GONE'];

/** The statuses the framework received for one task, in order. */
export function statusesOf(s: RawScheduler, taskId: string): any[] {
  return s.events.filter((e: RawEvent) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e: RawEvent) => e.update.status);
}

/** The task's terminal status, once the framework has it. */
export function taskEnd(s: RawScheduler, taskId: string, timeoutMs = 60_000): Promise<any> {
  return waitFor(`${taskId} ended`, () => statusesOf(s, taskId).find((u) => TERMINAL_STATES.includes(u.state)), timeoutMs);
}
