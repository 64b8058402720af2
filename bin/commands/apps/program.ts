// `cairn app …`: Marathon apps through the master's /v2 API — deploy a file (one app or a
// list), list, show, their tasks, scale, restart, delete, deployments, and the launch
// queue with the reason each waiting instance waits. Flags and help only; the handlers
// (commands.ts) load when a command runs.

import { Command, Option } from 'commander';
import type { FamilyContext } from '../common/context.ts';
import type { CliIo } from '../common/io.ts';
import { DEFAULT_MASTER_URL } from '../common/options.ts';
import { checkMasterUrl, durationFlag, integerFlag } from '../common/flags.ts';
import { clientSide, masterOption } from '../common/client-side.ts';
import { examplesFrom } from '../common/examples.ts';
import { OBJECT_FORMATS, OUTPUT_FORMATS } from '../common/output.ts';
import { OBJECT_OUTPUT_HELP, OUTPUT_HELP } from '../common/list-flags.ts';
import type { AppCommand } from './commands.ts';

const EXAMPLES: Record<string, readonly string[]> = {
  app: ['cairn app deploy web.json', 'cairn app list', 'cairn app queue'],
  deploy: ['cairn app deploy web.json', 'cairn app deploy -f web.json', 'cat apps.json | cairn app deploy -', 'cairn app deploy web.json --force', 'cairn app deploy web.json --wait --timeout 5m'],
  list: ['cairn app list', 'cairn app list -o wide', 'cairn app list -o json | jq -r \'.[].id\''],
  show: ['cairn app show /dev/web', 'cairn app show dev/web -o json'],
  tasks: ['cairn app tasks /dev/web', 'cairn app tasks /dev/web -o json'],
  scale: ['cairn app scale /dev/web 5', 'cairn app scale /dev/web 0 --force'],
  restart: ['cairn app restart /dev/web'],
  delete: ['cairn app delete /dev/web'],
  deployments: ['cairn app deployments', 'cairn app deployments -o json'],
  queue: ['cairn app queue', 'cairn app queue -o json'],
};

type Handler = (cmd: AppCommand, io: CliIo) => Promise<number>;
const realHandler: Handler = async (cmd, io) => (await import('./commands.ts')).runApp(cmd, io);

/** Adds `cairn app` and its subcommands to the program. */
export function addAppCommands(program: Command, ctx: FamilyContext, handler: Handler = realHandler): void {
  const { io, result } = ctx;
  const app = program.command('app').description('Marathon apps (long-running services): deploy app JSON, list, scale, restart, delete, see why instances wait');
  const masterUrl = (flag: string | undefined, cmd: Command): string => {
    const raw = flag ?? (io.env.CAIRN_MASTER || DEFAULT_MASTER_URL);
    try {
      return raw.split(',').map((u) => checkMasterUrl(u.trim())).join(',');
    } catch (err) {
      return cmd.error(`error: option '--master <url>' ${(err as Error).message}`, { exitCode: 2, code: 'cairn.badFlag' });
    }
  };
  const run = async (c: AppCommand, cmd: Command, flags: { master?: string }) => {
    const side = clientSide(program, io);
    result.exitCode = await handler({ ...c, masterUrl: masterUrl(flags.master, cmd), ...(side.tls ? { tls: side.tls } : {}) } as AppCommand, side.io);
  };
  const output = () => new Option('-o, --output <format>', OUTPUT_HELP).choices(OUTPUT_FORMATS);
  const objectOutput = () => new Option('-o, --output <format>', OBJECT_OUTPUT_HELP).choices(OBJECT_FORMATS);
  const force = () => new Option('--force', 'go ahead even while a deployment holds the app (it is replaced)');

  app.command('deploy').description('create or update the apps in a Marathon app JSON file (one app, or a list of them); - reads stdin')
    .argument('[file]', 'app JSON file, or - for stdin').option('-f, --file <file>', 'the app JSON file, as kubectl apply -f takes it (- for stdin)')
    .addOption(masterOption()).addOption(force())
    .option('--wait', 'follow the apps until every instance runs (and is healthy): prints the instances running and why the others wait as it changes')
    .option('--timeout <duration>', 'with --wait: give up after this long, e.g. 5m (exit 124)', durationFlag())
    .action((arg: string | undefined, o: { master?: string; force?: boolean; file?: string; wait?: boolean; timeout?: number }, cmd: Command) => {
      if ((arg === undefined) === (o.file === undefined)) return cmd.error('error: give the app file once: as the argument or with -f FILE', { exitCode: 2, code: 'cairn.badFlag' });
      if (o.timeout !== undefined && o.wait !== true) return cmd.error('error: --timeout goes with --wait', { exitCode: 2, code: 'cairn.badFlag' });
      return run({ action: 'deploy', file: (o.file ?? arg)!, force: o.force === true, wait: o.wait === true, ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}), masterUrl: '' }, cmd, o);
    });
  app.command('list').description('list apps: instances running and wanted, healthy, resources, deployments')
    .addOption(masterOption()).addOption(output())
    .action((o: { master?: string; output?: string }, cmd: Command) => run({ action: 'list', output: o.output, masterUrl: '' } as AppCommand, cmd, o));
  app.command('show').description("an app's definition, versions and task counts (YAML by default)")
    .argument('<id>', 'app id, e.g. /dev/web').addOption(masterOption()).addOption(objectOutput())
    .action((id: string, o: { master?: string; output?: string }, cmd: Command) => run({ action: 'show', id, output: o.output, masterUrl: '' } as AppCommand, cmd, o));
  app.command('tasks').description("an app's tasks: host, ports, state, health")
    .argument('<id>', 'app id').addOption(masterOption()).addOption(output())
    .action((id: string, o: { master?: string; output?: string }, cmd: Command) => run({ action: 'tasks', id, output: o.output, masterUrl: '' } as AppCommand, cmd, o));
  app.command('scale').description('set how many instances an app runs (a deployment)')
    .argument('<id>', 'app id').argument('<instances>', 'instances wanted', integerFlag(0, 100_000)).addOption(masterOption()).addOption(force())
    .action((id: string, instances: number, o: { master?: string; force?: boolean }, cmd: Command) => run({ action: 'scale', id, instances, force: o.force === true, masterUrl: '' }, cmd, o));
  app.command('restart').description("replace every instance of an app, rolling, within its upgradeStrategy")
    .argument('<id>', 'app id').addOption(masterOption()).addOption(force())
    .action((id: string, o: { master?: string; force?: boolean }, cmd: Command) => run({ action: 'restart', id, force: o.force === true, masterUrl: '' }, cmd, o));
  app.command('delete').description('delete an app and kill its tasks')
    .argument('<id>', 'app id').addOption(masterOption()).addOption(force())
    .action((id: string, o: { master?: string; force?: boolean }, cmd: Command) => run({ action: 'delete', id, force: o.force === true, masterUrl: '' }, cmd, o));
  app.command('deployments').description('deployments in flight: the app, what they do, since which version')
    .addOption(masterOption()).addOption(output())
    .action((o: { master?: string; output?: string }, cmd: Command) => run({ action: 'deployments', output: o.output, masterUrl: '' } as AppCommand, cmd, o));
  app.command('queue').description('instances waiting to start: the backoff delay, and how many offers were declined for which reason')
    .addOption(masterOption()).addOption(output())
    .action((o: { master?: string; output?: string }, cmd: Command) => run({ action: 'queue', output: o.output, masterUrl: '' } as AppCommand, cmd, o));

  const examples = examplesFrom(EXAMPLES);
  examples(app, 'app');
  for (const c of app.commands) examples(c, c.name());
}
