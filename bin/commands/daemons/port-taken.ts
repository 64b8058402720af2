// A daemon that cannot listen because its port is taken says which port and which flag
// chooses another, instead of the socket's "listen EADDRINUSE ..." alone.

/** A port a command listens on, and the flag (with any advice) that changes it. */
export interface PortFlag {
  port: number;
  /** e.g. "--port", or "--port (the first of 3 consecutive ports)". */
  flag: string;
}

/** The port an EADDRINUSE error names: its own `port`, else the last `:PORT` of its message. */
function takenPort(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; port?: unknown; message?: unknown };
  const message = typeof e.message === 'string' ? e.message : '';
  if (e.code !== 'EADDRINUSE' && !message.includes('EADDRINUSE')) return undefined;
  if (typeof e.port === 'number' && e.port > 0) return e.port;
  const m = /EADDRINUSE\b.*:(\d+)\b/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/**
 * "port 5050 is taken: ... give another with --port" when `err` says that one of `flags`'
 * ports is in use; undefined for any other error.
 */
export function takenPortMessage(err: unknown, flags: readonly PortFlag[]): string | undefined {
  const port = takenPort(err);
  if (port === undefined) return undefined;
  const f = flags.find((x) => x.port === port);
  if (!f) return `port ${port} is taken (another process listens on it)`;
  return `port ${port} is taken (another cairn up, or another program, listens on it): give another with ${f.flag}`;
}
