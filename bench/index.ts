// `npm run bench -- NAME [NAME...]`: runs benchmarks and prints each one's JSON figures.
// Each bench/NAME.ts exports `run(): Promise<unknown>`. With no name, lists them.

import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'index.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3));

const names = process.argv.slice(2).filter((a) => !a.startsWith('-'));
if (names.length === 0) {
  console.error(`usage: npm run bench -- NAME...   (available: ${available.join(', ')})`);
  process.exit(2);
}
for (const name of names) {
  if (!available.includes(name)) {
    console.error(`unknown benchmark '${name}' (available: ${available.join(', ')})`);
    process.exit(2);
  }
}
for (const name of names) {
  const mod = (await import(`./${name}.ts`)) as { run: () => Promise<unknown> };
  const result = await mod.run();
  console.log(JSON.stringify(result, null, 2));
}
process.exit(0);
