// The daemons' logs as an operator reads them. `cairn up --masters 3` at info: every
// stderr line is one JSON object with no key twice, a healthy start logs no error and no
// warning but those listed below with their reason, and each task's end is logged once
// (a failure at warn). `--log-format text` gives lines for people; on a terminal the
// daemons print a banner on stderr and keep stdout for the master URL.

import { afterAll, describe, expect, it } from 'vitest';
import { runMaster } from '../../bin/commands/daemons/start.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import { TEST_USER, testCredentialsFile } from '../harness/credentials.ts';
import { strictLogLines, type LogRecord } from '../harness/json-lines.ts';
import { levelRank } from '../../shared/log-text.ts';
import { Cleanup, freePort, freePortRun, getJson, runCairn, startCairn, waitFor } from '../harness/processes.ts';

const cleanup = new Cleanup();
afterAll(async () => {
  await cleanup.run();
});

/** Warnings a healthy start may log, each with why it is not a fault of the cluster. */
const EXPECTED_WARNINGS: { component: string; msg: RegExp; reason: string }[] = [
  // What the host lacks, said once at start so that the operator knows what tasks cannot have.
  { component: 'agent', msg: /^no GPUs discovered/, reason: 'a host without GPUs (or nvidia-smi)' },
  { component: 'agent', msg: /^cgroup isolation is unavailable|^tasks' process counts are not limited/, reason: 'a host whose cgroups cannot be written (a container)' },
  { component: 'agent', msg: /^container tasks are unavailable/, reason: 'a host without a Docker daemon' },
  { component: 'agent', msg: /^the agent is not root/, reason: 'tests run as a user' },
  // The test's own task that exits 3: a task failure is a warning by design.
  { component: 'agent', msg: /^task failed$/, reason: "the test's failing task" },
];

/**
 * After Ctrl-C the agent stops first and leaves gossip; the leader, still up, logs that as an
 * orderly stop (info), not as an unreachable agent. Nothing is expected at warn while stopping.
 */
const EXPECTED_WHILE_STOPPING: RegExp[] = [];

function unexpectedWarnings(records: LogRecord[]): LogRecord[] {
  const stopAt = records.findIndex((r) => r.msg === 'stopping');
  return records.filter((r, i) => {
    if (r.level !== 'warn') return false;
    if (EXPECTED_WARNINGS.some((w) => w.component === r.component && w.msg.test(r.msg))) return false;
    return !(stopAt >= 0 && i > stopAt && EXPECTED_WHILE_STOPPING.some((m) => m.test(r.msg)));
  });
}

describe('daemon logs', () => {
  it('cairn up --masters 3 at info: JSON lines with no key twice, no error, task ends logged once', async () => {
    const port = await freePortRun(3);
    const urls = [0, 1, 2].map((i) => `http://127.0.0.1:${port + i}`);
    const up = cleanup.track(startCairn(['up', '--masters', '3', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--data-dir', cleanup.dir('cairn-logs-up3-'), '--resources', 'cpus:2;mem:2048;ports:[31000-31100]'], urls[0]!, { CAIRN_LOG_LEVEL: 'info' }));
    let stderr = '';
    let stdout = '';
    up.child.stderr!.on('data', (d) => (stderr += d));
    up.child.stdout!.on('data', (d) => (stdout += d));
    await up.waitHealthy(60_000);
    const leader = await waitFor('a leader with the agent', async () => {
      for (const u of urls) {
        const st = await getJson(`${u}/api/v1/state`).catch(() => undefined);
        if (st?.master.role === 'leader' && st.agents[0]?.connected) return u;
      }
      return undefined;
    }, 60_000);

    const ok = await runCairn(['run', '--master', leader, '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'echo fine'], {}, 60_000);
    expect(ok.stdout).toBe('fine\n');
    expect(ok.code).toBe(0);
    const bad = await runCairn(['run', '--master', leader, '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'exit 3'], {}, 60_000);
    expect(bad.code).not.toBe(0);
    await waitFor('both task ends in the log', () => (/"msg":"task ended"/.test(stderr) && /"msg":"task failed"/.test(stderr)) || undefined, 30_000);

    expect(await up.kill('SIGINT')).toBe(0);
    // Not a terminal: no banner, and stdout is the master URL alone.
    expect(stdout).toBe(`${urls[0]}\n`);

    const records = strictLogLines(stderr);
    expect(records.length).toBeGreaterThan(20);
    const errors = records.filter((r) => levelRank(r.level) >= levelRank('error'));
    expect(errors, JSON.stringify(errors)).toEqual([]);
    const warnings = unexpectedWarnings(records);
    expect(warnings, JSON.stringify(warnings)).toEqual([]);

    // Each part names itself once, as a path under its daemon.
    const components = new Set(records.map((r) => r.component).filter((c) => c !== undefined));
    for (const c of ['master-1', 'master-1/dns', 'agent', 'agent/master-link']) expect(components).toContain(c);
    expect([...components].some((c) => /^master-\d\/audit$/.test(c!))).toBe(true);

    // One line per end, from the agent, not one per re-sent update.
    const ended = records.filter((r) => r.msg === 'task ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ component: 'agent', level: 'info', state: 'TASK_FINISHED', exitCode: 0 });
    const failed = records.filter((r) => r.msg === 'task failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ component: 'agent', level: 'warn', state: 'TASK_FAILED', exitCode: 3, reason: 'REASON_COMMAND_EXECUTOR_FAILED' });
    expect(String(failed[0]!.taskId)).not.toBe(String(ended[0]!.taskId));
  }, 240_000);

  it('--log-format text: time level component: message key=value', async () => {
    const port = await freePort();
    const master = cleanup.track(startCairn(['master', '--port', String(port), '--dns-port', '0', '--data-dir', cleanup.dir('cairn-logs-text-'), '--log-format', 'text', '--log-level', 'debug'], `http://127.0.0.1:${port}`, { CAIRN_LOG_LEVEL: 'error', CAIRN_LOG_FORMAT: 'json' }));
    await master.waitHealthy();
    await waitFor('the started line', () => master.output.includes('master started') || undefined);
    expect(await master.kill('SIGINT')).toBe(0);
    const lines = master.output.split('\n').filter((l) => l !== '' && l !== `http://127.0.0.1:${port}`);
    for (const l of lines) expect(l).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) /);
    expect(master.output).toMatch(new RegExp(`INFO  master started url=http://127\\.0\\.0\\.1:${port} `));
    expect(master.output).toMatch(/INFO  dns: dns server started port=\d+/);
    // Not a terminal: no colour.
    expect(master.output).not.toContain('\x1b[');
  }, 60_000);

  it('a bad CAIRN_LOG_LEVEL is refused, naming the variable', async () => {
    const r = await runCairn(['master', '--port', '0', '--data-dir', cleanup.dir('cairn-logs-bad-')], { CAIRN_LOG_LEVEL: 'verbose' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cairn master: CAIRN_LOG_LEVEL: 'verbose' is not one of trace, debug, info, warn, error, fatal, silent");
  });

  it('on a terminal: the banner on stderr, the URL alone on stdout, no secret', async () => {
    let out = '';
    let err = '';
    let interrupt: ((signal: string) => void) | undefined;
    const io: CliIo = {
      stdout: { write: (s: string) => (out += s), isTTY: true },
      stderr: { write: (s: string) => (err += s), isTTY: true },
      env: {},
      onInterrupt: (listener) => {
        interrupt = listener;
        return () => (interrupt = undefined);
      },
    };
    const dataDir = cleanup.dir('cairn-logs-banner-');
    const credentials = testCredentialsFile();
    const done = runMaster({ port: 0, host: '127.0.0.1', dataDir, dnsPort: 0, credentials, log: { level: 'silent' } }, io);
    await waitFor('the banner', () => err.includes('Ctrl-C') || undefined, 30_000);
    const url = out.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(err).toContain(`cairn master `);
    expect(err).toMatch(new RegExp(`master +${url.replace(/[.:/]/g, '\\$&')}\\n`));
    expect(err).toMatch(/DNS +127\.0\.0\.1:\d+, zone cairn/);
    expect(err).toContain(`data dir     ${dataDir}`);
    expect(err).toContain(`credentials  ${credentials}`);
    expect(err).toContain('logs         text at silent');
    expect(err).not.toContain(TEST_USER.secret);
    interrupt!('SIGINT');
    expect(await done).toBe(0);
  }, 60_000);
});
