// The daemons' log lines: one component path per line, no key twice, text for people,
// the flags and variables that choose, and the line of a task's end.

import { describe, expect, it } from 'vitest';
import { componentLogger, daemonLogger, withoutLineKeys } from '../../shared/logger.ts';
import { formatLogLine, levelRank } from '../../shared/log-text.ts';
import { logSettings } from '../../bin/commands/daemons/log-flags.ts';
import { runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import { taskEndLine } from '../../agent/task-end-log.ts';
import { duplicateKeys, strictLogLines } from '../harness/json-lines.ts';

function captured(format: 'json' | 'text' = 'json', level: 'info' | 'debug' = 'info') {
  const lines: string[] = [];
  const log = daemonLogger({ name: 'cairn', level, format, destination: { write: (s: string) => void lines.push(s) } });
  return { log, lines };
}

describe('duplicateKeys (the test tokenizer)', () => {
  it('finds a key repeated at any depth, which JSON.parse would hide', () => {
    expect(duplicateKeys('{"a":1,"b":{"c":2,"c":3},"a":"x"}')).toEqual(['b.c', 'a']);
    expect(duplicateKeys('{"a":[{"k":1},{"k":2}],"s":"\\"a\\":1,"}')).toEqual([]);
    expect(() => duplicateKeys('{"a":')).toThrow();
  });
});

describe('component loggers', () => {
  it('a part of a part has one component key, its path', () => {
    const { log, lines } = captured();
    const master = componentLogger(log, 'master-2');
    const transport = componentLogger(componentLogger(master, 'raft'), 'transport');
    transport.info('connected');
    componentLogger(componentLogger(log, 'agent'), 'master-link').warn('lost');
    log.info('top');
    const records = strictLogLines(lines.join(''));
    expect(records.map((r) => r.component)).toEqual(['master-2/raft/transport', 'agent/master-link', undefined]);
  });

  it('a part keeps its parent\'s level, and may set its own', () => {
    const { log, lines } = captured();
    const quiet = componentLogger(log, 'agent');
    quiet.level = 'warn';
    componentLogger(quiet, 'usage').info('not written');
    componentLogger(quiet, 'audit', { level: 'info' }).info('written');
    expect(strictLogLines(lines.join('')).map((r) => r.msg)).toEqual(['written']);
  });

  it("a call's field that every line has is moved under fields, not written twice", () => {
    const { log, lines } = captured();
    componentLogger(log, 'master').info({ name: 'my-framework', hostname: 'h1', component: 'x', role: 'ml' }, 'framework subscribed');
    const [r] = strictLogLines(lines.join(''));
    expect(r).toMatchObject({ name: 'cairn', component: 'master', role: 'ml', fields: { name: 'my-framework', hostname: 'h1', component: 'x' } });
    expect(withoutLineKeys({ a: 1 })).toEqual({ a: 1 });
  });
});

describe('JSON lines', () => {
  it('name the level and give the time in ISO 8601, UTC', () => {
    const { log, lines } = captured();
    const before = Date.now();
    log.warn('careful');
    log.info('fine');
    const after = Date.now();
    const records = lines.map((l) => JSON.parse(l) as { level: unknown; time: unknown; msg: string });
    expect(records.map((r) => r.level)).toEqual(['warn', 'info']);
    for (const r of records) {
      expect(r.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const ms = Date.parse(String(r.time));
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(after);
    }
    // The raw line's key order is pino's: level, then time, then the rest.
    expect(lines[0]).toMatch(/^\{"level":"warn","time":"[^"]+","pid":/);
  });

  it('levelRank orders the names as pino numbers them, and reads numbers as they are', () => {
    expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].map(levelRank)).toEqual([10, 20, 30, 40, 50, 60]);
    expect(levelRank(40)).toBe(40);
    expect(levelRank(undefined)).toBe(30);
  });
});

describe('text lines', () => {
  it('time level component: message key=value, the err\'s stack below', () => {
    const { log, lines } = captured('text');
    const time = /^\d\d:\d\d:\d\d\.\d{3} /;
    componentLogger(log, 'agent').warn({ taskId: 't 1', exitCode: 3, ok: true, tags: ['a'], url: 'http://h:1/x' }, 'task failed');
    log.info('plain');
    log.error({ err: new Error('boom') }, 'request failed');
    expect(lines[0]).toMatch(time);
    expect(lines[0]!.replace(time, '')).toBe('WARN  agent: task failed taskId="t 1" exitCode=3 ok=true tags=["a"] url=http://h:1/x\n');
    expect(lines[1]!.replace(time, '')).toBe('INFO  plain\n');
    expect(lines[2]!.replace(time, '')).toMatch(/^ERROR request failed err=boom\n {4}Error: boom\n {4} {4}at /);
  });

  it('reads the ISO time and the level name of the JSON lines, and the numbers of older ones', () => {
    const iso = '2026-11-27T22:00:00.000Z';
    const local = new Date(Date.parse(iso));
    const hhmm = `${String(local.getHours()).padStart(2, '0')}:${String(local.getMinutes()).padStart(2, '0')}`;
    expect(formatLogLine(`{"level":"warn","time":"${iso}","msg":"m"}`, { color: false })).toBe(`${hhmm}:00.000 WARN  m\n`);
    expect(formatLogLine(`{"level":40,"time":${Date.parse(iso)},"msg":"m"}`, { color: false })).toBe(`${hhmm}:00.000 WARN  m\n`);
  });

  it('colours only the level and time, and keeps a line that is not JSON', () => {
    expect(formatLogLine('{"level":50,"time":0,"msg":"m"}\n', { color: true })).toMatch(/^\x1b\[2m.*\x1b\[0m \x1b\[31mERROR\x1b\[0m m\n$/);
    expect(formatLogLine('not json', { color: false })).toBe('not json\n');
  });
});

describe('log settings', () => {
  it('a flag wins over its variable; left out, text on a terminal and json elsewhere, at info', () => {
    expect(logSettings(undefined, {}, true)).toEqual({ format: 'text', level: 'info', color: true });
    expect(logSettings(undefined, {}, false)).toEqual({ format: 'json', level: 'info', color: false });
    expect(logSettings(undefined, { CAIRN_LOG_FORMAT: 'json', CAIRN_LOG_LEVEL: 'debug' }, true)).toEqual({ format: 'json', level: 'debug', color: false });
    expect(logSettings({ format: 'text', level: 'warn' }, { CAIRN_LOG_FORMAT: 'json', CAIRN_LOG_LEVEL: 'debug' }, false)).toEqual({ format: 'text', level: 'warn', color: false });
    expect(logSettings(undefined, { NO_COLOR: '1' }, true).color).toBe(false);
  });

  it('a bad variable is refused, naming it', () => {
    expect(() => logSettings(undefined, { CAIRN_LOG_LEVEL: 'verbose' }, false)).toThrow(/CAIRN_LOG_LEVEL: 'verbose' is not one of trace, debug, info, warn, error, fatal, silent/);
    expect(() => logSettings(undefined, { CAIRN_LOG_FORMAT: 'pretty' }, false)).toThrow(/CAIRN_LOG_FORMAT/);
  });
});

describe('--log-format and --log-level', () => {
  const io = (): CliIo & { err: () => string } => {
    let err = '';
    return { stdout: { write: () => true }, stderr: { write: (s: string) => (err += s) }, env: { CAIRN_MASTER: 'http://127.0.0.1:5050' }, onInterrupt: () => () => undefined, err: () => err };
  };
  const run = async (argv: string[]) => {
    const calls: { command: string; options: any }[] = [];
    const handler = (command: string) => async (options: unknown) => {
      calls.push({ command, options });
      return 0;
    };
    const h: Partial<CommandHandlers> = { up: handler('up'), master: handler('master'), agent: handler('agent') };
    const c = io();
    const code = await runCli(argv, c, h);
    return { code, options: calls[0]?.options, err: c.err() };
  };

  it('each daemon takes them', async () => {
    for (const d of ['up', 'master', 'agent']) {
      const r = await run([d, '--log-format', 'text', '--log-level', 'debug']);
      expect(r.code).toBe(0);
      expect(r.options.log).toEqual({ format: 'text', level: 'debug' });
    }
    // Not given: left to the variables and the terminal, and no stray option reaches the agent.
    const plain = await run(['agent']);
    expect(plain.options.log).toBeUndefined();
    expect(Object.keys(plain.options)).not.toContain('logFormat');
  });

  it('refuses a format or level it does not know, and --help names the variables', async () => {
    const r = await run(['master', '--log-format', 'pretty']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--log-format.*pretty.*text, json/);
    expect((await run(['up', '--log-level', 'loud'])).code).toBe(2);
    let out = '';
    const help = io();
    help.stdout.write = (s: string) => (out += s);
    await runCli(['agent', '--help'], help, {});
    expect(out).toContain('$CAIRN_LOG_FORMAT');
    expect(out).toContain('$CAIRN_LOG_LEVEL');
  });
});

describe("a task's end", () => {
  const end = { taskId: 't', frameworkId: 'f', message: '', hasExitCode: true, exitCode: 0, reason: '' };
  it('at info when it went as asked, with its exit code', () => {
    expect(taskEndLine({ ...end, state: 'TASK_FINISHED' })).toEqual({ level: 'info', msg: 'task ended', fields: { taskId: 't', frameworkId: 'f', state: 'TASK_FINISHED', exitCode: 0 } });
    expect(taskEndLine({ ...end, state: 'TASK_KILLED', exitCode: -15, message: 'killed on request' }).fields).toMatchObject({ signal: 'SIGTERM', message: 'killed on request' });
  });
  it('at warn when it failed, with the reason', () => {
    for (const state of ['TASK_FAILED', 'TASK_LOST', 'TASK_ERROR'] as const) expect(taskEndLine({ ...end, state, exitCode: 1, reason: 'R' }).level).toBe('warn');
    expect(taskEndLine({ ...end, state: 'TASK_LOST', hasExitCode: false, reason: 'REASON_TASK_UNKNOWN' }).fields).toEqual({ taskId: 't', frameworkId: 'f', state: 'TASK_LOST', reason: 'REASON_TASK_UNKNOWN' });
  });
});

describe('why component paths', () => {
  it("pino's plain child of a child repeats the key, which the strict reading catches", () => {
    const { log, lines } = captured();
    log.child({ component: 'agent' }).child({ component: 'master-link' }).info('x');
    expect(() => strictLogLines(lines.join(''))).toThrow(/repeated key component/);
  });
});
