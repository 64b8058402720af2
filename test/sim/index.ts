// `npm run sim -- NAME [--seeds N] [--seed S] [--trace ID]`: long deterministic simulations, beyond the
// fixed seeds `npm test` runs. Each test/sim/NAME.sim.ts exports
// `run(opts: { seeds: number; seed?: number }): Promise<unknown>` and returns JSON-able
// results; a failing seed throws with `reproduce with --seed N` in its message.

import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const available = readdirSync(here).filter((f) => f.endsWith('.sim.ts')).map((f) => f.slice(0, -'.sim.ts'.length));

const args = process.argv.slice(2);
function flag(name: string): number | undefined {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 0) {
    console.error(`--${name} needs a non-negative integer, got '${args[i + 1]}'`);
    process.exit(2);
  }
  return v;
}
const seeds = flag('seeds') ?? 100;
const seed = flag('seed');
// --trace ID: print what happens to that task or agent (simulations that support it: cluster).
const traceAt = args.indexOf('--trace');
const trace = traceAt >= 0 ? args[traceAt + 1] : undefined;
const names = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
const chosen = names.length > 0 ? names : available;
for (const n of chosen) {
  if (!available.includes(n)) {
    console.error(`unknown simulation '${n}' (available: ${available.join(', ') || 'none'})`);
    process.exit(2);
  }
}
for (const n of chosen) {
  const mod = (await import(`./${n}.sim.ts`)) as { run: (o: { seeds: number; seed?: number; trace?: string }) => Promise<unknown> };
  console.log(JSON.stringify({ sim: n, ...(await mod.run({ seeds, seed, trace })) as object }, null, 2));
}
process.exit(0);
