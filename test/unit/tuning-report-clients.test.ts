// The report clients Cairn ships for trials (clients/python/cairn_report.py and
// clients/node/cairn-report.mjs), run as real processes the way a trial runs them: params()
// reads the sandbox's params.json as it is, report() prints one `name=value` line the master
// reads (metrics-parse.ts), and bad input is refused with an error, never printed.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseMetricLine } from '../../master/frameworks/tuning/metrics-parse.ts';

const PYTHON = '/usr/bin/python3';
const PY_CLIENT = fileURLToPath(new URL('../../clients/python', import.meta.url));
const NODE_CLIENT = fileURLToPath(new URL('../../clients/node/cairn-report.mjs', import.meta.url));

const root = mkdtempSync(join(tmpdir(), 'cairn-report-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const sandbox = join(root, 'sandbox');
const elsewhere = join(root, 'elsewhere');
const empty = join(root, 'empty');
for (const d of [sandbox, elsewhere, empty]) mkdirSync(d);
const PARAMS = { learning_rate: 0.05, batch_size: 32, optimizer: 'sgd', 'optimizer.momentum': 0.9, use_bn: true };
writeFileSync(join(sandbox, 'params.json'), `${JSON.stringify(PARAMS)}\n`);
const CWD_PARAMS = { lr: 0.5 };
writeFileSync(join(elsewhere, 'params.json'), `${JSON.stringify(CWD_PARAMS)}\n`);

// Without CAIRN_SANDBOX from the test's own environment.
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'CAIRN_SANDBOX')) as Record<string, string>;

function python(code: string, opts: { cwd?: string; sandbox?: string } = {}) {
  const script = `import sys, json\nsys.path.insert(0, ${JSON.stringify(PY_CLIENT)})\nfrom cairn_report import params, report\n${code}\n`;
  const r = spawnSync(PYTHON, ['-c', script], { cwd: opts.cwd ?? root, env: { ...baseEnv, ...(opts.sandbox ? { CAIRN_SANDBOX: opts.sandbox } : {}) }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function node(code: string, opts: { cwd?: string; sandbox?: string } = {}) {
  const script = `import { params, report } from ${JSON.stringify(`file://${NODE_CLIENT}`)};\n${code}\n`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: opts.cwd ?? root, env: { ...baseEnv, ...(opts.sandbox ? { CAIRN_SANDBOX: opts.sandbox } : {}) }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('clients/python/cairn_report.py', () => {
  it('params() reads $CAIRN_SANDBOX/params.json as it is, else ./params.json', () => {
    const r = python('print(json.dumps(params(), sort_keys=True))', { sandbox, cwd: elsewhere });
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toEqual(PARAMS);
    expect(python('p = params(); print(type(p["batch_size"]).__name__, type(p["optimizer"]).__name__, p["use_bn"])', { sandbox }).out).toBe('int str True\n');
    expect(JSON.parse(python('print(json.dumps(params()))', { cwd: elsewhere }).out)).toEqual(CWD_PARAMS);
    // A sandbox without the file: the current directory's.
    expect(JSON.parse(python('print(json.dumps(params()))', { sandbox: empty, cwd: elsewhere }).out)).toEqual(CWD_PARAMS);
    const none = python('params()', { cwd: empty });
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/FileNotFoundError: cairn_report: no params.json in \$CAIRN_SANDBOX or the current directory/);
  });

  it('report() prints one line, step first, and flushes', () => {
    const r = python([
      'report(step=3, accuracy=0.91, loss=0.2)',
      'report(accuracy=0.93)',
      "report(step=0, **{'val|acc': 1, 'top-1': 2.5e-07, 'big': 1e+22})",
      // Flushed: the line is out before the process dies without flushing.
      'import os',
      'report(loss=0.5)',
      'os._exit(0)',
    ].join('\n'));
    expect(r.err).toBe('');
    expect(r.out).toBe('step=3 accuracy=0.91 loss=0.2\naccuracy=0.93\nstep=0 val|acc=1 top-1=2.5e-07 big=1e+22\nloss=0.5\n');
    // What the master reads of them.
    const read = r.out.trimEnd().split('\n').map((l) => parseMetricLine(l)!).map((m) => [m.step, Object.fromEntries(m.values)]);
    expect(read).toEqual([[3, { accuracy: 0.91, loss: 0.2 }], [undefined, { accuracy: 0.93 }], [0, { 'val|acc': 1, 'top-1': 2.5e-7, big: 1e22 }], [undefined, { loss: 0.5 }]]);
  });

  it('bad input raises ValueError and prints nothing', () => {
    const bad = [
      "report(accuracy=float('nan'))",
      "report(accuracy=float('inf'))",
      "report(accuracy=-float('inf'))",
      "report(**{'bad name': 1})",
      "report(**{'a.b': 1})",
      "report(**{'acc=': 1})",
      "report(accuracy='0.9')",
      'report(accuracy=True)',
      'report(accuracy=None)',
      'report(step=-1, accuracy=1)',
      'report(step=1.5, accuracy=1)',
      'report(step=2)',
      'report()',
      'report(epoch=1)',
    ];
    const code = bad.map((b) => `try:\n    ${b}\n    print('accepted: ' + ${JSON.stringify(b)})\nexcept ValueError as e:\n    sys.stderr.write('ValueError\\n')`).join('\n');
    const r = python(code);
    expect(r.out).toBe('');
    expect(r.err).toBe('ValueError\n'.repeat(bad.length));
    expect(python("report(accuracy=float('nan'))").err).toMatch(/ValueError: cairn_report: accuracy must be a finite number, got nan/);
    expect(python("report(**{'a b': 1})").err).toMatch(/ValueError: cairn_report: 'a b' is not a metric name \(letters, digits, _, \| or -\)/);
  });
});

describe('clients/node/cairn-report.mjs', () => {
  it('params() reads $CAIRN_SANDBOX/params.json as it is, else ./params.json', () => {
    const r = node('console.log(JSON.stringify(params()))', { sandbox, cwd: elsewhere });
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toEqual(PARAMS);
    expect(JSON.parse(node('console.log(JSON.stringify(params()))', { cwd: elsewhere }).out)).toEqual(CWD_PARAMS);
    expect(JSON.parse(node('console.log(JSON.stringify(params()))', { sandbox: empty, cwd: elsewhere }).out)).toEqual(CWD_PARAMS);
    const none = node('params()', { cwd: empty });
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/Error: cairn-report: no params.json in \$CAIRN_SANDBOX or the current directory/);
  });

  it('report(metrics, {step}) prints one line, step first', () => {
    const r = node([
      'report({ accuracy: 0.91, loss: 0.2 }, { step: 3 });',
      'report({ accuracy: 0.93 });',
      "report({ 'val|acc': 1, 'top-1': 2.5e-7, big: 1e22 }, { step: 0 });",
      'report({ loss: 0.5 });',
      'process.exit(0);',
    ].join('\n'));
    expect(r.err).toBe('');
    expect(r.out).toBe('step=3 accuracy=0.91 loss=0.2\naccuracy=0.93\nstep=0 val|acc=1 top-1=2.5e-7 big=1e+22\nloss=0.5\n');
    const read = r.out.trimEnd().split('\n').map((l) => parseMetricLine(l)!).map((m) => [m.step, Object.fromEntries(m.values)]);
    expect(read).toEqual([[3, { accuracy: 0.91, loss: 0.2 }], [undefined, { accuracy: 0.93 }], [0, { 'val|acc': 1, 'top-1': 2.5e-7, big: 1e22 }], [undefined, { loss: 0.5 }]]);
  });

  it('bad input throws and prints nothing', () => {
    const bad = [
      'report({ accuracy: NaN })',
      'report({ accuracy: Infinity })',
      "report({ 'bad name': 1 })",
      "report({ 'a.b': 1 })",
      "report({ accuracy: '0.9' })",
      'report({ accuracy: true })',
      'report({ accuracy: 1n })',
      'report({ accuracy: 1 }, { step: -1 })',
      'report({ accuracy: 1 }, { step: 1.5 })',
      'report({})',
      'report({ epoch: 1 })',
      'report(0.9)',
      'report(null)',
    ];
    const code = bad.map((b) => `try { ${b}; console.log('accepted: ' + ${JSON.stringify(b)}); } catch (e) { process.stderr.write(e.constructor.name + '\\n'); }`).join('\n');
    const r = node(code);
    expect(r.out).toBe('');
    expect(r.err.split('\n').filter(Boolean)).toEqual(['RangeError', 'RangeError', 'RangeError', 'RangeError', 'TypeError', 'TypeError', 'TypeError', 'RangeError', 'RangeError', 'RangeError', 'RangeError', 'TypeError', 'TypeError']);
    expect(node('report({ accuracy: NaN })').err).toMatch(/RangeError: cairn-report: accuracy must be a finite number, got NaN/);
  });
});
