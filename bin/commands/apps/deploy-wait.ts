// `cairn app deploy --wait`: follows the deployed apps until each runs as many instances as
// it asks for (healthy, where it has health checks) with no deployment left, printing each
// change as it happens — the instances running, and why the others wait (the launch queue's
// `why`: what is short and who holds it) — rather than only the end.

export interface AppState {
  id: string;
  instances: number;
  tasksRunning: number;
  tasksHealthy?: number;
  healthChecks?: unknown[];
  deployments?: unknown[];
}

/** Deployed: no deployment left, every instance running (and healthy, where checked). */
export function deployed(a: AppState): boolean {
  const healthy = (a.healthChecks?.length ?? 0) === 0 || (a.tasksHealthy ?? 0) >= a.instances;
  return (a.deployments?.length ?? 0) === 0 && a.tasksRunning === a.instances && healthy;
}

/** What changed for one app since the last look; kept between polls. */
export class AppProgress {
  private running: number | undefined;
  private why: string | undefined;

  lines(a: AppState, why: string | undefined): string[] {
    const out: string[] = [];
    if (a.tasksRunning !== this.running) out.push(`${a.id}: replicas ${a.tasksRunning}/${a.instances} running`);
    this.running = a.tasksRunning;
    if (why !== undefined && why !== this.why && !deployed(a)) out.push(`${a.id}: waiting: ${why}`);
    this.why = why;
    return out;
  }
}

export interface DeployWaitIo {
  /** The app as GET /v2/apps/ID answers it (`app`). */
  app(id: string): Promise<AppState>;
  /** The launch queue's reasons by app id (GET /v2/queue?cairn=true). */
  reasons(): Promise<Map<string, string>>;
  write(line: string): void;
  sleep(ms: number): Promise<void>;
  nowMs(): number;
}

/** 'deployed' once every app is, 'timeout' when `timeoutMs` ran out first. */
export async function waitDeployed(ids: readonly string[], io: DeployWaitIo, opts: { timeoutMs?: number; pollMs: number }): Promise<'deployed' | 'timeout'> {
  const deadline = opts.timeoutMs !== undefined ? io.nowMs() + opts.timeoutMs : Infinity;
  const progress = new Map(ids.map((id) => [id, new AppProgress()]));
  const done = new Set<string>();
  for (;;) {
    const reasons = await io.reasons();
    for (const id of ids) {
      if (done.has(id)) continue;
      const a = await io.app(id);
      for (const line of progress.get(id)!.lines(a, reasons.get(a.id))) io.write(line);
      if (deployed(a)) {
        done.add(id);
        io.write(`${a.id}: deployed (${a.tasksRunning}/${a.instances} running)`);
      }
    }
    if (done.size === ids.length) return 'deployed';
    if (io.nowMs() >= deadline) return 'timeout';
    await io.sleep(opts.pollMs);
  }
}
