// Cairn's import rules (.dependency-cruiser.cjs), checked over master/, agent/, shared/ and bin/
// on every `npm test`. A second test plants one import per rule in a scratch tree laid out like
// the repository and expects exactly those violations, so a cruiser that silently stops reading
// TypeScript (dependency-cruiser cannot use TypeScript 7 as its parser) fails here instead of
// passing with nothing to check.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RULES = join(ROOT, '.dependency-cruiser.cjs');
const CRUISED = ['master', 'agent', 'shared', 'bin'];

async function cruiseTree(baseDir: string, dirs: readonly string[]): Promise<ICruiseResult> {
  const options = await extractDepcruiseOptions(RULES);
  const { output } = await cruise([...dirs], { ...options, baseDir });
  if (typeof output === 'string') throw new Error('expected a cruise result, got a report');
  return output;
}

function describeViolation(v: IViolation): string {
  const cycle = v.cycle?.length ? ` (cycle: ${[v.from, ...v.cycle.map((d) => d.name)].join(' → ')})` : '';
  return `${v.from} → ${v.to} [${v.rule.name}]${cycle}`;
}

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `${dir}/${f.split('\\').join('/')}`);
}

describe('import rules', () => {
  it('hold for master/, agent/, shared/ and bin/', async () => {
    const result = await cruiseTree(ROOT, CRUISED);
    // The cruise really read the TypeScript: every file with an import has dependencies.
    const bySource = new Map(result.modules.map((m) => [m.source, m]));
    const unread = CRUISED.flatMap(tsFiles).filter((file) => {
      const imports = /^\s*(import|export)\b[^;]*?\bfrom\s+'/m.test(readFileSync(join(ROOT, file), 'utf8'));
      return imports && !(bySource.get(file)?.dependencies.length);
    });
    expect(unread, 'files whose imports the cruiser did not see').toEqual([]);

    const found = result.summary.violations.map(describeViolation);
    expect(found, `import rule violations:\n  ${found.join('\n  ')}\n`).toEqual([]);
  });

  it("place every file of master/ in one of master/'s layers", () => {
    // A folder or file left out of MASTER_LAYERS would be in no layer rule, free to import anything.
    const layerRules = rulesConfig().forbidden.filter((r) => r.name.startsWith('master-layer-')) as { from: { path: string[] }; to: { path: string[] } }[];
    const placed = layerRules.flatMap((r) => [...r.from.path, ...r.to.path]).map((p) => new RegExp(p));
    const unplaced = tsFiles('master').filter((f) => !placed.some((p) => p.test(f)));
    expect(unplaced, 'add these to MASTER_LAYERS in .dependency-cruiser.cjs').toEqual([]);
  });

  it('catch one planted import per rule, and nothing else', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'cairn-import-rules-'));
    try {
      // Stand-ins for real files (the rules look at paths only), then the planted imports.
      const files: Record<string, string> = {
        'master/master.ts': `export const master = 1;\n`,
        'master/membership.ts': `export const metrics = 1;\n`,
        'master/allocator/allocator.ts': `export const allocator = 1;\n`,
        'agent/agent.ts': `export const agent = 1;\n`,
        'master/entry.ts': `export { master } from './master.ts';\n`,
        'agent/entry.ts': `export { agent } from './agent.ts';\n`,
        'master/leader/leader-core.ts': `export const core = 1;\n`,
        'shared/random.ts': `export const random = 1;\n`,
        'shared/sdk/scheduler-client.ts': `export const SchedulerClient = 1;\n`,
        'shared/jobs/model.ts': `export const jobs = 1;\n`,
        'shared/__planted_violation.ts': `import { master } from '../master/master.ts';\nexport const x = master;\n`,
        'master/leader/__planted.ts': `import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n`,
        // Type-only, and still forbidden: the swc parser keeps `import type`.
        'master/leader/__planted_logger.ts': `import type { Logger } from 'pino';\nexport type X = Logger;\n`,
        'master/leader/__planted_shell.ts': `import { metrics } from '../membership.ts';\nexport const x = metrics;\n`,
        'master/__planted_agent.ts': `import { agent } from '../agent/agent.ts';\nexport const x = agent;\n`,
        'agent/__planted_master.ts': `import { master } from '../master/master.ts';\nexport const x = master;\n`,
        // The command line starts the daemons through their entries, and imports nothing else of them.
        'bin/commands/__planted.ts': `import { core } from '../../master/leader/leader-core.ts';\nexport const x = core;\n`,
        'bin/commands/__planted_allowed.ts':
          `import { master } from '../../master/entry.ts';\nimport { agent } from '../../agent/entry.ts';\n` +
          `import { random } from '../../shared/random.ts';\nexport const x = [master, agent, random];\n`,
        'master/frameworks/__planted.ts': `import { allocator } from '../allocator/allocator.ts';\nexport const x = allocator;\n`,
        // A SQLite engine is named in shared/sqlite/ only (its type too).
        'shared/__planted_sqlite.ts': `import type Database from 'better-sqlite3';\nexport type X = Database.Database;\n`,
        'shared/sqlite/__planted_allowed.ts': `import type Database from 'better-sqlite3';\nexport type X = Database.Database;\n`,
        'shared/__planted_cycle_a.ts': `import { b } from './__planted_cycle_b.ts';\nexport const a = () => b;\n`,
        'shared/__planted_cycle_b.ts': `import { a } from './__planted_cycle_a.ts';\nexport const b = () => a;\n`,
        // The shells beside a core may do I/O; the core may not import them.
        'shared/raft/sqlite-storage.ts': `import { mkdirSync } from 'node:fs';\nexport const open = mkdirSync;\n`,
        'shared/gossip/udp-node.ts': `import { createSocket } from 'node:dgram';\nexport const udp = createSocket;\n`,
        'shared/raft/__planted.ts': `import { open } from './sqlite-storage.ts';\nexport const x = open;\n`,
        // Allowed: a core importing other cores and a builtin that does no I/O.
        'master/leader/__planted_allowed.ts':
          `import { join } from 'node:path';\nimport { random } from '../../shared/random.ts';\n` +
          `import { allocator } from '../allocator/allocator.ts';\nexport const x = [join, random, allocator];\n`,
        // master/'s layers (MASTER_LAYERS): one import up from each layer but the top, each
        // caught by its layer's rule (the leader's is __planted_shell.ts above).
        'master/server.ts': `export const server = 1;\n`,
        'master/registry/__planted_layer.ts': `import { x } from '../replication/__planted_layer.ts';\nexport const y = x;\n`,
        'master/replication/__planted_layer.ts': `import { x } from '../dns/__planted_layer.ts';\nexport const y = x;\n`,
        'master/dns/__planted_layer.ts': `import { x } from '../auth/__planted_layer.ts';\nexport const y = x;\n`,
        'master/auth/__planted_layer.ts': `import { core } from '../leader/leader-core.ts';\nexport const x = core;\n`,
        'master/agents/__planted_layer.ts': `import { x } from '../frameworks/__planted_layer.ts';\nexport const y = x;\n`,
        'master/frameworks/__planted_layer.ts': `import { x } from '../ui/__planted_layer.ts';\nexport const y = x;\n`,
        'master/framework-host/__planted_layer.ts': `import { x } from '../api/__planted_layer.ts';\nexport const y = x;\n`,
        'master/secrets/__planted_layer.ts': `import { x } from '../frameworks/__planted_layer.ts';\nexport const y = x;\n`,
        'master/api/__planted_layer.ts': `import { x } from '../ui/__planted_layer.ts';\nexport const y = x;\n`,
        'master/ui/__planted_layer.ts': `import { server } from '../server.ts';\nexport const x = server;\n`,
        // A framework imports shared/ and its own folder only: not the master, not another framework.
        'master/sharing/object-quota.ts': `export const objectKey = 1;\n`,
        'master/frameworks/jobs/runtime.ts': `export const runtime = 1;\n`,
        'master/frameworks/jobs/__planted_boundary.ts': `import { objectKey } from '../../sharing/object-quota.ts';\nexport const x = objectKey;\n`,
        'master/frameworks/tuning/__planted_boundary.ts': `import { runtime } from '../jobs/runtime.ts';\nexport const x = runtime;\n`,
        // A framework that opens a scheduler client itself, and a runtime file that does HTTP or knows a framework.
        'master/frameworks/jobs/__planted_client.ts': `import { SchedulerClient } from '../../../shared/sdk/scheduler-client.ts';\nexport const x = SchedulerClient;\n`,
        'shared/framework-runtime/__planted_io.ts': `import http from 'node:http';\nimport { jobs } from '../jobs/model.ts';\nexport const x = [http, jobs];\n`,
        'shared/framework-runtime/http-transport.ts': `import { SchedulerClient } from '../sdk/scheduler-client.ts';\nexport const x = SchedulerClient;\n`,
        'master/frameworks/tuning/__planted_allowed.ts':
          `import { x } from './__planted_boundary.ts';\nimport { random } from '../../../shared/random.ts';\nexport const y = [x, random];\n`,
        // Two folders importing each other, with no module cycle: a cycle between folders.
        'master/__planted_fold_a/a.ts': `import { b } from '../__planted_fold_b/b.ts';\nexport const a = b;\n`,
        'master/__planted_fold_b/b.ts': `export const b = 1;\n`,
        'master/__planted_fold_b/c.ts': `import { a } from '../__planted_fold_a/a.ts';\nexport const c = a;\n`,
      };
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(join(scratch, dirname(file)), { recursive: true });
        writeFileSync(join(scratch, file), text);
      }
      symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'), 'dir');

      const result = await cruiseTree(scratch, ['master', 'agent', 'shared', 'bin']);
      const found = result.summary.violations
        // better-sqlite3 resolves to its code, or to its types where the optional module is not installed.
        .map((v) => `${v.from} → ${v.to.replace(/^.*node_modules\//, 'node_modules/').replace(/^node_modules\/(@types\/)?better-sqlite3\/.*/, 'better-sqlite3')} [${v.rule.name}]`)
        .sort();
      expect(found).toEqual([
        'agent/__planted_master.ts → master/master.ts [agent-and-master-apart]',
        'bin/commands/__planted.ts → master/leader/leader-core.ts [cli-imports-only-daemon-entries]',
        'master/__planted_agent.ts → agent/agent.ts [agent-and-master-apart]',
        'master/__planted_fold_a → master/__planted_fold_b [no-master-folder-cycles]',
        'master/__planted_fold_b → master/__planted_fold_a [no-master-folder-cycles]',
        'master/agents/__planted_layer.ts → master/frameworks/__planted_layer.ts [master-layer-shell]',
        'master/api/__planted_layer.ts → master/ui/__planted_layer.ts [master-layer-api]',
        'master/auth/__planted_layer.ts → master/leader/leader-core.ts [master-layer-auth]',
        'master/dns/__planted_layer.ts → master/auth/__planted_layer.ts [master-layer-dns]',
        'master/framework-host/__planted_layer.ts → master/api/__planted_layer.ts [master-layer-framework-host]',
        'master/frameworks/__planted.ts → master/allocator/allocator.ts [frameworks-import-no-allocator]',
        'master/frameworks/__planted_layer.ts → master/ui/__planted_layer.ts [master-layer-frameworks]',
        'master/frameworks/jobs/__planted_boundary.ts → master/sharing/object-quota.ts [frameworks-import-only-shared]',
        'master/frameworks/jobs/__planted_client.ts → shared/sdk/scheduler-client.ts [frameworks-run-on-the-runtime]',
        'master/frameworks/tuning/__planted_boundary.ts → master/frameworks/jobs/runtime.ts [frameworks-import-only-shared]',
        'master/leader/__planted.ts → fs [core-imports-no-io]',
        'master/leader/__planted_logger.ts → node_modules/pino/pino.js [core-imports-no-io]',
        'master/leader/__planted_shell.ts → master/membership.ts [core-imports-only-cores]',
        'master/leader/__planted_shell.ts → master/membership.ts [master-layer-leader]',
        'master/registry/__planted_layer.ts → master/replication/__planted_layer.ts [master-layer-base]',
        'master/replication/__planted_layer.ts → master/dns/__planted_layer.ts [master-layer-policy]',
        'master/secrets/__planted_layer.ts → master/frameworks/__planted_layer.ts [master-layer-secrets]',
        'master/ui/__planted_layer.ts → master/server.ts [master-layer-ui]',
        'shared/__planted_cycle_a.ts → shared/__planted_cycle_b.ts [no-cycles]', // one per cycle
        'shared/__planted_sqlite.ts → better-sqlite3 [sqlite-through-the-adapter]',
        'shared/__planted_violation.ts → master/master.ts [shared-imports-no-daemon]',
        'shared/framework-runtime/__planted_io.ts → http [framework-runtime-io-through-transport]',
        'shared/framework-runtime/__planted_io.ts → shared/jobs/model.ts [framework-runtime-io-through-transport]',
        'shared/raft/__planted.ts → shared/raft/sqlite-storage.ts [core-imports-only-cores]',
      ]);
      // A layer added to MASTER_LAYERS needs its plant here too.
      const layerRules = new Set(rulesConfig().forbidden.map((r) => r.name).filter((n) => n.startsWith('master-layer-')));
      const caught = new Set(result.summary.violations.map((v) => v.rule.name).filter((n) => n.startsWith('master-layer-')));
      expect([...caught].sort()).toEqual([...layerRules].sort());
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

/**
 * Imports are not the only way out of a core: a global clock, timer or random source needs
 * none. The cores (as the rules name them) must not mention them outside comments; the
 * simulations make them throw as well, but only on the paths a run happens to take.
 */
const NONDETERMINISTIC = /\b(Date\.now|new Date\(|performance\.now|Math\.random|setTimeout|setInterval|setImmediate|queueMicrotask|process\.(hrtime|env|nextTick))\b/;

function rulesConfig(): { forbidden: { name: string; from: { path: string[] }; to: { path?: string[] } }[] } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return createRequire(import.meta.url)(RULES) as ReturnType<typeof rulesConfig>;
}

function coreFiles(): string[] {
  const patterns = rulesConfig().forbidden.find((r) => r.name === 'core-imports-no-io')!.from.path.map((p) => new RegExp(p));
  return CRUISED.flatMap(tsFiles).filter((f) => patterns.some((p) => p.test(f)));
}

function nondeterministicUses(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
  return code.split('\n').filter((line) => NONDETERMINISTIC.test(line)).map((l) => l.trim());
}

describe('pure cores', () => {
  it('read no clock, set no timer and draw no unseeded chance', () => {
    const files = coreFiles();
    expect(files).toContain('master/leader/leader-core.ts');
    expect(files).toContain('shared/raft/raft.ts');
    const found = files.flatMap((f) => nondeterministicUses(readFileSync(join(ROOT, f), 'utf8')).map((l) => `${f}: ${l}`));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('the check bites on a planted clock read, and not on a comment', () => {
    expect(nondeterministicUses('const t = Date.now();\n// Date.now is not read here\n')).toEqual(['const t = Date.now();']);
    expect(nondeterministicUses('/* setTimeout */ const x = 1;')).toEqual([]);
  });
});
