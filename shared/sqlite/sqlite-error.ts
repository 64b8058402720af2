// The error a SQLite call throws, on either engine: `code` is SQLite's result code by name,
// extended where SQLite gives one ('SQLITE_FULL', 'SQLITE_IOERR_FSYNC',
// 'SQLITE_CONSTRAINT_PRIMARYKEY'), as better-sqlite3's SqliteError has it; the message is
// SQLite's own. storage-full.ts tells a refused write from a bug by that code.

export class SqliteError extends Error {
  readonly code: string;

  constructor(message: string, code: string) {
    super(message);
    this.name = 'SqliteError';
    this.code = code;
  }

  /** better-sqlite3 throws its own class, handed through as it is: `instanceof` holds for it too. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return value instanceof Error && value.name === 'SqliteError' && typeof (value as { code?: unknown }).code === 'string';
  }
}
