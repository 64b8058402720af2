// The options of the listing and describing commands (`agents`, `tasks`, `members`, `masters`,
// `task ID`) and of `completion`: what the parser hands their handlers.

import type { Command } from 'commander';
import type { TaskState } from '../../shared/agent-messages.ts';
import type { OutputFormat } from './output.ts';
import type { MasterClientCommandOptions } from './options.ts';

/** `-o json|yaml|wide`; absent: the table. */
export interface OutputOption {
  output?: OutputFormat;
}

export type ListOptions = MasterClientCommandOptions & OutputOption;

/** The `tasks` list shows this many unless `--limit` says otherwise. */
export const DEFAULT_TASK_LIMIT = 50;

export interface TasksOptions extends ListOptions {
  states?: TaskState[];
  /** Framework id or name. */
  framework?: string;
  /** Agent id or hostname. */
  agent?: string;
  /** 0: all. */
  limit: number;
}

export interface TaskOptions extends MasterClientCommandOptions {
  taskId: string;
  output?: 'json' | 'yaml';
}

export interface CompletionOptions {
  shell: 'bash' | 'zsh';
  /** The program the script is generated from. */
  program: Command;
}
