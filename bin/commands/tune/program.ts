// The `cairn tune` command family (submit, list, show, best, stop, resume, delete): hyper-
// parameter tuning experiments, added to the program by one call from program.ts; handlers
// (commands.ts) are loaded only when one runs.

import { Command, Option } from 'commander';
import { clientSide, masterOption } from '../common/client-side.ts';
import { examplesFrom } from '../common/examples.ts';
import { durationFlag, integerFlag } from '../common/flags.ts';
import type { FamilyContext } from '../common/context.ts';
import { OBJECT_OUTPUT_HELP, OUTPUT_HELP } from '../common/list-flags.ts';
import { OBJECT_FORMATS, OUTPUT_FORMATS } from '../common/output.ts';
import { addTuneSubmitFlags, documentFlagsGiven, experimentFromFlags, type TuneFlags } from './flags.ts';

const USAGE = 2;

const PAPER_SUBMIT =
  "cairn tune submit --app-name digits --input /data/digits#data --files digits_mlp.py --app-runner-launch-cmd 'python3 digits_mlp.py --learning-rate ${learning_rate} --momentum ${momentum} --batch-size ${batch_size}' --app-runner-memory 5G --app-runner-cpus 3 --app-core-memory 1G --app-core-cpus 2 --trail-steps 100 --tuning-type bayesian --tuning-parameters demo-parameters.json";

/** Examples at the end of each tune command's --help, as every command has (../common/examples.ts). */
const TUNE_EXAMPLES: Record<string, readonly string[]> = {
  tune: ['cairn tune submit -f experiment.yaml --wait', 'cairn tune list', 'cairn tune show digits', 'cairn tune best digits -o json'],
  submit: [
    PAPER_SUBMIT,
    "cairn tune submit --app-name digits --app-runner-launch-cmd 'python3 train.py' --tuning-parameters nni-space.json --tuning-type tpe --parallelism 4 --early-stopping asha --minimize --metric loss --wait",
    'cairn tune submit -f experiment.yaml --wait',
    "cairn tune submit --dry-run --app-runner-launch-cmd 'python3 train.py' --tuning-parameters demo-parameters.json",
  ],
  list: ['cairn tune list', 'cairn tune list -o wide', 'cairn tune list -o json | jq -r \'.[] | select(.phase == "Running") | .name\''],
  show: ['cairn tune show digits', 'cairn tune show digits -o yaml'],
  best: ['cairn tune best digits', 'cairn tune best digits -o json | jq .params'],
  stop: ['cairn tune stop digits'],
  resume: ['cairn tune resume digits', 'cairn tune resume digits --max-trials 200 --max-failed 10'],
  delete: ['cairn tune delete digits'],
  logs: ['cairn tune logs digits 3', 'cairn tune logs digits 3 --follow', 'cairn tune logs digits 3 --stderr'],
};

const withExamples = examplesFrom(TUNE_EXAMPLES);

export function addTuneCommands(program: Command, ctx: FamilyContext): void {
  const { result } = ctx;
  const handlers = () => import('./commands.ts');
  const tune = withExamples(program.command('tune').description('hyperparameter tuning: experiments that run trials of a command over a search space (Katib-shaped, or the tuning paper\'s flags)'), 'tune');

  const submit = withExamples(tune.command('submit'), 'submit')
    .description("submit an experiment: from a file (-f, Katib-shaped JSON or YAML; - for stdin) or from the tuning paper's flags; prints its name")
    .option('-f, --file <file>', 'an experiment file, JSON or YAML, sent as it is (- for stdin)')
    .option('--wait', 'follow it: a line per trial as it ends, then the best trial; exit 0 when it succeeded, 1 when it failed or was stopped')
    .option('--dry-run', 'print the experiment document it would send (JSON) and exit');
  addTuneSubmitFlags(submit, durationFlag(1000))
    .addOption(masterOption())
    .addHelpText('after', `
Trials get their parameters as \${name} in the command, as CAIRN_PARAM_<NAME> variables and
in $CAIRN_SANDBOX/params.json, and report metrics by printing name=value lines (step=N for
intermediate results), e.g. with Cairn's report clients in clients/python and clients/node.
A Katib file's trialTemplate.trialSpec (a batch Job, PyTorchJob or TFJob) is run as it is,
with \${trialParameters.NAME} filled in its primary container's command, args, image and env.`)
    .action(async (o: TuneFlags & { file?: string; wait?: boolean; dryRun?: boolean; master?: string }, cmd: Command) => {
      const masterUrl = ctx.masterUrl(o.master, cmd);
      const side = clientSide(program, ctx.io);
      const common = { masterUrl, ...(side.tls ? { tls: side.tls } : {}), ...(o.wait ? { wait: true } : {}), ...(o.dryRun ? { dryRun: true } : {}) };
      if (o.file !== undefined) {
        const given = documentFlagsGiven(o);
        if (given.length > 0) return cmd.error(`error: -f takes the experiment as it is in the file: give the file or the flags, not both (${given.join(', ')})`, { exitCode: USAGE, code: 'cairn.badFlag' });
        result.exitCode = await (await handlers()).runTuneSubmit({ ...common, file: o.file }, side.io);
        return;
      }
      let document: unknown;
      try {
        document = experimentFromFlags(o);
      } catch (err) {
        return cmd.error(`error: ${(err as Error).message}`, { exitCode: USAGE, code: 'cairn.badFlag' });
      }
      result.exitCode = await (await handlers()).runTuneSubmit({ ...common, document }, side.io);
    });

  withExamples(tune.command('list'), 'list')
    .description('list experiments: phase, why, trials done/max, the best value, age')
    .addOption(new Option('-o, --output <format>', OUTPUT_HELP).choices(OUTPUT_FORMATS))
    .addOption(masterOption())
    .action(async (o: { master?: string; output?: (typeof OUTPUT_FORMATS)[number] }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneList({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(tune.command('show'), 'show')
    .description("an experiment: phase, objective, algorithm, the best trial, every trial, and a chart of the objective over the trials")
    .argument('<name>', 'experiment name')
    .addOption(new Option('-o, --output <format>', OBJECT_OUTPUT_HELP).choices(OBJECT_FORMATS))
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; output?: 'json' | 'yaml' }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneShow({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name, ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(tune.command('best'), 'best')
    .description("the best trial's parameters and metrics (exit 1 while no trial has succeeded)")
    .argument('<name>', 'experiment name')
    .addOption(new Option('-o, --output <format>', OBJECT_OUTPUT_HELP).choices(OBJECT_FORMATS))
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; output?: 'json' | 'yaml' }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneBest({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name, ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(tune.command('stop'), 'stop')
    .description('stop an experiment: no more trials start, running ones are killed; resume it later')
    .argument('<name>', 'experiment name')
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneStop({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name }, side.io);
    });

  withExamples(tune.command('resume'), 'resume')
    .description('resume a stopped or ended experiment, optionally raising its limits; finished trials are kept')
    .argument('<name>', 'experiment name')
    .addOption(new Option('--max-trials <n>', 'trials in all, counting those run so far').argParser(integerFlag(1, Number.MAX_SAFE_INTEGER)))
    .addOption(new Option('--max-failed <n>', 'failed trials after which it fails').argParser(integerFlag(0, Number.MAX_SAFE_INTEGER)))
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; maxTrials?: number; maxFailed?: number }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneResume({
        masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name,
        ...(o.maxTrials !== undefined ? { maxTrialCount: o.maxTrials } : {}), ...(o.maxFailed !== undefined ? { maxFailedTrialCount: o.maxFailed } : {}),
      }, side.io);
    });

  withExamples(tune.command('logs'), 'logs')
    .description("a trial's log (a distributed trial's: its job's first replica's, which reports the metrics)")
    .argument('<name>', 'experiment name')
    .argument('<index>', 'trial index, as cairn tune show lists them', integerFlag(0, Number.MAX_SAFE_INTEGER))
    .option('-f, --follow', 'keep printing until the trial has ended', false)
    .option('--stderr', 'stderr instead of stdout', false)
    .addOption(masterOption())
    .action(async (name: string, index: number, o: { master?: string; follow: boolean; stderr: boolean }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneLogs({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name, index, follow: o.follow, stream: o.stderr ? 'stderr' : 'stdout' }, side.io);
    });

  withExamples(tune.command('delete'), 'delete')
    .description('delete an experiment: its trials are killed and its records removed')
    .argument('<name>', 'experiment name')
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runTuneDelete({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name }, side.io);
    });
}
