// Cairn's report client for tuning trials, for Node (ESM, no dependencies): the trial's
// parameters in, its metrics out.
//
//   import { params, report } from './cairn-report.mjs';
//   const p = params();                                      // { learning_rate: 0.05, batch_size: 32 }
//   report({ accuracy: 0.91, loss: 0.2 }, { step: 3 });      // prints: step=3 accuracy=0.91 loss=0.2
//   report({ accuracy: 0.93 });                              // prints: accuracy=0.93
//
// A trial reports by printing `name=value` lines on stdout, which the master reads; a line
// with `step=N` is an intermediate result (early stopping judges those), the latest value of
// the objective is the trial's result. params() reads $CAIRN_SANDBOX/params.json, which Cairn
// writes into every trial's sandbox (falling back to ./params.json), and returns it as it is.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const NAME = /^[A-Za-z0-9_|-]+$/;
/** A metric named like the step would be read as the step. */
const RESERVED = new Set(['step', 'epoch']);

/** The trial's parameters, from $CAIRN_SANDBOX/params.json, else ./params.json. */
export function params() {
  const sandbox = process.env.CAIRN_SANDBOX;
  const candidates = [...(sandbox ? [join(sandbox, 'params.json')] : []), 'params.json'];
  for (const path of candidates) {
    if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8'));
  }
  throw new Error('cairn-report: no params.json in $CAIRN_SANDBOX or the current directory (is this running as a Cairn trial?)');
}

/**
 * Prints one line of metrics (`step=3 accuracy=0.91 loss=0.2`) on stdout (a pipe or a file:
 * Node writes those synchronously on Linux, so the line is out when report returns).
 */
export function report(metrics, options = {}) {
  if (typeof metrics !== 'object' || metrics === null || Array.isArray(metrics)) {
    throw new TypeError('cairn-report: report() takes an object of metrics, e.g. report({ accuracy: 0.9 })');
  }
  const entries = Object.entries(metrics);
  if (entries.length === 0) throw new RangeError('cairn-report: report() needs at least one metric, e.g. report({ accuracy: 0.9 })');
  const parts = [];
  const step = options.step;
  if (step !== undefined && step !== null) {
    if (typeof step !== 'number' || !Number.isSafeInteger(step) || step < 0) throw new RangeError(`cairn-report: step must be a whole number of 0 or more, got ${String(step)}`);
    parts.push(`step=${step}`);
  }
  for (const [name, value] of entries) {
    if (!NAME.test(name)) throw new RangeError(`cairn-report: '${name}' is not a metric name (letters, digits, _, | or -)`);
    if (RESERVED.has(name.toLowerCase())) throw new RangeError(`cairn-report: '${name}' is read as the step: pass it as { step }`);
    if (typeof value !== 'number') throw new TypeError(`cairn-report: ${name} must be a number, got ${typeof value}`);
    if (!Number.isFinite(value)) throw new RangeError(`cairn-report: ${name} must be a finite number, got ${value}`);
    parts.push(`${name}=${String(value)}`);
  }
  process.stdout.write(`${parts.join(' ')}\n`);
}
