// Parsers for the flags of the listing commands (`-o`, `--state`, `--limit`) and for `cairn
// run --mem`, which refuses a unit or bytes with the MiB it probably meant (hints.ts). Each
// throws commander's InvalidArgumentError, so the message names the flag.

import { InvalidArgumentError, Option } from 'commander';
import { TASK_STATES, type TaskState } from '../../../shared/agent-messages.ts';
import { memHint } from './hints.ts';
import { OBJECT_FORMATS, OUTPUT_FORMATS } from './output.ts';

/** `--state running,failed`: each a task state, with or without TASK_, in any case. */
export function parseStates(value: string): TaskState[] | { unknown: string } {
  const out: TaskState[] = [];
  for (const raw of value.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const name = raw.toUpperCase().replace(/^(TASK_)?/, 'TASK_') as TaskState;
    if (!(TASK_STATES as readonly string[]).includes(name)) return { unknown: raw };
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

export function stateFlag(value: string): TaskState[] {
  const states = parseStates(value);
  if (!Array.isArray(states)) {
    throw new InvalidArgumentError(`'${states.unknown}' is not a task state (one or more of ${TASK_STATES.map((s) => s.replace(/^TASK_/, '').toLowerCase()).join(', ')}, comma-separated).`);
  }
  if (states.length === 0) throw new InvalidArgumentError('names no state.');
  return states;
}

/** `--mem`: MiB, a positive number; `2G` or a count of bytes is refused with the MiB meant. */
export function memFlag(value: string): number {
  const hint = memHint(value);
  if (hint !== undefined) throw new InvalidArgumentError(`${hint}`);
  const ok = /^\d+(\.\d+)?$/.test(value.trim()) || /^\.\d+$/.test(value.trim());
  const n = Number(value);
  if (!ok || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number of MiB greater than 0.');
  return n;
}

export const OUTPUT_HELP = `output format: ${OUTPUT_FORMATS.join(', ')} (default: a table)`;
export const OBJECT_OUTPUT_HELP = `output format: ${OBJECT_FORMATS.join(', ')} (default: a description)`;

/** `-o json|yaml|wide` of the listing commands. */
export function outputOption(): Option {
  return new Option('-o, --output <format>', OUTPUT_HELP).choices(OUTPUT_FORMATS);
}
