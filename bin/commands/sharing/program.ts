// The commands about sharing the cluster: `cairn roles`, `cairn usage`, `cairn quota
// list|set|rm` and `cairn preemptions`, added to the program by one call from program.ts;
// handlers (commands.ts) are loaded only when one runs.

import { Command, Option } from 'commander';
import { CairnError } from '../../../shared/errors.ts';
import { clientSide, masterOption } from '../common/client-side.ts';
import { examplesFrom } from '../common/examples.ts';
import { integerFlag } from '../common/flags.ts';
import type { FamilyContext } from '../common/context.ts';
import { OUTPUT_HELP } from '../common/list-flags.ts';
import { OUTPUT_FORMATS, type OutputFormat } from '../common/output.ts';
import { DEFAULT_PREEMPTION_LIMIT, quotaChangeFromFlags, roleNameFlag, type QuotaChange } from './flags.ts';

const USAGE = 2;

/** Examples at the end of each command's --help, as every command has (../common/examples.ts). */
const SHARING_EXAMPLES: Record<string, readonly string[]> = {
  roles: ['cairn roles', 'cairn roles -o wide', "cairn roles -o json | jq -r '.roles[] | select(.limit != null) | .role'"],
  usage: ['cairn usage', 'cairn usage --role team', "cairn usage -o json | jq -r '.principals[0].principal'"],
  quota: ['cairn quota list', 'cairn quota set team --guarantee cpus=16,gpus=4 --limit gpus=8', 'cairn quota rm team/alice'],
  'quota list': ['cairn quota list', 'cairn quota list -o wide', 'cairn quotas -o yaml'],
  'quota set': [
    'cairn quota set team --guarantee cpus=16,mem=64G,gpus=4 --limit gpus=8',
    'cairn quota set team/alice --limit cpus=32,gpus=4',
    'cairn quota set team --no-limit',
  ],
  'quota rm': ['cairn quota rm team/alice'],
  preemptions: ['cairn preemptions', 'cairn preemptions --limit 0 -o wide', "cairn preemptions -o json | jq '.preemptions[0].victims'"],
};

const withExamples = examplesFrom(SHARING_EXAMPLES);

/** `--guarantee`/`--limit` may be given more than once; every occurrence counts. */
const collect = (value: string, previous: unknown): string[] => [...(Array.isArray(previous) ? (previous as string[]) : []), value];

export function addSharingCommands(program: Command, ctx: FamilyContext): void {
  const { result } = ctx;
  const handlers = () => import('./commands.ts');
  const outputOption = () => new Option('-o, --output <format>', OUTPUT_HELP).choices(OUTPUT_FORMATS);

  const roles = program
    .command('roles')
    .description("per role: its weight, what its tasks hold and use, its quota and its share of the cluster (a role's row counts the roles under it)")
    .addOption(outputOption())
    .addOption(masterOption())
    .addHelpText('after', `
ALLOCATED is what the role's running tasks hold (those of the roles under it included);
USED is what the agents last sampled of them ('-' when none answered); SHARE is the
dominant share, the largest fraction of any one resource of the cluster that they hold.
mem and disk are in MB (G: GiB).`);
  // Examples last, after the notes above.
  withExamples(roles, 'roles')
    .action(async (o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runRoles({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(program.command('usage'), 'usage')
    .description('per principal: the roles its tasks run in, what they hold and use, and its share of the cluster, highest share first')
    .addOption(new Option('--role <role>', 'only principals with tasks in this role or a role under it (all of their use is shown)').argParser(roleNameFlag))
    .addOption(outputOption())
    .addOption(masterOption())
    .action(async (o: { master?: string; output?: OutputFormat; role?: string }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runUsage({
        masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}), ...(o.role !== undefined ? { role: o.role } : {}),
      }, side.io);
    });

  const quota = withExamples(program.command('quota'), 'quota')
    .alias('quotas')
    .description("roles' quotas: a guarantee the role's subtree gets when it asks, and a limit it never goes above");

  withExamples(quota.command('list', { isDefault: true }), 'quota list')
    .description('list the quotas, by role; -o wide adds what each role holds now')
    .addOption(outputOption())
    .addOption(masterOption())
    .action(async (o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runQuotaList({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  const set = quota
    .command('set')
    .description("set a role's guarantee and/or limit; what is not named is kept as it is")
    .argument('<role>', 'the role, e.g. team or team/alice', roleNameFlag)
    .option('--guarantee <amounts>', 'what the role is guaranteed, e.g. cpus=4,mem=8192,gpus=2 (replaces the guarantee; repeatable)', collect)
    .option('--no-guarantee', 'remove the guarantee')
    .option('--limit <amounts>', 'what the role never goes above, e.g. cpus=64,gpus=8 (replaces the limit; a resource not named is not limited; repeatable)', collect)
    .option('--no-limit', 'remove the limit (the limits of the roles above it still hold)')
    .addOption(masterOption())
    .addHelpText('after', `
Amounts are cpus, mem, disk and gpus; mem and disk in MB, or with a unit: 512M, 16G,
16Gi, 16GiB (binary). A quota covers the role and every role under it: a child's limit
may not be above its parent's, nor the guarantees under a role above its guarantee; the
master refuses such a quota naming the amount (limit.gpus) and the role it conflicts with.`);
  withExamples(set, 'quota set');
  // --limit and --no-limit set one value, the last given winning: note each to refuse both.
  const given = new Set<string>();
  for (const name of ['guarantee', 'no-guarantee', 'limit', 'no-limit']) set.on(`option:${name}`, () => given.add(name));
  set.action(async (role: string, o: { master?: string; guarantee?: string[] | false; limit?: string[] | false }, cmd: Command) => {
    const seen = new Set(given);
    given.clear();
    let change: QuotaChange;
    try {
      change = quotaChangeFromFlags({
        ...(seen.has('guarantee') ? { guarantee: Array.isArray(o.guarantee) ? o.guarantee : [] } : {}),
        ...(seen.has('limit') ? { limit: Array.isArray(o.limit) ? o.limit : [] } : {}),
        noGuarantee: seen.has('no-guarantee'),
        noLimit: seen.has('no-limit'),
      });
    } catch (err) {
      if (!(err instanceof CairnError)) throw err;
      return cmd.error(`error: ${err.message}`, { exitCode: USAGE, code: 'cairn.badFlag' });
    }
    const masterUrl = ctx.masterUrl(o.master, cmd);
    const side = clientSide(program, ctx.io);
    result.exitCode = await (await handlers()).runQuotaSet({ masterUrl, ...(side.tls ? { tls: side.tls } : {}), role, change }, side.io);
  });

  withExamples(quota.command('rm'), 'quota rm')
    .alias('remove')
    .description("remove a role's quota (refused while a role under it has one)")
    .argument('<role>', 'the role', roleNameFlag)
    .addOption(masterOption())
    .action(async (role: string, o: { master?: string }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runQuotaRemove({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), role }, side.io);
    });

  withExamples(program.command('preemptions'), 'preemptions')
    .description('the latest preemptions, newest first: who preempted and for what, its priority class, why, and the tasks it took')
    .addOption(new Option('--limit <n>', 'show at most this many, newest first (0: all)').argParser(integerFlag(0, 1_000_000)).default(DEFAULT_PREEMPTION_LIMIT))
    .addOption(outputOption())
    .addOption(masterOption())
    .action(async (o: { master?: string; output?: OutputFormat; limit: number }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runPreemptions({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}), limit: o.limit }, side.io);
    });
}
