// Katib's trial parameters: `${trialParameters.<name>}` in a trial spec's strings stands for
// the parameter's `reference` — a parameter of the search space, or the trial's metadata
// (`${trialSpec.Name}` is the trial's name). Values go in as they are, as Katib substitutes
// text into the spec, never shell-quoted: a batch Job trial's words are quoted one by one
// afterwards (master/frameworks/tuning/trial-command.ts). Pure.

import type { TrialParameter } from './model.ts';
import type { Assignment } from './space/types.ts';

/** `${trialParameters.<name>}`: a name is anything up to the closing brace, as Katib replaces it. */
export const TRIAL_PARAMETER = /\$\{trialParameters\.([^}]+)\}/g;

/** The metadata reference whose value differs per trial: its name. */
export const TRIAL_NAME_REFERENCE = '${trialSpec.Name}';

/** Every trial parameter a string refers to, for the check at submission. */
export function trialParameterRefs(text: string): string[] {
  return [...text.matchAll(TRIAL_PARAMETER)].map((m) => m[1]);
}

/** Every string of a document (object values and list items, not keys). */
export function stringsOf(doc: unknown): string[] {
  if (typeof doc === 'string') return [doc];
  if (Array.isArray(doc)) return doc.flatMap(stringsOf);
  if (typeof doc === 'object' && doc !== null) return Object.values(doc).flatMap(stringsOf);
  return [];
}

/** A parameter's value in one trial: metadata fixed at submission, the trial's name, or the search's value. */
export function trialParameterValue(p: TrialParameter, params: Assignment, trialName: string): string {
  if (p.value !== undefined) return p.value;
  if (p.reference === TRIAL_NAME_REFERENCE) return trialName;
  // A nested parameter absent from this trial (its parent chose another branch): empty.
  const v = params[p.reference];
  return v === undefined ? '' : String(v);
}

/** `text` with each `${trialParameters.<name>}` replaced; a name not declared is left as written. */
export function fillTrialParameters(text: string, declared: readonly TrialParameter[], params: Assignment, trialName: string): string {
  return text.replace(TRIAL_PARAMETER, (whole, name: string) => {
    const p = declared.find((x) => x.name === name);
    return p ? trialParameterValue(p, params, trialName) : whole;
  });
}

/** Every string of a document filled by `fill` (keys are kept). */
export function fillStrings(doc: unknown, fill: (s: string) => string): unknown {
  if (typeof doc === 'string') return fill(doc);
  if (Array.isArray(doc)) return doc.map((x) => fillStrings(x, fill));
  if (typeof doc === 'object' && doc !== null) return Object.fromEntries(Object.entries(doc).map(([k, x]) => [k, fillStrings(x, fill)]));
  return doc;
}
