#!/usr/bin/env node
// The `cairn` command. It runs the compiled JavaScript in dist/ (scripts/build.js, which
// `npm install` and `npm pack` run) when that build is present and no source changed after
// it; in a source checkout without a build, or edited since the last one, it runs the
// TypeScript sources through tsx instead: the same program, slower to start.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compiledEntry } from './compiled.js';

const entry = compiledEntry(fileURLToPath(new URL('..', import.meta.url)));
if (entry !== undefined) {
  await import(pathToFileURL(entry).href);
} else {
  let tsx;
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    console.error(`cairn: ${fileURLToPath(new URL('..', import.meta.url))} holds neither a current build (dist/) nor tsx to run its sources: run \`npm install\` there`);
    process.exit(1);
  }
  tsx.register();
  await import('./cairn.ts');
}
