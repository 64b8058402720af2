// The labels the built-in frameworks mark their tasks with, which grant something (a job's
// directory, whose a task is: master/auth/task-labels.ts refuses them on any other
// framework's task), and the refusal an app that sets one gets.

/** The built-ins' own task labels, with the framework each belongs to. */
export const BUILTIN_TASK_LABELS: ReadonlyMap<string, string> = new Map([
  ['cairn.job', 'jobs'],
  ['cairn.job.group', 'jobs'],
  ['cairn.job.index', 'jobs'],
  ['cairn.marathon.app', 'marathon'],
  ['cairn.experiment', 'tuning'],
  ['cairn.trial', 'tuning'],
]);

/** Why a label named `name` may not be set by anyone but its built-in framework; undefined when it may (pure). */
export function builtinLabelRefusal(name: string): string | undefined {
  const owner = BUILTIN_TASK_LABELS.get(name);
  if (owner === undefined) return undefined;
  return `label '${name}' belongs to the built-in ${owner} framework (it names the job, app or experiment a task runs for: its directory and its owner), and no other framework or app may set it`;
}
