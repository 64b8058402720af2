// The longest strings and the most items a client may send to a master, in one place: the
// scheduler API checks its calls against them (master/scheduler-calls.ts), and the
// built-in frameworks check the apps, jobs and experiments they turn into tasks the same way.

/** Mesos' bound on an id (a task's names its sandbox directory: NAME_MAX). */
export const MAX_ID_LENGTH = 255;

/**
 * The longest strings a client may send, in characters. The registry keeps them, every
 * master replicates them, agents and DNS use them: a 15 MB framework name was stored once.
 * Each is far above what a real client sends, and far below what hurts.
 */
export const MAX_LENGTH = {
  /** Framework and task names, roles, capabilities, images, label keys: the default. */
  name: 1024,
  /** The OS user a framework runs as, and its principal. */
  user: 256,
  /** An environment variable's name. */
  envName: 256,
  /** Volume paths (Linux' PATH_MAX). */
  path: 4096,
  /** A label's value. */
  labelValue: 4096,
  /** A command's value and arguments together, and each environment value. */
  command: 64 * 1024,
  /** Words from a fixed set (call and operation types, network, protocol, mode). */
  word: 64,
} as const;

/** The most environment variables and labels one task may carry. */
export const MAX_ITEMS = { environment: 1024, labels: 1024 } as const;
