// The `cairn job` command family (submit, list, show, wait, delete, logs), added to the
// program by one call from program.ts; handlers (commands.ts) are loaded only when one runs.

import { Command, InvalidArgumentError, Option } from 'commander';
import { clientSide, masterOption } from '../common/client-side.ts';
import { examplesFrom } from '../common/examples.ts';
import { durationFlag } from '../common/flags.ts';
import { addJobSubmitFlags, jobDocumentFromFlags, type JobFlags } from './flags.ts';
import type { FamilyContext } from '../common/context.ts';
import type { CliIo } from '../common/io.ts';
import { OBJECT_FORMATS, OUTPUT_FORMATS } from '../common/output.ts';
import { OBJECT_OUTPUT_HELP, OUTPUT_HELP } from '../common/list-flags.ts';

/** `JOB/GROUP-INDEX`: a replica of a job, as `cairn logs` takes it besides a task id. */
export function isReplicaRef(arg: string): boolean {
  return /^[a-z0-9-]+\/[a-z0-9-]+-\d+$/.test(arg);
}

/** Examples at the end of each job command's --help, as every command has (../common/examples.ts). */
const JOB_EXAMPLES: Record<string, readonly string[]> = {
  job: ['cairn job submit examples/jobs/tfjob.yaml', 'cairn job list', 'cairn job wait mnist', 'cairn job logs mnist --all'],
  submit: [
    'cairn job submit examples/jobs/pytorchjob.yaml',
    'cairn job submit -f examples/jobs/tfjob.yaml',
    'cat job.yaml | cairn job submit -',
    'cairn job submit --kind pslite --num-servers 2 --num-workers 4 -- python3 train.py',
    'cairn job submit --kind pytorch --replicas 4 --cpus 2 --mem 4096 --gpus 1 --name ddp -- python3 ddp.py --epochs 5',
  ],
  list: ['cairn job list', 'cairn job list -o wide', 'cairn job list -o json | jq -r \'.[] | select(.phase == "Failed") | .name\''],
  show: ['cairn job show mnist', 'cairn job show mnist -o yaml'],
  wait: ['cairn job wait mnist', 'cairn job wait mnist --timeout 2h && echo trained'],
  delete: ['cairn job delete mnist'],
  logs: ['cairn job logs mnist', 'cairn job logs mnist --all --follow', 'cairn logs mnist/worker-3'],
};

const withExamples = examplesFrom(JOB_EXAMPLES);

export function addJobCommands(program: Command, ctx: FamilyContext): void {
  const { result } = ctx;
  const handlers = () => import('./commands.ts');
  const job = withExamples(program.command('job').description('distributed training and batch jobs: ps-lite, TensorFlow, PyTorch and indexed batch jobs, placed as gangs'), 'job');

  const submit = withExamples(job.command('submit'), 'submit')
    .description("submit a job from a file (Cairn's job, a Kubeflow TFJob or PyTorchJob, a Volcano Job; JSON or YAML; - for stdin), or from flags and `-- CMD ARGS`; prints the job's name")
    .argument('[file-or-command...]', 'the job file, or with --kind the command every replica runs (after --)')
    .option('-f, --file <file>', 'the job file, as kubectl apply -f takes it (- for stdin); the same as giving it as the argument')
    .option('--allow-unschedulable', 'submit it even when a replica is bigger than every agent (it waits for one; exit code 3 and a warning)');
  addJobSubmitFlags(submit)
    .addOption(masterOption())
    .action(async (rest: string[], o: JobFlags & { master?: string; file?: string; allowUnschedulable?: boolean }, cmd: Command) => {
      const masterUrl = ctx.masterUrl(o.master, cmd);
      const side = clientSide(program, ctx.io);
      if (o.file !== undefined && (o.kind !== undefined || rest.length > 0)) cmd.error('error: -f FILE goes alone: give the job file either with -f or as the argument, not with --kind', { exitCode: 2, code: 'cairn.badFlag' });
      const args = o.file !== undefined ? [o.file] : rest;
      if (o.kind === undefined) {
        if (args.length !== 1) cmd.error('error: give one job file (or - for stdin), or --kind with flags and -- CMD ARGS', { exitCode: 2, code: 'cairn.badFlag' });
        if (o.restartBackoff !== undefined) cmd.error('error: --restart-backoff goes with --kind; in a job file, write restartBackoff (initialSeconds, factor, maxSeconds, resetAfterSeconds)', { exitCode: 2, code: 'cairn.badFlag' });
        result.exitCode = await (await handlers()).runJobSubmit({ masterUrl, ...(side.tls ? { tls: side.tls } : {}), file: args[0]!, allowUnschedulable: o.allowUnschedulable === true }, side.io);
        return;
      }
      if (args.length === 0) cmd.error('error: --kind needs the command every replica runs after --, e.g. -- python train.py', { exitCode: 2, code: 'cairn.badFlag' });
      let document: unknown;
      try {
        document = jobDocumentFromFlags(o, args);
      } catch (err) {
        return cmd.error(`error: ${(err as Error).message}`, { exitCode: 2, code: 'cairn.badFlag' });
      }
      result.exitCode = await (await handlers()).runJobSubmit({ masterUrl, ...(side.tls ? { tls: side.tls } : {}), document, allowUnschedulable: o.allowUnschedulable === true }, side.io);
    });

  withExamples(job.command('list'), 'list')
    .description('list jobs: phase, replicas running/done/all, restarts')
    .addOption(new Option('-o, --output <format>', OUTPUT_HELP).choices(OUTPUT_FORMATS))
    .addOption(masterOption())
    .action(async (o: { master?: string; output?: (typeof OUTPUT_FORMATS)[number] }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runJobList({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(job.command('show'), 'show')
    .description("a job's phase, conditions and replicas (host, port, restarts, exit code, task)")
    .argument('<name>', 'job name')
    .addOption(new Option('-o, --output <format>', OBJECT_OUTPUT_HELP).choices(OBJECT_FORMATS))
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; output?: 'json' | 'yaml' }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runJobShow({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name, ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(job.command('wait'), 'wait')
    .description('wait for a job to end: exit 0 when it succeeded, 1 with the reason when it failed, 124 when --timeout ran out')
    .argument('<name>', 'job name')
    .option('--timeout <duration>', 'give up after this long, e.g. 10m: exit 124 (as timeout(1) does; cairn help exit-codes)', durationFlag())
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; timeout?: number }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runJobWait({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name, ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}) }, side.io);
    });

  withExamples(job.command('delete'), 'delete')
    .description("delete a job: its replicas are killed and its record removed")
    .argument('<name>', 'job name')
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runJobDelete({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name }, side.io);
    });

  withExamples(job.command('logs'), 'logs')
    .description("a job's log: its first replica's, or with --all every replica's, each line prefixed with its replica (JOB/GROUP-INDEX for one replica: cairn logs)")
    .argument('<job>', 'job name')
    .option('--all', 'every replica, interleaved, each line prefixed with [group-index]', false)
    .option('-f, --follow', 'keep printing until the replicas have ended', false)
    .option('--stderr', 'stderr instead of stdout', false)
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; all: boolean; follow: boolean; stderr: boolean }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runJobLogs({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), job: name, all: o.all, follow: o.follow, stream: o.stderr ? 'stderr' : 'stdout' }, side.io);
    });
}

/** `cairn logs JOB/GROUP-INDEX`: the replica's latest task's log. */
export async function replicaLogs(program: Command, io: CliIo, masterUrl: string, ref: string, o: { stderr: boolean; follow: boolean }): Promise<number> {
  const m = /^([a-z0-9-]+)\/([a-z0-9-]+)-(\d+)$/.exec(ref);
  if (!m) throw new InvalidArgumentError(`'${ref}' is not JOB/GROUP-INDEX`);
  const side = clientSide(program, io);
  return (await import('./commands.ts')).runJobLogs({ masterUrl, ...(side.tls ? { tls: side.tls } : {}), job: m[1]!, replica: { group: m[2]!, index: Number(m[3]) }, all: false, follow: o.follow, stream: o.stderr ? 'stderr' : 'stdout' }, side.io);
}
