// `${name}` in a trial's command: where a parameter's value goes. The tuning framework fills
// them in (master/frameworks/tuning/trial-command.ts); the command line and the experiment
// parser check that each names a parameter. Pure.

/** `${name}` in a command, a name as parameters are named (nested ones with dots). */
export const PLACEHOLDER = /\$\{([A-Za-z_][\w.-]*)\}/g;

/** Every `${name}` a command refers to, for the check at submission. */
export function placeholderNames(command: string): string[] {
  return [...command.matchAll(PLACEHOLDER)].map((m) => m[1]);
}
