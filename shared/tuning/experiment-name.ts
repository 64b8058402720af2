// An experiment's name: what the submitter wrote (the tuning paper's `--app-name "testAutoML"`)
// and the DNS label it becomes, which its trials' task and DNS names start with. Pure; the
// master and the command line read names through it alike.

const NAME = /^[a-z0-9]([a-z0-9-]{0,46}[a-z0-9])?$/;

/** What an experiment's name may be, said where one is refused. */
export const NAME_RULE = "1-48 letters, digits and '-', starting and ending with a letter or digit (upper case is taken as lower case, '_' and '.' as '-')";

/**
 * The name given as a DNS label: in lower case, with '_' and '.' as '-' (`testAutoML` is
 * `testautoml`). Undefined when that is still no label of 1-48 characters.
 */
export function experimentNameOf(given: string): string | undefined {
  const name = given.toLowerCase().replace(/[_.]/g, '-');
  return NAME.test(name) ? name : undefined;
}
