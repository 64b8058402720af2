// The daemons' log flags (--log-format, --log-level) and what they come to with the
// environment (CAIRN_LOG_FORMAT, CAIRN_LOG_LEVEL) and the terminal: a flag wins over its
// variable; left out, lines are text on a terminal and JSON elsewhere, at info.

import { Option, type Command } from 'commander';
import { CairnError } from '../../../shared/errors.ts';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevelName } from '../../../shared/logger.ts';
import type { LogFlags } from './options.ts';

/** Adds --log-format and --log-level to a daemon's command. */
export function addLogOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--log-format <format>', 'log lines as text (time level component: message key=value) or json, one object a line (default: $CAIRN_LOG_FORMAT, else text when stderr is a terminal, json otherwise)').choices(LOG_FORMATS))
    .addOption(new Option('--log-level <level>', 'the least level logged (default: $CAIRN_LOG_LEVEL, else info)').choices(LOG_LEVELS));
}

/** The log flags that were given, as options. */
export function logFlags(o: LogFlagValues): { log?: LogFlags } {
  if (o.logFormat === undefined && o.logLevel === undefined) return {};
  return { log: { ...(o.logFormat !== undefined ? { format: o.logFormat } : {}), ...(o.logLevel !== undefined ? { level: o.logLevel } : {}) } };
}

export interface LogSettings {
  format: LogFormat;
  level: LogLevelName;
  /** Text on a terminal without NO_COLOR: the level in colour. */
  color: boolean;
}

/** Flags, then the environment, then the defaults; a bad variable is an error naming it. */
export function logSettings(flags: LogFlags | undefined, env: Readonly<Record<string, string | undefined>>, stderrIsTty: boolean): LogSettings {
  const fromEnv = <T extends string>(variable: string, allowed: readonly T[]): T | undefined => {
    const v = env[variable];
    if (v === undefined || v === '') return undefined;
    if (!(allowed as readonly string[]).includes(v)) throw new CairnError('CAIRN_BAD_FLAG', `'${v}' is not one of ${allowed.join(', ')}`, variable);
    return v as T;
  };
  const format = flags?.format ?? fromEnv('CAIRN_LOG_FORMAT', LOG_FORMATS) ?? (stderrIsTty ? 'text' : 'json');
  const level = flags?.level ?? fromEnv('CAIRN_LOG_LEVEL', LOG_LEVELS) ?? 'info';
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  return { format, level, color: format === 'text' && stderrIsTty && !noColor };
}

/** The log flags as commander parses them. */
export interface LogFlagValues {
  logFormat?: LogFormat;
  logLevel?: LogLevelName;
}
