// `cairn get KIND [NAME]` and `cairn describe KIND NAME`, as kubectl users type them: each
// kind maps onto the command that already lists it and the one that describes one of it, so
// there is one implementation of each and the aliases cannot drift from it. The rewrite
// itself happens before parsing (../common/argv.ts); the `get` and `describe` commands added
// here carry the help, and answer a kind there is none of.

import type { Command } from 'commander';
import type { FamilyContext } from '../common/context.ts';

interface Kind {
  /** The names a user may type: plural, singular, kubectl's short name. */
  names: readonly string[];
  /** The command that lists them. */
  list: readonly string[];
  /** The command that describes one, given its name or id; absent where there is none. */
  describe?: readonly string[];
}

export const KINDS: readonly Kind[] = [
  { names: ['tasks', 'task', 'pods', 'pod', 'po'], list: ['tasks'], describe: ['task'] },
  { names: ['agents', 'agent', 'nodes', 'node', 'no'], list: ['agents'], describe: ['agents'] },
  { names: ['jobs', 'job'], list: ['job', 'list'], describe: ['job', 'show'] },
  { names: ['apps', 'app'], list: ['app', 'list'], describe: ['app', 'show'] },
  { names: ['experiments', 'experiment', 'exp'], list: ['tune', 'list'], describe: ['tune', 'show'] },
  { names: ['deployments', 'deployment', 'deploy'], list: ['app', 'deployments'] },
  { names: ['secrets', 'secret'], list: ['secret', 'list'] },
  { names: ['quotas', 'quota'], list: ['quota', 'list'] },
  { names: ['preemptions', 'preemption'], list: ['preemptions'] },
  { names: ['roles', 'role'], list: ['roles'] },
  { names: ['members', 'member'], list: ['members'] },
  { names: ['masters', 'master'], list: ['masters', 'list'] },
];

/**
 * The command `get KIND [NAME]` or `describe KIND NAME` stands for, with NAME in its place;
 * undefined for a kind there is none of, or a form that kind lacks (the command added below
 * then says so).
 */
export function kindCommand(verb: 'get' | 'describe', kind: string, name: string | undefined): string[] | undefined {
  const k = KINDS.find((x) => x.names.includes(kind.toLowerCase()));
  if (k === undefined) return undefined;
  if (name === undefined) return verb === 'get' ? [...k.list] : undefined;
  return k.describe === undefined ? undefined : [...k.describe, name];
}

const kindList = (describable: boolean) => KINDS.filter((k) => !describable || k.describe !== undefined).map((k) => k.names[0]).join(', ');

/** Adds `get` and `describe` for their help, and the error for a kind they do not know. */
export function addKindCommands(program: Command, ctx: FamilyContext): void {
  const refuse = (verb: 'get' | 'describe', kind: string, name: string | undefined, cmd: Command): void => {
    const known = KINDS.some((k) => k.names.includes(kind.toLowerCase()));
    const why = !known
      ? `unknown kind '${kind}'; kinds: ${kindList(verb === 'describe')}`
      : verb === 'describe' && name === undefined
        ? `describe ${kind} needs a name or id (cairn get ${kind} lists them)`
        : `a ${kind} has no description of its own; cairn get ${kind} lists them (kinds with one: ${kindList(true)})`;
    ctx.result.exitCode = 2;
    cmd.error(`error: ${why}`, { exitCode: 2, code: 'cairn.badKind' });
  };
  program
    .command('get')
    .description('list a kind of object, or describe one, as kubectl get does: cairn get KIND [NAME] [flags of that list]')
    .argument('<kind>', `one of: ${kindList(false)} (singular and kubectl's names too: pod, node, exp)`)
    .argument('[name]', 'an id or name: that one, described')
    .allowUnknownOption()
    .addHelpText('after', `
Each kind is its own command's list (cairn get jobs is cairn job list), with that command's
flags: -o json|yaml|wide, -w, --master.

Examples:
  cairn get tasks -o wide
  cairn get jobs -w
  cairn get task train-0-3f2a1c -o yaml`)
    .action((kind: string, name: string | undefined, _o: unknown, cmd: Command) => refuse('get', kind, name, cmd));
  program
    .command('describe')
    .description('describe one object, as kubectl describe does: cairn describe KIND NAME')
    .argument('<kind>', `one of: ${kindList(true)}`)
    .argument('[name]', 'its id or name')
    .allowUnknownOption()
    .addHelpText('after', `
Each kind is its own command's description (cairn describe job NAME is cairn job show NAME).

Examples:
  cairn describe task train-0-3f2a1c
  cairn describe job mnist
  cairn describe app /dev/web`)
    .action((kind: string, name: string | undefined, _o: unknown, cmd: Command) => refuse('describe', kind, name, cmd));
}
