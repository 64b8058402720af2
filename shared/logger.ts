// Process-wide structured logging (pino). Level from CAIRN_LOG_LEVEL (default info);
// tests pass a silent logger instead.

import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string): Logger {
  return pino({ name, level: process.env.CAIRN_LOG_LEVEL ?? 'info' });
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
