// The command line's kubectl habits, without a cluster: -o json|yaml|wide, the filters and
// order of `cairn tasks`, exit codes as the shell sees them, `cairn task ID`'s description,
// the hints in errors, examples in every --help, and the completion script run by bash.

import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram, runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';
import { agentsTable, agentStatus, tasksTable } from '../../bin/commands/tasks/inspect.ts';
import { mastersTable } from '../../bin/commands/daemons/masters.ts';
import { formatObjects } from '../../bin/commands/common/output.ts';
import { describeTask, endReason, exitCell, selectTasks, shellExitCode } from '../../bin/commands/tasks/task-format.ts';
import { agentUrlHint, didYouMean, editDistance, isAgentHealth, isUnreachable, memHint, similarIds, unreachableHint } from '../../bin/commands/common/hints.ts';
import { bashScript, commandShapes, zshScript } from '../../bin/commands/cli/completion.ts';
import { parseStates } from '../../bin/commands/common/list-flags.ts';
import type { StateView, TaskView } from '../../shared/master-state.ts';
import { Cleanup } from '../harness/processes.ts';

const cleanup = new Cleanup();
afterAll(() => cleanup.run());

function capture(): { io: CliIo; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: { stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) }, env: {}, onInterrupt: () => () => undefined },
    out: () => out,
    err: () => err,
  };
}

async function parse(argv: string[]) {
  const c = capture();
  const calls: { command: string; options: any }[] = [];
  const record = (command: string) => async (options: unknown) => {
    calls.push({ command, options });
    return 0;
  };
  const handlers: Partial<CommandHandlers> = {
    agents: record('agents'), tasks: record('tasks'), task: record('task'), members: record('members'), masters: record('masters'), run: record('run'), kill: record('kill'), logs: record('logs'),
  };
  const code = await runCli(argv, c.io, handlers);
  return { code, options: calls[0]?.options, command: calls[0]?.command, out: c.out(), err: c.err() };
}

const task = (id: string, launchedAtMs: number, extra: Partial<TaskView> = {}): TaskView => ({
  id, name: id, frameworkId: 'f1', agentId: 'a1', state: 'TASK_RUNNING', resources: 'cpus:1;mem:32', message: '', launchedAtMs, updatedAtMs: launchedAtMs, ...extra,
});

const state: StateView = {
  version: '0.1.0',
  startedAtMs: 0,
  leader: { id: 1, url: 'http://127.0.0.1:5050' },
  master: { id: 1, role: 'leader', term: 1, commitIndex: 0, appliedIndex: 0 },
  members: [],
  agents: [
    { id: 'a1', hostname: 'h1', ip: '10.0.0.1', url: 'http://10.0.0.1:5051', reachable: true, connected: true, registeredAtMs: 0, resources: 'cpus:4;mem:1024', used: 'cpus:1', offered: '', attributes: {}, isolation: 'cgroups v2', draining: { sinceMs: 0, deadlineAtMs: null }, usage: null },
    { id: 'a2', hostname: 'h2', ip: '10.0.0.2', url: 'http://10.0.0.2:5051', reachable: false, connected: false, registeredAtMs: 0, resources: 'cpus:4;mem:1024', used: '', offered: '', attributes: {}, isolation: '', draining: null, usage: null },
  ],
  frameworks: [
    { id: 'f1', name: 'train', role: '*', user: 'u', connected: true, failoverTimeoutS: 60, registeredAtMs: 0 },
    { id: 'f2', name: 'serve', role: '*', user: 'u', connected: true, failoverTimeoutS: 60, registeredAtMs: 0 },
  ],
  tasks: [
    task('old', 1000, { state: 'TASK_FINISHED', exitCode: 0 }),
    task('killed', 3000, { state: 'TASK_KILLED', exitCode: -15, message: 'killed on request (killed by signal SIGTERM)' }),
    task('oom', 2000, { state: 'TASK_FAILED', exitCode: -9, reason: 'REASON_CONTAINER_LIMITATION_MEMORY', agentId: 'a2' }),
    task('web', 4000, { frameworkId: 'f2', agentId: 'a2' }),
  ],
  offers: [],
};

describe('exit codes and why a task ended', () => {
  it('shows a signal as the shell does: 128+N', () => {
    expect(shellExitCode(-15)).toBe(143);
    expect(shellExitCode(-9)).toBe(137);
    expect(shellExitCode(3)).toBe(3);
    expect(shellExitCode(137)).toBe(137); // a container's code is already the shell's
  });

  it('names the reason: OOM, killed, preempted, the signal of a failure', () => {
    expect(exitCell({ state: 'TASK_KILLED', exitCode: -15, message: '' })).toBe('143 (killed)');
    expect(exitCell({ state: 'TASK_FAILED', exitCode: -9, reason: 'REASON_CONTAINER_LIMITATION_MEMORY', message: '' })).toBe('137 (OOM)');
    expect(exitCell({ state: 'TASK_KILLED', exitCode: -9, message: 'killed: the agent was drained and its deadline passed' })).toBe('137 (preempted)');
    expect(exitCell({ state: 'TASK_FAILED', exitCode: -11, message: '' })).toBe('139 (SIGSEGV)');
    expect(exitCell({ state: 'TASK_FAILED', exitCode: 3, message: '' })).toBe('3');
    expect(exitCell({ state: 'TASK_KILLED', message: '' })).toBe('- (killed)');
    expect(exitCell({ state: 'TASK_RUNNING', message: '' })).toBe('-');
    expect(endReason({ state: 'TASK_FINISHED', exitCode: 0, message: '' })).toBeUndefined();
  });
});

describe('cairn tasks: filters, order, limit', () => {
  it('lists newest first', () => {
    expect(selectTasks(state, { limit: 0 }).tasks.map((t) => t.id)).toEqual(['web', 'killed', 'oom', 'old']);
  });

  it('filters by state, framework (id or name) and agent (id or hostname)', () => {
    expect(selectTasks(state, { limit: 0, states: ['TASK_FAILED', 'TASK_KILLED'] }).tasks.map((t) => t.id)).toEqual(['killed', 'oom']);
    expect(selectTasks(state, { limit: 0, framework: 'serve' }).tasks.map((t) => t.id)).toEqual(['web']);
    expect(selectTasks(state, { limit: 0, framework: 'f1' }).tasks.map((t) => t.id)).toEqual(['killed', 'oom', 'old']);
    expect(selectTasks(state, { limit: 0, agent: 'h2' }).tasks.map((t) => t.id)).toEqual(['web', 'oom']);
    expect(selectTasks(state, { limit: 0, agent: 'a1', states: ['TASK_FINISHED'] }).tasks.map((t) => t.id)).toEqual(['old']);
    expect(selectTasks(state, { limit: 0, agent: 'nowhere' }).tasks).toEqual([]);
  });

  it('cuts at the limit and counts the rest', () => {
    expect(selectTasks(state, { limit: 3 })).toMatchObject({ more: 1 });
    expect(selectTasks(state, { limit: 3 }).tasks.map((t) => t.id)).toEqual(['web', 'killed', 'oom']);
    expect(selectTasks(state, { limit: 4 }).more).toBe(0);
  });

  it('reads states with or without TASK_, in any case, and refuses unknown ones', () => {
    expect(parseStates('running,TASK_failed, Killed')).toEqual(['TASK_RUNNING', 'TASK_FAILED', 'TASK_KILLED']);
    expect(parseStates('running,sleeping')).toEqual({ unknown: 'sleeping' });
  });

  it('parses the flags: defaults, filters, -o; refuses a bad state or format naming the flag', async () => {
    expect((await parse(['tasks'])).options).toEqual({ masterUrl: 'http://127.0.0.1:5050', limit: 50 });
    const r = await parse(['tasks', '--state', 'running,failed', '--framework', 'train', '--agent', 'h1', '--limit', '0', '-o', 'yaml']);
    expect(r.options).toEqual({ masterUrl: 'http://127.0.0.1:5050', limit: 0, output: 'yaml', states: ['TASK_RUNNING', 'TASK_FAILED'], framework: 'train', agent: 'h1' });
    const bad = await parse(['tasks', '--state', 'sleeping']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--state');
    expect(bad.err).toContain("'sleeping' is not a task state");
    const fmt = await parse(['agents', '-o', 'xml']);
    expect(fmt.code).toBe(2);
    expect(fmt.err).toMatch(/--output.*json, yaml, wide/s);
  });

  it('-o on every list, and json|yaml on task', async () => {
    for (const cmd of ['agents', 'members', 'masters']) {
      for (const o of ['json', 'yaml', 'wide']) expect((await parse([cmd, '-o', o])).options.output).toBe(o);
    }
    expect((await parse(['masters', 'list', '--output', 'json'])).options).toMatchObject({ action: 'list', output: 'json' });
    expect((await parse(['task', 'x-1', '-o', 'json'])).options).toEqual({ masterUrl: 'http://127.0.0.1:5050', taskId: 'x-1', output: 'json' });
    expect((await parse(['task', 'x-1', '-o', 'wide'])).code).toBe(2);
  });
});

describe('tables and objects', () => {
  it('agents: reachable, draining, unreachable; wide adds columns', () => {
    expect(agentStatus({ reachable: true, draining: null })).toBe('reachable');
    expect(agentStatus({ reachable: true, draining: { sinceMs: 0, deadlineAtMs: null } })).toBe('draining');
    expect(agentStatus({ reachable: false, draining: null })).toBe('unreachable');
    const table = agentsTable(state, 60_000);
    expect(table.split('\n')[1]).toMatch(/^a1\s+h1\s+draining\s/);
    expect(table.split('\n')[2]).toMatch(/^a2\s+h2\s+unreachable\s/);
    const wide = agentsTable(state, 60_000, true);
    expect(wide.split('\n')[0]).toMatch(/AGE\s+URL\s+CONNECTED\s+OFFERED\s+USAGE\s+DRAIN DEADLINE\s+ISOLATION$/);
    expect(wide.split('\n')[1]).toContain('http://10.0.0.1:5051');
    expect(wide.split('\n')[1]).toMatch(/none\s+cgroups v2$/);
  });

  it('tasks: the EXIT column as the shell sees it; wide adds the reason and message', () => {
    const { tasks } = selectTasks(state, { limit: 0 });
    const lines = tasksTable(state, 10_000, false, tasks).split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+EXIT\s+AGENT\s+FRAMEWORK\s+RESOURCES\s+AGE$/);
    expect(lines[2]).toMatch(/^killed\s+KILLED\s+143 \(killed\)\s+h1\s+train\s/);
    expect(lines[3]).toMatch(/^oom\s+FAILED\s+137 \(OOM\)\s+h2\s+train\s/);
    const wide = tasksTable(state, 10_000, true, tasks).split('\n');
    expect(wide[0]).toMatch(/MESSAGE$/);
    expect(wide[3]).toContain('REASON_CONTAINER_LIMITATION_MEMORY');
  });

  it('masters: wide adds the leader view', () => {
    const view = { self: 1, leader: 1, term: 2, commit: 9, change: null, masters: [{ id: 1, url: 'http://m1:5050', voter: true, leader: true, self: true, reachable: true, role: 'leader', term: 2, applied: 9, match: 9, active: true }] };
    expect(mastersTable(view, true).split('\n')[0]).toMatch(/APPLIED\s+MATCH\s+ACTIVE\s+ANSWERED$/);
    expect(mastersTable(view, true).split('\n')[1]).toMatch(/9\s+yes\s+yes$/);
  });

  it('json is the objects as given; yaml reads back to the same, strings that look like numbers quoted', () => {
    const objects = [{ id: '007', n: 1, yes: 'no', nested: { list: [1, 'true'] }, none: null }];
    expect(JSON.parse(formatObjects('json', objects))).toEqual(objects);
    const yaml = formatObjects('yaml', objects);
    expect(parseYaml(yaml)).toEqual(objects);
    expect(yaml).toContain('"007"');
    expect(parseYaml(formatObjects('yaml', state))).toEqual(JSON.parse(JSON.stringify(state)));
  });
});

describe('cairn task ID: the description', () => {
  const t: TaskView = {
    ...task('train-0-abc', Date.UTC(2025, 0, 1, 12, 0, 0), { state: 'TASK_FAILED', exitCode: -9, reason: 'REASON_CONTAINER_LIMITATION_MEMORY', message: 'memory limit of 32 MiB reached' }),
    history: [
      { state: 'TASK_STAGING', reason: '', message: '', source: 'SOURCE_MASTER', atMs: Date.UTC(2025, 0, 1, 12, 0, 0) },
      { state: 'TASK_RUNNING', reason: '', message: '', source: 'SOURCE_AGENT', atMs: Date.UTC(2025, 0, 1, 12, 0, 1) },
      { state: 'TASK_FAILED', reason: 'REASON_CONTAINER_LIMITATION_MEMORY', message: 'memory limit of 32 MiB reached', source: 'SOURCE_AGENT', atMs: Date.UTC(2025, 0, 1, 12, 5, 0) },
    ],
  };

  it('says what, where, how it ended, and each state change with its reason', () => {
    const text = describeTask({ task: t, agent: { id: 'a1', hostname: 'h1', url: 'http://10.0.0.1:5051' }, framework: { id: 'f1', name: 'train' }, usage: { none: 'none (the task is not running)' } });
    expect(text).toMatch(/^ID:\s+train-0-abc\n/);
    expect(text).toMatch(/Exit code:\s+137 \(OOM\)/);
    expect(text).toMatch(/Agent:\s+h1 \(a1, http:\/\/10\.0\.0\.1:5051\)/);
    expect(text).toMatch(/Framework:\s+train \(f1\)/);
    expect(text).toMatch(/Resources:\s+cpus:1;mem:32/);
    expect(text).toMatch(/Usage:\s+none \(the task is not running\)/);
    expect(text).toMatch(/History:\n\s+TIME\s+STATE\s+REASON\s+SOURCE\s+MESSAGE\n/);
    expect(text).toMatch(/2025-01-01 12:00:00Z\s+STAGING\s+-\s+master\s+-/);
    expect(text).toMatch(/2025-01-01 12:05:00Z\s+FAILED\s+REASON_CONTAINER_LIMITATION_MEMORY\s+agent\s+memory limit of 32 MiB reached/);
  });

  it("shows usage and the sandbox when the agent reports them", () => {
    const text = describeTask({ task: { ...t, state: 'TASK_RUNNING' }, usage: { usage: { cpusUsed: 0.5, cpusLimit: 1, memoryBytes: 10 * 1024 * 1024, memoryLimitBytes: 32 * 1024 * 1024, gpus: [], sandbox: '/var/lib/cairn/agent/sandboxes/x' } } });
    expect(text).toMatch(/Sandbox:\s+\/var\/lib\/cairn\/agent\/sandboxes\/x/);
    expect(text).toMatch(/CPUs used:\s+0\.50 of 1/);
    expect(text).toMatch(/Memory used:\s+10 of 32 MiB/);
    expect(text).toMatch(/Agent:\s+a1 \(gone\)/);
  });
});

describe('hints', () => {
  it('mem is in MiB: a unit or bytes is refused with the MiB meant', async () => {
    expect(memHint('2G')).toBe('mem is in MiB: 2048?');
    expect(memHint('2GiB')).toBe('mem is in MiB: 2048?');
    expect(memHint('512m')).toBe('mem is in MiB: 512?');
    expect(memHint('1.5g')).toBe('mem is in MiB: 1536?');
    expect(memHint('2147483648')).toContain('2048?');
    expect(memHint('4096')).toBeUndefined();
    expect(memHint('0.5')).toBeUndefined();
    const r = await parse(['run', '--mem', '2G', '--', 'true']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--mem');
    expect(r.err).toContain('mem is in MiB: 2048?');
    expect((await parse(['run', '--mem', '2048', '--', 'true'])).options.mem).toBe(2048);
  });

  it('no master: says how to start one or where to point', () => {
    expect(isUnreachable('reading the cluster state: cannot reach the master at http://127.0.0.1:5050: ECONNREFUSED')).toBe(true);
    expect(isUnreachable('cannot reach any master (a: x; b: y)')).toBe(true);
    expect(isUnreachable("no task 'x'")).toBe(false);
    expect(unreachableHint('http://127.0.0.1:5050')).toBe('is a master running at http://127.0.0.1:5050? start one with `cairn up` or set CAIRN_MASTER (or --master) to where one runs');
  });

  it("that URL is an agent's: told by its /health", () => {
    expect(isAgentHealth({ status: 'ok', agentId: 'a1' })).toBe(true);
    expect(isAgentHealth({ status: 'ok', agentId: null })).toBe(true);
    expect(isAgentHealth({ status: 'ok', role: 'leader' })).toBe(false);
    expect(isAgentHealth('ok')).toBe(false);
    expect(agentUrlHint('http://h:5051', 'a1')).toContain("http://h:5051 is an agent's URL (agent a1), not a master's");
  });

  it('did you mean: ids the given one begins, else close ones', () => {
    const ids = ['train-0-k3x9', 'train-1-p2m4', 'serve-0-aaaa'];
    expect(didYouMean('train-0', ids)).toBe('did you mean train-0-k3x9?');
    expect(didYouMean('train', ids)).toBe('did you mean train-0-k3x9 or train-1-p2m4?');
    expect(didYouMean('train-0-k3x8', ids)).toBe('did you mean train-0-k3x9?');
    expect(didYouMean('zzz', ids)).toBeUndefined();
    expect(similarIds('serve-0-aaab', ids)).toEqual(['serve-0-aaaa']);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('kitten', 'sitting', 1)).toBe(2);
  });
});

describe('help and completion', () => {
  it('every command has examples in its --help', () => {
    const { program } = buildProgram(capture().io);
    const missing: string[] = [];
    const visit = (cmd: typeof program, path: string) => {
      let help = '';
      cmd.configureOutput({ writeOut: (s) => void (help += s), writeErr: () => undefined });
      cmd.outputHelp();
      if (!help.includes('Examples:')) missing.push(path || '(cairn)');
      for (const c of cmd.commands) visit(c, `${path} ${c.name()}`.trim());
    };
    visit(program, '');
    expect(missing).toEqual([]);
  });

  it('the completion script follows the program: every command and its flags', () => {
    const { program } = buildProgram(capture().io);
    const shapes = commandShapes(program);
    const root = shapes.find((s) => s.path === '')!;
    expect(root.subcommands).toEqual(expect.arrayContaining(['agents', 'tasks', 'task', 'completion', 'run', 'agent', 'masters']));
    const tasks = shapes.find((s) => s.path === 'tasks')!;
    expect(tasks.flags).toEqual(expect.arrayContaining(['--state', '--framework', '--agent', '--limit', '-o', '--output', '--master', '--help']));
    expect(tasks.valued.find((v) => v.flag === '-o')!.choices).toEqual(['json', 'yaml', 'wide']);
    expect(shapes.find((s) => s.path === 'agent')!.subcommands).toEqual(['drain', 'undrain']);
    expect(zshScript(program)).toContain('bashcompinit');
  });

  const bash = spawnSync('bash', ['--version']).status === 0;
  it.skipIf(!bash && !process.env.CI)('bash completes commands, subcommands, flags and -o values with the generated script', async () => {
    const c = capture();
    expect(await runCli(['completion', 'bash'], c.io)).toBe(0);
    const dir = cleanup.dir('cairn-completion-');
    const script = join(dir, 'cairn.bash');
    writeFileSync(script, c.out());
    // Completes the last word of a command line as bash would on Tab.
    const complete = (line: string): string[] => {
      const words = line.split(' ');
      const driver = `source ${JSON.stringify(script)}
complete -p cairn
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; COMP_LINE='${line}'; COMP_POINT=${line.length}
_cairn
printf '%s\\n' "\${COMPREPLY[@]}"`;
      const out = execFileSync('bash', ['--norc', '--noprofile', '-c', driver], { encoding: 'utf8' }).split('\n').filter((l) => l !== '');
      expect(out[0]).toBe('complete -F _cairn cairn');
      return out.slice(1).sort();
    };
    expect(complete('cairn ta')).toEqual(['task', 'tasks']);
    expect(complete('cairn tasks --st')).toEqual(['--state']);
    expect(complete('cairn tasks -o ')).toEqual(['json', 'wide', 'yaml']);
    expect(complete('cairn agents --master http://x:5050 -o y')).toEqual(['yaml']);
    expect(complete('cairn agent dr')).toEqual(['drain']);
    expect(complete('cairn agent drain --dead')).toEqual(['--deadline']);
  });

  it('cairn completion needs bash, zsh or fish', async () => {
    const c = capture();
    expect(await runCli(['completion', 'tcsh'], c.io)).toBe(2);
    expect(c.err()).toContain('bash, zsh, fish');
    const z = capture();
    expect(await runCli(['completion', 'zsh'], z.io)).toBe(0);
    expect(z.out()).toMatch(/^#compdef cairn/);
    expect(bashScript(buildProgram(capture().io).program)).toContain('complete -F _cairn cairn');
  });
});
