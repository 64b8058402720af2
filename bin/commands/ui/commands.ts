// `cairn ui`'s handler: asks the master for a one-time login link (POST /api/v1/ui/links,
// with the CLI's credential) and opens it with xdg-open (open on macOS), or prints it
// (--print-url, or when no opener works). Exit 0 with a link; 1 when none could be made.

import { spawn } from 'node:child_process';
import { findToken } from '../../../shared/sdk/credentials.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import { clientTls } from '../common/client-tls.ts';
import type { CliIo } from '../common/io.ts';
import { MasterApiClient } from '../common/master-api-client.ts';

export interface UiOptions {
  masterUrl: string;
  printUrl: boolean;
  tls?: TlsFiles;
}

export interface LoginLink {
  code: string;
  url: string;
  expiresAtMs: number;
}

/** How long an opener may take to say it failed; one still running by then is taken to have worked. */
const OPENER_WAIT_MS = 5000;

class UiClient extends MasterApiClient {
  async link(): Promise<LoginLink> {
    return JSON.parse(await this.request('POST', '/api/v1/ui/links', 'creating a login link', { body: '{}', contentType: 'application/json' })) as LoginLink;
  }
}

/** Runs `command url`; true when it exited 0 (or is still running after OPENER_WAIT_MS). */
function tryOpen(command: string, url: string): Promise<boolean> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(command, [url], { stdio: 'ignore', detached: true });
    } catch {
      resolve(false);
      return;
    }
    const timer = setTimeout(() => {
      child.unref();
      resolve(true);
    }, OPENER_WAIT_MS);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
}

export async function runUi(o: UiOptions, io: CliIo, open: (url: string) => Promise<boolean> = openInBrowser): Promise<number> {
  let link: LoginLink;
  try {
    const token = findToken(o.masterUrl, io.env);
    const tls = clientTls(o.tls);
    link = await new UiClient(o.masterUrl, { ...(token ? { token } : {}), ...(tls ? { tls } : {}) }).link();
  } catch (err) {
    const e = err as Error & { code?: string };
    io.stderr.write(`cairn ui: ${e.message}${e.code?.startsWith('CAIRN_') ? ` (${e.code})` : ''}\n`);
    return 1;
  }
  if (o.printUrl) {
    io.stdout.write(`${link.url}\n`);
    return 0;
  }
  if (await open(link.url)) {
    io.stderr.write('cairn ui: opened the dashboard in your browser (the link logs in once, within 60 s)\n');
    return 0;
  }
  io.stderr.write('cairn ui: no browser could be opened (xdg-open/open); open this link within 60 s, it works once:\n');
  io.stdout.write(`${link.url}\n`);
  return 0;
}

async function openInBrowser(url: string): Promise<boolean> {
  return tryOpen(process.platform === 'darwin' ? 'open' : 'xdg-open', url);
}
