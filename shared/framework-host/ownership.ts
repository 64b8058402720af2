// Whose a built-in framework's task is, for the frameworks whose tasks carry a label naming
// the object they run for (an app, a job, an experiment) and whose stored object records its
// owner: the common shape of their TaskOwnership.

import type { TaskOwnership } from './contract.ts';

/**
 * `runs`: which framework names are this framework's; `label`: the task label naming the
 * object; `keyOf`: the object's key in the framework's store, from the label's value;
 * `nameOf`: the object as people name it, from the label's value (the value itself by default).
 */
export function ownershipByLabel(runs: (frameworkName: string) => boolean, label: string, keyOf: (value: string) => string, nameOf: (value: string) => string = (v) => v): TaskOwnership {
  return {
    runs,
    nameOf: (labels) => {
      const value = labels.find((l) => l.name === label)?.value;
      return value === undefined ? undefined : nameOf(value);
    },
    ownerOf: (labels, get) => {
      const value = labels.find((l) => l.name === label)?.value;
      const owner = value === undefined ? undefined : (get(keyOf(value)) as { owner?: unknown } | undefined)?.owner;
      return typeof owner === 'string' ? owner : '';
    },
  };
}
