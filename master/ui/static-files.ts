// The web dashboard's files: `GET /ui` (and `/ui/`) is master/ui/static/index.html, `/ui/<path>`
// a file under master/ui/static/, and `/ui/vendor/*` the browser builds of the npm packages the
// page imports (preact, its hooks, htm, uPlot). They hold no data, so they need no token (the
// auth hook lets exactly these routes through); every /api call the page makes does.
//
// A path is resolved inside the folder or refused: `..`, encoded or not, absolute paths, NUL
// and hidden files answer 404, as does anything that is not a plain file.

import type { FastifyInstance, FastifyReply } from 'fastify';
import { readFile, realpath, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the page's files are: beside this module, in the sources and in dist/ alike (scripts/build.js copies them). */
export const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static');

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** `/ui/vendor/<name>` → the installed package and the file in it. */
const VENDOR: Readonly<Record<string, { pkg: string; file: string }>> = {
  'preact.mjs': { pkg: 'preact', file: 'dist/preact.mjs' },
  'hooks.mjs': { pkg: 'preact', file: 'hooks/dist/hooks.mjs' },
  'htm.mjs': { pkg: 'htm', file: 'dist/htm.mjs' },
  'uplot.mjs': { pkg: 'uplot', file: 'dist/uPlot.esm.js' },
  'uplot.css': { pkg: 'uplot', file: 'dist/uPlot.min.css' },
};

export function contentTypeOf(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

/** The folder of an installed package, as Node resolves it from here. */
function packageDir(pkg: string): string | undefined {
  try {
    const main = createRequire(import.meta.url).resolve(pkg);
    const marker = `${sep}node_modules${sep}${pkg}${sep}`;
    const at = main.lastIndexOf(marker);
    return at < 0 ? undefined : main.slice(0, at + marker.length - 1);
  } catch {
    return undefined;
  }
}

/**
 * The file `rel` (the part after /ui/, still URL-encoded) names under `root`, or undefined
 * when it names none there: no segment may be empty, `.`, `..` or hidden, and the real path
 * (links followed) must stay inside the real root.
 */
export async function resolveInside(root: string, rel: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rel);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return undefined;
  const parts = decoded.split('/');
  if (parts.some((p) => p === '' || p.startsWith('.'))) return undefined;
  try {
    const realRoot = await realpath(root);
    const file = await realpath(join(realRoot, ...parts));
    if (!file.startsWith(realRoot + sep)) return undefined;
    return (await stat(file)).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

function notFound(reply: FastifyReply, what: string): FastifyReply {
  return reply.code(404).send({ code: 'CAIRN_NOT_FOUND', message: `no such file: ${what}` });
}

async function sendFile(reply: FastifyReply, file: string, cache: string): Promise<FastifyReply> {
  const body = await readFile(file);
  return reply
    .code(200)
    .type(contentTypeOf(file))
    .header('cache-control', cache)
    .header('x-content-type-options', 'nosniff')
    // Never framed by another page (clickjacking); the Referer never carries the page's URL.
    .header('x-frame-options', 'DENY')
    .header('content-security-policy', "frame-ancestors 'none'")
    .header('referrer-policy', 'no-referrer')
    .send(body);
}

export function registerStaticUi(app: FastifyInstance, dir: string = STATIC_DIR): void {
  // The page changes with every release; `no-cache` makes the browser revalidate (cheap, local).
  const index = async (_req: unknown, reply: FastifyReply) => {
    const file = await resolveInside(dir, 'index.html');
    return file ? sendFile(reply, file, 'no-cache') : notFound(reply, '/ui/index.html');
  };
  app.get('/ui', index);
  app.get('/ui/', index);
  app.get<{ Params: { '*': string } }>('/ui/*', async (req, reply) => {
    // The raw path, not fastify's decoded parameter: decoding happens once, in resolveInside.
    const rawPath = req.url.split('?')[0]!;
    const rel = rawPath.slice('/ui/'.length);
    if (rel.startsWith('vendor/')) {
      const v = VENDOR[rel.slice('vendor/'.length)];
      const pkgDir = v ? packageDir(v.pkg) : undefined;
      const file = v && pkgDir ? await resolveInside(pkgDir, v.file) : undefined;
      return file ? sendFile(reply, file, 'no-cache') : notFound(reply, rawPath);
    }
    const file = await resolveInside(dir, rel);
    return file ? sendFile(reply, file, 'no-cache') : notFound(reply, rawPath);
  });
}
