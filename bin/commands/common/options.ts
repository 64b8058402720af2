// What every command that talks to a master is handed: the master's URL and the command
// line's TLS as a client; and the `-o` of the listing commands.

import type { TlsFiles } from '../../../shared/tls.ts';
import type { OutputFormat } from './output.ts';

export const DEFAULT_MASTER_URL = 'http://127.0.0.1:5050';

export interface MasterClientCommandOptions {
  masterUrl: string;
  /** The command line's TLS as a client (client-tls.ts). */
  tls?: TlsFiles;
}

/** `-o json|yaml|wide`; absent: the table. */
export interface OutputOption {
  output?: OutputFormat;
}

export type ListOptions = MasterClientCommandOptions & OutputOption;
