// Process and Node.js metrics for the master's and the agent's `/metrics`, under the names
// Prometheus' client libraries use (process_*, nodejs_*), so that the usual dashboards read
// them. Written here rather than taken from prom-client: a dozen lines of figures Node
// already gives, no registry held in the module's globals (tests run several daemons in one
// process), and one renderer for all of Cairn's families.

import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { promFamily } from './prometheus.ts';
import { CAIRN_VERSION } from './version.ts';

let delay: IntervalHistogram | undefined;

/** The event loop's delay, sampled every 10 ms from the first call on (the monitor holds no handle open). */
function loopDelay(): IntervalHistogram {
  if (!delay) {
    delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
  }
  return delay;
}

/** How late a callback queued now runs: the event loop's lag at this moment. */
function measureLag(): Promise<number> {
  const start = process.hrtime.bigint();
  return new Promise((resolve) => setImmediate(() => resolve(Number(process.hrtime.bigint() - start) / 1e9)));
}

function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return undefined; // not Linux
  }
}

/** The process_* and nodejs_* families, as Prometheus text. */
export async function processMetricsText(): Promise<string> {
  const d = loopDelay();
  const lag = await measureLag();
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  const fds = openFds();
  const startS = Math.round(Date.now() / 1000 - process.uptime());
  // The monitor's figures are in nanoseconds, over the time since the previous scrape.
  const p99 = d.count > 0 ? d.percentile(99) / 1e9 : 0;
  const max = d.count > 0 ? d.max / 1e9 : 0;
  d.reset();
  return [
    promFamily('process_cpu_seconds_total', 'counter', 'User and system CPU time spent, in seconds.', [{ value: (cpu.user + cpu.system) / 1e6 }]),
    promFamily('process_cpu_user_seconds_total', 'counter', 'User CPU time spent, in seconds.', [{ value: cpu.user / 1e6 }]),
    promFamily('process_cpu_system_seconds_total', 'counter', 'System CPU time spent, in seconds.', [{ value: cpu.system / 1e6 }]),
    promFamily('process_resident_memory_bytes', 'gauge', 'Resident memory size, in bytes.', [{ value: mem.rss }]),
    promFamily('process_start_time_seconds', 'gauge', 'Start time of the process since the Unix epoch, in seconds.', [{ value: startS }]),
    ...(fds !== undefined ? [promFamily('process_open_fds', 'gauge', 'Open file descriptors.', [{ value: fds }])] : []),
    promFamily('nodejs_eventloop_lag_seconds', 'gauge', 'How late a callback queued at scrape time ran, in seconds.', [{ value: lag }]),
    promFamily('nodejs_eventloop_lag_p99_seconds', 'gauge', "The 99th percentile of the event loop's delay since the previous scrape, in seconds.", [{ value: p99 }]),
    promFamily('nodejs_eventloop_lag_max_seconds', 'gauge', "The longest event loop delay since the previous scrape, in seconds.", [{ value: max }]),
    promFamily('nodejs_heap_size_total_bytes', 'gauge', 'Size of the V8 heap, in bytes.', [{ value: mem.heapTotal }]),
    promFamily('nodejs_heap_size_used_bytes', 'gauge', 'Used size of the V8 heap, in bytes.', [{ value: mem.heapUsed }]),
    promFamily('nodejs_external_memory_bytes', 'gauge', 'Memory of C++ objects bound to JavaScript objects, in bytes.', [{ value: mem.external }]),
  ].join('\n');
}

/** The commit a compiled build recorded beside itself (dist/build-info.json); none when running from sources. */
function builtCommit(): string | undefined {
  try {
    const info = JSON.parse(readFileSync(new URL('../build-info.json', import.meta.url), 'utf8')) as { commit?: unknown };
    return typeof info.commit === 'string' && info.commit !== '' ? info.commit : undefined;
  } catch {
    return undefined;
  }
}

const BUILT_COMMIT = builtCommit();

/** `cairn_build_info{version,commit?,node_version} 1`. */
export function buildInfoText(commit = BUILT_COMMIT): string {
  return promFamily('cairn_build_info', 'gauge', 'The Cairn build this process runs: version, commit (where known) and Node.js version.', [
    { labels: { version: CAIRN_VERSION, ...(commit ? { commit } : {}), node_version: process.version }, value: 1 },
  ]);
}
