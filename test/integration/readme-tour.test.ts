// Every command of the README's tour, services, jobs and tuning sections runs as written, in a
// real terminal (tmux), against the `cairn up` the sections themselves start. The ```sh blocks
// are read from README.md (test/harness/readme-blocks.ts) and each step is typed into a shell
// (bash) in one window; each step's exit code and the key facts of its output are checked
// against readme-tour-steps.ts, keyed by the command as written: a step the test does not know
// fails, so a README change comes with its expectation. A `cairn up` step runs in a window of
// its own, as the README says, stopping the one before it with Ctrl-C: it must stop in order
// (exit 0; 130 through npx, which dies of the signal itself), with no error or warning but the
// ends of the tasks it killed.
//
// What the test gives that a reader's machine has by itself: ports the OS assigns (`cairn up`
// gets --port 0 --agent-port 0 --dns-port 0, the shell CAIRN_MASTER, and the documented default
// addresses 127.0.0.1:5050 and DNS port 8053 in a command stand for them), a HOME and
// CAIRN_CONFIG_DIR of its own (so ~/.cairn and the CLI credentials are the test's), the
// resources of a 2-core host (cpus:2;mem:4096) where a `cairn up` line gives none, and values
// for the placeholders in capitals (TASK_ID: a long-running task, FRAMEWORK_ID: its framework,
// HOSTNAME: the agent's). A block marked `<!-- illustrative: REASON -->` is skipped and listed
// with its reason; every other block must run.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashComplete } from '../harness/bash-complete.ts';
import { readmeBlocks, type ReadmeBlock } from '../harness/readme-blocks.ts';
import { TmuxTerminal } from '../harness/tmux-terminal.ts';
import { Cleanup, runCairn, waitFor } from '../harness/processes.ts';
import { README_SECTIONS, stepExpectation, type StepExpectation } from './readme-tour-steps.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHELL = 'shell';
/** What `cairn up` measures on a 2-core host, given so that a bigger machine runs the same. */
const TWO_CORE_RESOURCES = 'cpus:2;mem:4096';

const blocks: ReadmeBlock[] = readmeBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'), README_SECTIONS, bashComplete);

const cleanup = new Cleanup();
let term: TmuxTerminal;
let work: string;
let configDir: string;
/** The running cluster: its window, URL and DNS port. */
let cluster: { window: string; url: string; dnsPort: string; viaNpx: boolean } | undefined;
let ups = 0;
const placeholders = new Map<string, string>();
/** The image the services section builds; removed afterwards unless it was there before. */
const LOCAL_IMAGE = 'sw2v:local';
let imageWasThere = false;
/** The host path the seed's workers mount: Docker makes it where it is missing; removed again if so. */
const WORKER_MOUNT = '/mnt/dcos';
let mountWasThere = false;

function imageExists(tag: string): boolean {
  try {
    execFileSync('docker', ['image', 'inspect', tag], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function isUp(command: string): boolean {
  return /^(npx )?cairn up\b/.test(command);
}

/** The environment of the terminal: only what a person's shell would have, and the test's own HOME. */
function terminalEnv(home: string, bin: string): Record<string, string> {
  return {
    PATH: `${bin}:${process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'}`,
    HOME: home,
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    CAIRN_CONFIG_DIR: configDir,
    // npx asks the registry whether npm is current unless told not to.
    npm_config_update_notifier: 'false',
    PS1: '$ ',
  };
}

beforeAll(() => {
  imageWasThere = imageExists(LOCAL_IMAGE);
  mountWasThere = existsSync(WORKER_MOUNT);
  work = cleanup.dir('cairn-readme-');
  const home = join(work, 'home');
  const bin = join(work, 'bin');
  configDir = join(work, 'config');
  for (const d of [home, bin, configDir]) mkdirSync(d, { recursive: true });
  // `cairn` on the PATH, as `npm install -g` would put it.
  writeFileSync(join(bin, 'cairn'), `#!/bin/sh\nexec ${process.execPath} ${join(ROOT, 'bin/cairn.js')} "$@"\n`, { mode: 0o755 });
  term = new TmuxTerminal(work, terminalEnv(home, bin), { name: SHELL, command: 'bash --norc --noprofile', cwd: ROOT });
});

afterAll(async () => {
  if (cluster) {
    const { window } = cluster;
    term.interrupt(window);
    await waitFor('cairn up to stop', () => (/::exited \d+::/.test(term.text(window)) ? true : undefined), 30_000).catch(() => undefined);
  }
  term?.close();
  await cleanup.run();
  if (!imageWasThere && imageExists(LOCAL_IMAGE)) execFileSync('docker', ['rmi', '-f', LOCAL_IMAGE], { stdio: 'ignore' });
  if (!mountWasThere) {
    try {
      rmdirSync(WORKER_MOUNT); // only when empty: never anything a person put there since
    } catch {
      // Not made, or no longer empty.
    }
  }
}, 60_000);

/** The CLI run by the test itself against the README's cluster, with the credentials cairn up saved. */
async function cairn(args: string[]): Promise<string> {
  const r = await runCairn([...args, '--master', cluster!.url], { CAIRN_CONFIG_DIR: configDir, CAIRN_TOKEN: '', CAIRN_CREDENTIALS: '', CAIRN_MASTER: cluster!.url }, 60_000);
  if (r.code !== 0) throw new Error(`cairn ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** Values for the README's placeholders in capitals, made when a step first needs them. */
async function placeholder(name: string): Promise<string> {
  const known = placeholders.get(name);
  if (known !== undefined) return known;
  if (name === 'TASK_ID' || name === 'FRAMEWORK_ID') {
    // A task that runs long enough to follow, kill and tear down.
    const id = (await cairn(['run', '--detach', '--name', 'readme-long', '--file', join(ROOT, 'examples/tour/long-job.sh'), '--', './long-job.sh', '600'])).trim();
    const task = JSON.parse(await cairn(['task', id, '-o', 'json'])) as { frameworkId: string };
    placeholders.set('TASK_ID', id);
    placeholders.set('FRAMEWORK_ID', task.frameworkId);
  } else if (name === 'HOSTNAME') {
    const agents = JSON.parse(await cairn(['agents', '-o', 'json'])) as { hostname: string }[];
    placeholders.set('HOSTNAME', agents[0].hostname);
  } else throw new Error(`no value for the placeholder ${name}`);
  return placeholders.get(name)!;
}

/** The command as the test types it: the documented default addresses as the test's, placeholders filled. */
async function asTyped(command: string): Promise<string> {
  let text = command;
  if (cluster) {
    text = text.replaceAll('http://127.0.0.1:5050', cluster.url).replace(/-p 8053\b/g, `-p ${cluster.dnsPort}`);
  }
  for (const name of ['TASK_ID', 'FRAMEWORK_ID', 'HOSTNAME']) {
    if (new RegExp(`\\b${name}\\b`).test(text)) text = text.replace(new RegExp(`\\b${name}\\b`, 'g'), await placeholder(name));
  }
  return text;
}

/** Stops the running cluster with Ctrl-C, as its banner says; it must exit 0. */
async function stopCluster(): Promise<void> {
  if (!cluster) return;
  const { window, viaNpx } = cluster;
  cluster = undefined;
  placeholders.clear();
  term.interrupt(window);
  const code = await waitFor(`${window} to stop after Ctrl-C`, () => /::exited (\d+)::/.exec(term.text(window))?.[1], 20_000).catch((err: Error) => {
    throw new Error(`${err.message}; it printed:\n${term.text(window).slice(-3000)}`);
  });
  const text = term.text(window);
  expect(viaNpx ? ['0', '130'] : ['0'], text.slice(-3000)).toContain(code);
  // An orderly stop, told as one: the agent stopped within its limit, no error, and no warning
  // but the ends of the tasks it killed.
  const afterStop = text.slice(text.lastIndexOf('stopping signal=SIGINT'));
  expect(afterStop, text.slice(-3000)).toMatch(/agent: agent stopped/);
  const warnings = afterStop.split('\n').filter((l) => / (WARN|ERROR|FATAL) /.test(l) && !/ WARN  agent: task failed .*the agent is shutting down/.test(l));
  expect(warnings).toEqual([]);
}

/** A `cairn up` step: in a window of its own, with OS-assigned ports; the shell is pointed at it. */
async function startCluster(command: string): Promise<void> {
  await stopCluster();
  const window = `up-${++ups}`;
  let line = command.replace(/\s+#.*$/, '');
  line += ' --port 0 --agent-port 0 --dns-port 0';
  if (!/--resources\b/.test(line)) line += ` --resources '${TWO_CORE_RESOURCES}'`;
  if (!/--data-dir\b/.test(line)) line += ` --data-dir ~/.cairn-${window}`;
  const script = join(work, `${window}.sh`);
  // Ctrl-C reaches the whole foreground group: the script traps it so that it lives to say
  // how the command ended (npx dies of the signal itself, 130; cairn up exits 0).
  writeFileSync(script, `trap true INT\n${line}\necho "::exited $?::"\n`);
  term.openScript(window, script, ROOT);
  const banner = await waitFor(`${window}: cairn up's banner`, () => {
    const t = term.text(window);
    if (/::exited \d+::/.test(t)) throw new Error(`cairn up ended:\n${t}`);
    return /Ctrl-C stops/.test(t) ? t : undefined;
  }, 90_000, 200);
  // stdout: the URL alone on its line; stderr (a terminal): the banner.
  const url = /^(http:\/\/127\.0\.0\.1:\d+)$/m.exec(banner)?.[1];
  expect(url, banner).toBeDefined();
  expect(banner).toMatch(new RegExp(`master\\s+${url!.replaceAll('.', '\\.')}`));
  const dnsPort = /DNS\s+127\.0\.0\.1:(\d+)/.exec(banner)?.[1];
  expect(dnsPort, banner).toBeDefined();
  cluster = { window, url: url!, dnsPort: dnsPort!, viaNpx: /^npx /.test(line) };
  const r = await term.run(SHELL, `export CAIRN_MASTER=${url}`);
  expect(r.code).toBe(0);
  // The agent is there before the README's next step asks for it.
  await waitFor('the agent registered', async () => ((JSON.parse(await cairn(['agents', '-o', 'json'])) as unknown[]).length > 0 ? true : undefined), 60_000, 500);
}

function check(command: string, exp: StepExpectation, got: { output: string; code: number }): void {
  const codes = Array.isArray(exp.code) ? exp.code : [exp.code];
  const where = `${command}\n--- output ---\n${got.output}`;
  expect(codes, `exit code ${got.code} of: ${where}`).toContain(got.code);
  for (const re of exp.output ?? []) expect(got.output, where).toMatch(re);
  for (const re of exp.absent ?? []) expect(got.output, where).not.toMatch(re);
}

describe('the README runs as written in a terminal', () => {
  it('finds the sections and their blocks', () => {
    for (const s of README_SECTIONS) expect(blocks.some((b) => b.section.startsWith(s)), s).toBe(true);
  });

  for (const block of blocks) {
    const name = `${block.section}, README line ${block.line}`;
    if (block.illustrative !== undefined) {
      it.skip(`${name} (illustrative: ${block.illustrative})`, () => undefined);
      continue;
    }
    it(name, async () => {
      for (const step of block.steps) {
        if (isUp(step.command)) {
          await startCluster(step.command);
          continue;
        }
        const exp = stepExpectation(step.command);
        if (exp === undefined) throw new Error(`README line ${block.line}: the test has no expectation for this step; add it to test/integration/readme-tour-steps.ts, or mark the block <!-- illustrative: REASON -->:\n${step.command}`);
        if (!cluster && exp.needsCluster !== false) throw new Error(`README line ${block.line}: no cairn up runs before: ${step.command}`);
        const got = await term.run(SHELL, await asTyped(step.command), { timeoutMs: exp.timeoutMs ?? 90_000, ...(exp.interruptWhen ? { interruptWhen: exp.interruptWhen } : {}) });
        check(step.command, exp, got);
      }
    }, 600_000);
  }

  it('stops the last cluster cleanly with Ctrl-C', async () => {
    await stopCluster();
  }, 60_000);
});
