// The crash the SQLite adapter exists for: better-sqlite3 12 on Node 24 aborts the process
// (`Assertion failed: (env) != nullptr` in node::RemoveEnvironmentCleanupHook, from
// Statement::~Statement) when statements are destroyed after their environment is gone,
// WiseLibs/better-sqlite3#1515. Worker threads that prepare statements by the thousand and
// exit do that: 40 of them, 1,000 rounds each, aborted 8 runs out of 8 on Node 24.21 with
// better-sqlite3 (and 3 of 5 with 5 workers), in none of our runs on Node 20. The engine the adapter picks
// on this Node must come through it alive.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { defaultEngine } from '../../shared/sqlite/driver.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * One worker: opens a database with the engine, prepares two statements a round, drops them
 * and exits. Plain JavaScript on the engine itself (a worker here loads no TypeScript): the
 * adapter's part is which engine it picks, defaultEngine().
 */
const WORKER = `
const { workerData: { root, engine, rounds } } = require('node:worker_threads');
const { createRequire } = require('node:module');
const db = engine === 'node:sqlite'
  ? new (process.getBuiltinModule('node:sqlite').DatabaseSync)(':memory:')
  : new (createRequire(root + '/package.json')('better-sqlite3'))(':memory:');
db.exec('CREATE TABLE t (a INTEGER, b BLOB)');
for (let i = 0; i < rounds; i++) {
  db.prepare('INSERT INTO t VALUES (?, ?)').run(i, Buffer.alloc(16));
  db.prepare('SELECT * FROM t WHERE a = ?').get(i);
}
`;

/** Runs `workers` workers one after another. */
const MAIN = `
const { Worker } = require('node:worker_threads');
const [root, engine, workers, rounds] = process.argv.slice(1);
let left = Number(workers);
const next = () => {
  if (left-- === 0) return console.log('all workers exited');
  const w = new Worker(${JSON.stringify(WORKER)}, { eval: true, workerData: { root, engine, rounds: Number(rounds) } });
  w.on('error', (err) => { console.error(err); process.exitCode = 1; });
  w.on('exit', next);
};
next();
`;

it(`survives workers that leave statements behind (${defaultEngine()} on Node ${process.versions.node})`, () => {
  const r = spawnSync(process.execPath, ['--no-warnings', '-e', MAIN, ROOT, defaultEngine(), '40', '1000'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  expect(r.stderr).not.toMatch(/Assertion failed/);
  expect(r.signal, r.stderr.slice(-2000)).toBeNull();
  expect(r.status, r.stderr.slice(-2000)).toBe(0);
  expect(r.stdout).toContain('all workers exited');
}, 150_000);
