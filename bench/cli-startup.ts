// How long `cairn --version` takes as a whole process: `node bin/cairn.js --version`, from
// its start to its exit (Node's own start included), median of 20 runs after one warm-up.
// bin/cairn.js runs the compiled build (dist/) when it is current: the bench builds first if
// it is not, so the figure is the shipped program's. For comparison, the same command run
// from the TypeScript sources through tsx (what `cairn` does in an edited checkout), and a
// bare `node -e 0` (the floor no command line can go under).

import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = 20;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Wall milliseconds of each of RUNS runs of `node ARGS` (after one that is not counted). */
function time(args: string[]): { medianMs: number; minMs: number; maxMs: number } {
  const ms: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
    const took = Number(process.hrtime.bigint() - start) / 1e6;
    if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
    if (i > 0) ms.push(took);
  }
  const round = (x: number) => Number(x.toFixed(1));
  return { medianMs: round(median(ms)), minMs: round(Math.min(...ms)), maxMs: round(Math.max(...ms)) };
}

export async function run(): Promise<unknown> {
  const { compiledEntry } = (await import(pathToFileURL(join(ROOT, 'bin/compiled.js')).href)) as { compiledEntry: (root: string) => string | undefined };
  const builtFirst = compiledEntry(ROOT) === undefined;
  if (builtFirst) execFileSync(process.execPath, [join(ROOT, 'scripts/build.js')], { stdio: 'inherit' });
  const cairn = time(['bin/cairn.js', '--version']);
  // The sources may change again while the bench runs (another edit): say which code answered.
  const compiled = compiledEntry(ROOT) !== undefined;
  return {
    bench: 'cli-startup',
    command: 'node bin/cairn.js --version',
    runs: RUNS,
    node: process.version,
    builtFirst,
    compiled,
    cairnVersion: cairn,
    fromSourcesThroughTsx: time(['--import', 'tsx', 'bin/cairn.ts', '--version']),
    bareNode: time(['-e', '0']),
  };
}
