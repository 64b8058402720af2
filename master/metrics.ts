// Counters the master keeps for `GET /metrics` (Prometheus text format, version 0.0.4).

export class MasterMetrics {
  agentConnections = 0;
  badAgentFrames = 0;
  statusUpdates = 0;
  tasksLaunched = 0;
  offersMade = 0;
  offersRescinded = 0;
  badRequests = 0;
  readonly calls = new Map<string, number>();
  private allocationCount = 0;
  private allocationSumMs = 0;
  private allocationLastMs = 0;

  observeAllocation(ms: number): void {
    this.allocationCount++;
    this.allocationSumMs += ms;
    this.allocationLastMs = ms;
  }

  get allocation(): { count: number; sumMs: number; lastMs: number } {
    return { count: this.allocationCount, sumMs: this.allocationSumMs, lastMs: this.allocationLastMs };
  }
}

type Sample = { labels?: Record<string, string>; value: number };

/** Renders one metric family. */
export function promFamily(name: string, type: 'counter' | 'gauge', help: string, samples: Sample[]): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const s of samples) {
    const labels = s.labels && Object.keys(s.labels).length > 0
      ? `{${Object.entries(s.labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}`
      : '';
    lines.push(`${name}${labels} ${Number.isFinite(s.value) ? s.value : 0}`);
  }
  return lines.join('\n');
}
