// The Mesos TaskInfo of one trial (the paper's App Runner): its parameters three ways — as
// CAIRN_PARAM_<NAME> variables, as `$CAIRN_SANDBOX/params.json`, and in place of `${name}` in
// its command (in a Katib-form template, `${trialParameters.<name>}` in its words, image and
// env) — and a short shell preamble that prepares its sandbox first: the shipped
// files written out, each input linked in under its name, each output linked to a directory
// of the trial's own on the host path. The preamble is plain POSIX sh with base64 (coreutils
// and busybox both have it), so it runs the same as a process and in a container. Pure.

import type { TaskInfoJson } from '../../../shared/mesos-v1.ts';
import type { MesosResource } from '../../../shared/resources.ts';
import type { ExperimentSpec } from '../../../shared/tuning/model.ts';
import type { Assignment, ParamValue } from '../../../shared/tuning/space/types.ts';
import { envName } from '../../../shared/tuning/space/sample.ts';
import { PLACEHOLDER } from '../../../shared/tuning/placeholders.ts';
import { fillTrialParameters } from '../../../shared/tuning/trial-parameters.ts';

/** Labels every trial's task carries: whose experiment, which trial. */
export const EXPERIMENT_LABEL = 'cairn.experiment';
export const TRIAL_LABEL = 'cairn.trial';

const KILL_GRACE_NS = 5e9;

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function text(v: ParamValue): string {
  return String(v);
}

/** Values written as they are: numbers and plain words need no quotes, even inside "…". */
const PLAIN = /^[A-Za-z0-9_.+-]+$/;

/**
 * The command with every `${name}` replaced by the parameter's value — as it is when it is a
 * number or a plain word (so `"lr=${lr}"` prints lr=0.1), shell-quoted otherwise. Names
 * the command uses but the trial lacks are left for `placeholderNames` to refuse at submission
 * (a nested parameter absent from this trial becomes the empty string).
 */
export function substitute(command: string, params: Assignment): string {
  return command.replace(PLACEHOLDER, (_m, name: string) => (name in params ? (PLAIN.test(text(params[name])) ? text(params[name]) : shellQuote(text(params[name]))) : "''"));
}

/** Words that need no quotes in a shell line: paths, flags, `--lr=0.01`. */
const PLAIN_WORD = /^[A-Za-z0-9_.+\-/=:,@%]+$/;

/** Words (a program and its arguments) as one shell line, each passed as it is. */
export function shellWords(words: readonly string[]): string {
  // A first word with `=` would be read as a variable's assignment, not as the program.
  return words.map((w, i) => (PLAIN_WORD.test(w) && !(i === 0 && w.includes('=')) ? w : shellQuote(w))).join(' ');
}

/**
 * A Katib-form template's string for one trial: each `${trialParameters.<name>}` filled with
 * its value as it is; other templates' strings are returned unchanged.
 */
function katibFill(spec: ExperimentSpec, index: number, params: Assignment): (s: string) => string {
  const declared = spec.trial.trialParameters;
  return declared ? (s) => fillTrialParameters(s, declared, params, `${spec.name}-${index}`) : (s) => s;
}

/** The line that runs the trial's program: a batch Job's words filled then quoted one by one, or the command with `${name}` filled. */
export function trialCommandLine(spec: ExperimentSpec, index: number, params: Assignment): string {
  if (spec.trial.argv) return shellWords(spec.trial.argv.map(katibFill(spec, index, params)));
  return substitute(spec.trial.command, params);
}

/** Where trial `index` of `experiment` writes an output mapped from `hostPath`. */
export function outputDir(hostPath: string, experiment: string, index: number): string {
  return `${hostPath.replace(/\/+$/, '')}/${experiment}-${index}`;
}

export function trialScript(spec: ExperimentSpec, index: number, params: Assignment): string {
  // A process starts in its sandbox already; a container in its image's directory.
  const lines = ['set -e', 'cd "${CAIRN_SANDBOX:-.}" 2>/dev/null || true'];
  for (const f of spec.trial.files) lines.push(`printf '%s' ${shellQuote(f.base64)} | base64 -d > ${shellQuote(f.name)}`);
  lines.push(`printf '%s\\n' ${shellQuote(JSON.stringify(params))} > params.json`);
  for (const i of spec.trial.inputs) lines.push(`ln -sfn ${shellQuote(i.hostPath)} ${shellQuote(i.name)}`);
  for (const o of spec.trial.outputs) {
    const dir = shellQuote(outputDir(o.hostPath, spec.name, index));
    lines.push(`mkdir -p ${dir}`, `ln -sfn ${dir} ${shellQuote(o.name)}`);
  }
  lines.push('set +e', trialCommandLine(spec, index, params));
  return lines.join('\n');
}

export function trialTaskInfo(spec: ExperimentSpec, trial: { index: number; taskId: string; resources: MesosResource[]; params: Assignment }, agentId: string): TaskInfoJson {
  const fill = katibFill(spec, trial.index, trial.params);
  const env: Record<string, string> = Object.fromEntries(Object.entries(spec.trial.env).map(([k, v]) => [k, fill(v)]));
  for (const [name, value] of Object.entries(trial.params)) env[envName(name)] = text(value);
  env.CAIRN_EXPERIMENT = spec.name;
  env.CAIRN_TRIAL = String(trial.index);
  env.CAIRN_TRIAL_NAME = `${spec.name}-${trial.index}`;
  env.CAIRN_METRIC = spec.objective.metricName;
  const variables = Object.entries(env).map(([name, value]) => ({ name, value }));
  const info: TaskInfoJson = {
    name: `${spec.name}-${trial.index}`,
    task_id: { value: trial.taskId },
    agent_id: { value: agentId },
    resources: trial.resources,
    command: { shell: true, value: trialScript(spec, trial.index, trial.params), environment: { variables } },
    labels: { labels: [{ key: EXPERIMENT_LABEL, value: spec.name }, { key: TRIAL_LABEL, value: String(trial.index) }] },
    kill_policy: { grace_period: { nanoseconds: KILL_GRACE_NS } },
  };
  if (spec.trial.image) {
    const paths = [...spec.trial.inputs.map((i) => ({ host_path: i.hostPath, container_path: i.hostPath, mode: 'RO' as const })), ...spec.trial.outputs.map((o) => ({ host_path: o.hostPath, container_path: o.hostPath, mode: 'RW' as const }))];
    info.container = { type: 'DOCKER', docker: { image: fill(spec.trial.image), network: 'HOST' }, volumes: paths };
  }
  return info;
}
