// kubectl's and Nomad's habits on the command line, without a cluster: global flags anywhere,
// get/describe, -w, one list shape with "No resources found", and -f on submit and deploy.
// (test/integration/cli-habits.test.ts runs the same habits against a real `cairn up`.)

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EXIT_CREDENTIALS_REFUSED, EXIT_NOT_PERMITTED, EXIT_TIMED_OUT, exitCodeOf } from '../../bin/commands/common/exit-codes.ts';
import { buildProgram, runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import { lineCandidates } from '../../bin/commands/cli/completion.ts';
import { COMPLETE_TIMEOUT_MS } from '../../bin/commands/cli/complete-ids.ts';
import { normalizeArgv } from '../../bin/commands/common/argv.ts';
import { kindCommand, KINDS } from '../../bin/commands/cli/kinds.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import { NO_RESOURCES, printList } from '../../bin/commands/common/output.ts';
import { comparable } from '../../bin/commands/common/watch.ts';
import { lastLines, printTaskLog } from '../../bin/commands/common/log-relay.ts';
import type { LogChunk, TaskView } from '../../shared/master-state.ts';
import { tasksTable } from '../../bin/commands/tasks/inspect.ts';
import { selectTasks } from '../../bin/commands/tasks/task-format.ts';
import type { LogStream } from '../../shared/sdk/master-client.ts';
import { waitFor } from '../harness/processes.ts';

function capture(env: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const listeners = new Set<(s: string) => void>();
  const io: CliIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env,
    onInterrupt: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
  return { io, out: () => out, err: () => err, interrupt: () => [...listeners].forEach((l) => l('SIGINT')), listening: () => listeners.size };
}

/** Runs the line with recording stand-ins for the task commands; what each was handed. */
async function parse(argv: string[]) {
  const c = capture();
  const calls: { command: string; options: any; token?: string | undefined }[] = [];
  const record = (command: string) => async (options: unknown, io: CliIo) => {
    calls.push({ command, options, token: io.env.CAIRN_TOKEN });
    return 0;
  };
  const handlers: Partial<CommandHandlers> = { agents: record('agents'), tasks: record('tasks'), task: record('task'), run: record('run'), logs: record('logs'), kill: record('kill') };
  const code = await runCli(argv, c.io, handlers);
  return { code, calls, out: c.out(), err: c.err() };
}

describe('global flags anywhere on the line', () => {
  it('--token after the command reaches it, as before it', async () => {
    const after = await parse(['agents', '--token', 's3cret', '--master', 'http://m:5050']);
    expect(after.code).toBe(0);
    expect(after.calls[0]).toMatchObject({ command: 'agents', token: 's3cret', options: { masterUrl: 'http://m:5050' } });
    const eq = await parse(['tasks', '--limit', '3', '--token=other']);
    expect(eq.calls[0]).toMatchObject({ command: 'tasks', token: 'other', options: { limit: 3 } });
  });

  it('-o and --master before the command go to it', async () => {
    const r = await parse(['-o', 'json', '--master', 'http://m:5050', 'tasks']);
    expect(r.code).toBe(0);
    expect(r.calls[0]!.options).toMatchObject({ output: 'json', masterUrl: 'http://m:5050' });
  });

  it("a task's own command keeps its flags: nothing after -- moves, nor after run's command without --", () => {
    expect(normalizeArgv(['run', '--token', 't', '--', 'sh', '-c', 'x --token y']).argv).toEqual(['--token', 't', 'run', '--', 'sh', '-c', 'x --token y']);
    expect(normalizeArgv(['run', 'curl', '--token', 'y']).argv).toEqual(['run', 'curl', '--token', 'y']);
    expect(normalizeArgv(['--master', 'http://m:5050', 'run', 'echo', 'hi']).argv).toEqual(['run', '--master', 'http://m:5050', 'echo', 'hi']);
    expect(normalizeArgv(['-o', 'json', 'job', 'list']).argv).toEqual(['job', 'list', '-o', 'json']);
  });

  it('cairn run gets --token given after its flags', async () => {
    const r = await parse(['run', '--cpus', '1', '--token', 't0k', '--', 'echo', '--token']);
    expect(r.calls[0]).toMatchObject({ command: 'run', token: 't0k', options: { command: ['echo', '--token'], cpus: 1 } });
  });
});

describe('get and describe', () => {
  it('get KIND is the kind\'s list; get/describe KIND NAME its description', async () => {
    const list = await parse(['get', 'pods', '-o', 'wide']);
    expect(list.calls[0]).toMatchObject({ command: 'tasks', options: { output: 'wide' } });
    const one = await parse(['describe', 'task', 'train-0-abc']);
    expect(one.calls[0]).toMatchObject({ command: 'task', options: { taskId: 'train-0-abc' } });
    const yaml = await parse(['get', '-o', 'yaml', 'task', 'train-0-abc']);
    expect(yaml.calls[0]).toMatchObject({ command: 'task', options: { taskId: 'train-0-abc', output: 'yaml' } });
    const node = await parse(['describe', 'node', 'h1']);
    expect(node.calls[0]).toMatchObject({ command: 'agents', options: { agent: 'h1' } });
    const filtered = await parse(['get', 'tasks', '--state', 'running']);
    expect(filtered.calls[0]).toMatchObject({ command: 'tasks', options: { states: ['TASK_RUNNING'] } });
  });

  it('every kind maps onto a command the program has', async () => {
    expect(kindCommand('get', 'jobs', undefined)).toEqual(['job', 'list']);
    expect(kindCommand('describe', 'exp', 'digits')).toEqual(['tune', 'show', 'digits']);
    expect(kindCommand('describe', 'apps', '/dev/web')).toEqual(['app', 'show', '/dev/web']);
    for (const k of KINDS) {
      const help = capture();
      expect(await runCli([...k.list, '--help'], help.io), k.list.join(' ')).toBe(0);
      expect(help.out()).toContain(`Usage: cairn ${k.list.join(' ')}`);
    }
  });

  it('an unknown kind, or describe without a name, is a usage error naming the kinds', async () => {
    const bad = await parse(['get', 'widgets']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("unknown kind 'widgets'; kinds: tasks, agents, jobs");
    const noName = await parse(['describe', 'jobs']);
    expect(noName.code).toBe(2);
    expect(noName.err).toContain('describe jobs needs a name or id');
    expect(bad.calls).toEqual([]);
  });
});

describe('-w on lists', () => {
  it('prints a snapshot, again only when it changed (not when AGE ticks), and stops on Ctrl-C with 0', async () => {
    const c = capture();
    const frames = ['ID  AGE\na   5s\n', 'ID  AGE\na   6s\n', 'ID  AGE\na   7s\nb   0s\n'];
    let reads = 0;
    const tasks = async (_o: unknown, io: CliIo) => {
      io.stdout.write(frames[Math.min(reads++, frames.length - 1)]!);
      return 0;
    };
    const running = runCli(['get', 'tasks', '-w'], c.io, { tasks });
    await waitFor('the third read', async () => (reads >= 3 ? true : undefined), 10_000);
    expect(c.listening()).toBe(1);
    c.interrupt();
    expect(await running).toBe(0);
    expect(c.out()).toBe(`${frames[0]}\n${frames[2]}`);
    expect(normalizeArgv(['job', 'list', '--watch'])).toEqual({ argv: ['job', 'list'], watch: true });
    expect(normalizeArgv(['job', 'show', 'x', '-w']).watch).toBe(false);
  });

  it('a refused line ends the watch with 2, said once', async () => {
    const c = capture();
    expect(await runCli(['tasks', '-w', '--limit', 'x'], c.io, { tasks: async () => 0 })).toBe(2);
    expect(c.err().match(/--limit/g)?.length).toBe(1);
  });

  it('ages and their padding do not count as a change', () => {
    expect(comparable('a   9s\n')).toBe(comparable('a   10s\n'));
    expect(comparable('a   9s\n')).not.toBe(comparable('b   9s\n'));
  });
});

describe('lists: one shape, and "No resources found"', () => {
  it('-o json is a bare array; an empty table says so on stderr, stdout empty', () => {
    const c = capture();
    printList(c.io, 'json', [{ id: 'a' }], () => 'table');
    expect(JSON.parse(c.out())).toEqual([{ id: 'a' }]);
    const e = capture();
    printList(e.io, undefined, [], () => 'HEADER\n');
    expect([e.out(), e.err()]).toEqual(['', NO_RESOURCES]);
    const j = capture();
    printList(j.io, 'yaml', [], () => 'HEADER\n');
    expect([j.out(), j.err()]).toEqual(['[]\n', '']);
  });
});

describe('-f FILE on submit and deploy', () => {
  it('job submit and app deploy take -f; the file given twice, or -f with --kind, is a usage error', async () => {
    for (const argv of [['job', 'submit', '-f', 'a.yaml', 'b.yaml'], ['job', 'submit', '-f', 'a.yaml', '--kind', 'pytorch', '--', 'x'], ['app', 'deploy', '-f', 'a.json', 'b.json'], ['app', 'deploy']]) {
      const c = capture();
      expect(await runCli(argv, c.io), argv.join(' ')).toBe(2);
      expect(c.err()).toMatch(/-f/);
    }
    const missing = capture();
    expect(await runCli(['job', 'submit', '-f', '/nonexistent/job.yaml', '--master', 'http://127.0.0.1:9'], missing.io)).toBe(1);
    expect(missing.err()).toContain('cannot read /nonexistent/job.yaml');
    const app = capture();
    expect(await runCli(['app', 'deploy', '-f', '/nonexistent/app.json', '--master', 'http://127.0.0.1:9'], app.io)).toBe(1);
    expect(app.err()).toContain('cannot read /nonexistent/app.json');
  });
});

describe('exit codes', () => {
  it('a refused credential exits 67, a refused permission 77, for every family of commands', async () => {
    let status = 401;
    const server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status === 401 ? { code: 'CAIRN_UNAUTHENTICATED', message: 'a valid credential is required' } : { code: 'CAIRN_FORBIDDEN', message: 'not permitted' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const [code, s] of [[EXIT_CREDENTIALS_REFUSED, 401], [EXIT_NOT_PERMITTED, 403]] as const) {
        status = s;
        for (const argv of [['tasks'], ['get', 'jobs'], ['tune', 'list'], ['app', 'list'], ['secret', 'list'], ['quota', 'list']]) {
          const c = capture({ CAIRN_TOKEN: 'wrong' });
          expect(await runCli([...argv, '--master', url], c.io), `${argv.join(' ')} on ${s}: ${c.err()}`).toBe(code);
        }
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect([exitCodeOf(new Error('x')), exitCodeOf({ status: 500 })]).toEqual([1, 1]);
  });

  it('cairn help exit-codes lists every code', async () => {
    const c = capture();
    expect(await runCli(['help', 'exit-codes'], c.io)).toBe(0);
    for (const code of [0, 1, 2, EXIT_CREDENTIALS_REFUSED, EXIT_NOT_PERMITTED, EXIT_TIMED_OUT, 130]) expect(c.out()).toMatch(new RegExp(`^ {2}${code} `, 'm'));
  });
});

describe('logs --tail', () => {
  it('the last N lines, as tail -n; a line not yet ended counts', () => {
    expect(lastLines('1\n2\n3\n', 2)).toBe('2\n3\n');
    expect(lastLines('1\n2\n3', 2)).toBe('2\n3');
    expect(lastLines('1\n2\n', 5)).toBe('1\n2\n');
    expect(lastLines('1\n2\n', 0)).toBe('');
  });

  it('with -f: the last N lines of what is there, then what comes after it, each byte once', async () => {
    const backlog = 'a\nb\nc\nd\n';
    const later = 'e\nf\n';
    const reads: number[] = [];
    const client = {
      // What is there now, two bytes a read, as an agent reads in pieces.
      logs: async (_id: string, _s: LogStream, offset: number): Promise<LogChunk> => {
        reads.push(offset);
        const data = backlog.slice(offset, offset + 2);
        return { data, offset, nextOffset: offset + data.length, eof: false };
      },
      followLogs: async function* (_id: string, _s: LogStream, offset: number): AsyncIterable<LogChunk> {
        const all = backlog + later;
        yield { data: all.slice(offset), offset, nextOffset: all.length, eof: true };
      },
    };
    let out = '';
    await printTaskLog(client, 't', 'stdout', true, (s) => void (out += s), { tail: 2 });
    expect(out).toBe('c\nd\ne\nf\n');
    expect(reads).toEqual([0, 2, 4, 6, 8]);
    let once = '';
    await printTaskLog(client, 't', 'stdout', false, (s) => void (once += s), { tail: 3 });
    expect(once).toBe('b\nc\nd\n');
  });
});

describe('framework names beside ids', () => {
  const task = (id: string, frameworkId: string, frameworkName?: string): TaskView => ({
    id, name: id, frameworkId, ...(frameworkName ? { frameworkName } : {}), agentId: 'a1', state: 'TASK_FINISHED', resources: 'cpus:1', message: '', exitCode: 0, launchedAtMs: 0, updatedAtMs: 0,
  });
  const state = {
    agents: [], offers: [], members: [], version: '', startedAtMs: 0, leader: undefined, master: { id: 1, role: 'leader' as const, term: 1, commitIndex: 0, appliedIndex: 0 },
    frameworks: [{ id: 'fw-live', name: 'jobs', role: '*', user: 'u', connected: true, failoverTimeoutS: 0, registeredAtMs: 0 }],
    tasks: [task('gone-0', '5d1c-uuid-0001', 'cairn-run:train'), task('live-0', 'fw-live'), task('old-0', '9e2f-uuid-0002')],
  };
  it("the table's FRAMEWORK is the name, also of a framework gone; the id only where no name is known", () => {
    const rows = tasksTable(state, 1000).split('\n').slice(1, 4).map((l) => l.split(/\s{2,}/)[4]);
    expect(rows).toEqual(['cairn-run:train', 'jobs', '9e2f-uuid-0002']);
    const wide = tasksTable(state, 1000, true).split('\n')[1]!;
    expect(wide).toContain('5d1c-uuid-0001');
  });
  it('--framework selects by a gone framework\'s name too', () => {
    expect(selectTasks(state, { framework: 'cairn-run:train', limit: 0 }).tasks.map((t) => t.id)).toEqual(['gone-0']);
  });
});

describe('completion of ids and names', () => {
  const { program } = buildProgram(capture().io);
  const asked: [string, string | undefined][] = [];
  const ids = async (kind: string, master: string | undefined) => {
    asked.push([kind, master]);
    return kind === 'kinds' ? ['tasks', 'jobs'] : [`${kind}-one`, `${kind}-two`];
  };

  it('the line completer offers the ids of the kind an argument names, and only there', async () => {
    expect(await lineCandidates(program, ['task', ''], ids)).toEqual(['tasks-one', 'tasks-two']);
    expect(await lineCandidates(program, ['job', 'wait', '--master', 'http://m:1', 'jobs-t'], ids)).toEqual(['jobs-two']);
    expect(asked.at(-1)).toEqual(['jobs', 'http://m:1']);
    expect(await lineCandidates(program, ['describe', 'exp', ''], ids)).toEqual(['experiments-one', 'experiments-two']);
    expect(await lineCandidates(program, ['get', ''], ids)).toEqual(['tasks', 'jobs']);
    asked.length = 0;
    expect(await lineCandidates(program, ['tasks', '-o', ''], ids)).toEqual(['json', 'yaml', 'wide']);
    expect(await lineCandidates(program, ['job', 'w'], ids)).toEqual(['wait']);
    expect(await lineCandidates(program, ['task', 'x', ''], ids)).toEqual([]);
    expect(asked).toEqual([]);
  });

  it('fish asks cairn __complete --line; the answer is the line completer\'s', async () => {
    const c = capture();
    expect(await runCli(['completion', 'fish'], c.io)).toBe(0);
    expect(c.out()).toContain('cairn __complete --line -- $words "$cur"');
    const line = capture();
    expect(await runCli(['__complete', '--line', '--', 'tasks', '--st'], line.io)).toBe(0);
    expect(line.out()).toBe('--state\n');
  });

  it('with no master, __complete prints nothing, says nothing, exits 0, within its time-out', async () => {
    // A port that takes connections and never answers: the Tab must not hang on it.
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const c = capture();
      const started = Date.now();
      expect(await runCli(['__complete', 'tasks', '--master', `http://127.0.0.1:${(silent.address() as AddressInfo).port}`], c.io)).toBe(0);
      expect(Date.now() - started).toBeLessThan(COMPLETE_TIMEOUT_MS + 1000);
      expect([c.out(), c.err()]).toEqual(['', '']);
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });

  it.skipIf(spawnSync('bash', ['--version']).status !== 0)('bash completes task ids and job names from cairn __complete, with the line\'s --master', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-complete-'));
    try {
      const c = capture();
      expect(await runCli(['completion', 'bash'], c.io)).toBe(0);
      writeFileSync(join(dir, 'cairn.bash'), c.out());
      // A stand-in cairn on PATH that answers __complete as the master would.
      writeFileSync(join(dir, 'cairn'), '#!/bin/sh\n[ "$1" = __complete ] || exit 1\nshift\nif [ "$1" = --master ]; then echo "at-$2"; shift 2; fi\necho "$1-a"; echo "$1-b"\n', { mode: 0o755 });
      const complete = (line: string): string[] => {
        const words = line.split(' ');
        const driver = `source cairn.bash
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_cairn
printf '%s\\n' "\${COMPREPLY[@]}"`;
        return execFileSync('bash', ['--norc', '--noprofile', '-c', driver], { encoding: 'utf8', cwd: dir, env: { PATH: `${dir}:${process.env.PATH}` } }).split('\n').filter((l) => l !== '').sort();
      };
      expect(complete('cairn task ')).toEqual(['tasks-a', 'tasks-b']);
      expect(complete('cairn job wait --master http://m:1 ')).toEqual(['at-http://m:1', 'jobs-a', 'jobs-b']);
      // The kind as typed: __complete knows kubectl's names for it (app, exp, node).
      expect(complete('cairn describe app ')).toEqual(['app-a', 'app-b']);
      expect(complete('cairn get ')).toEqual(['kinds-a', 'kinds-b']);
      expect(complete('cairn tasks ')).toEqual([]);
      expect(complete('cairn ta')).toEqual(['task', 'tasks']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
