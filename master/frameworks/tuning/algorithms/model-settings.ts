// Reading an algorithm's settings (Katib's name/value strings) into numbers and flags, and
// refusing what cannot be meant, naming the setting: `algorithm.settings.n_startup_trials`.

import { badRequest } from '../../../../shared/errors.ts';
import type { AlgorithmSettings } from './types.ts';

export function settingField(name: string): string {
  return `algorithm.settings.${name}`;
}

/** Refuses a setting the algorithm does not know, which is most often a misspelt one. */
export function refuseUnknownSettings(settings: AlgorithmSettings, known: readonly string[]): void {
  for (const name of Object.keys(settings)) {
    if (!known.includes(name)) {
      throw badRequest(settingField(name), `unknown setting '${name}' (known: ${known.length ? known.join(', ') : 'none'})`);
    }
  }
}

/** An integer in [min, max]; the default when the setting is absent. */
export function intSetting(settings: AlgorithmSettings, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const text = settings[name];
  if (text === undefined) return fallback;
  const v = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(v) || v < min || v > max) {
    throw badRequest(settingField(name), `must be an integer in [${min}, ${max}], got '${text}'`);
  }
  return v;
}

/** A finite number in (min, max] or [min, max]; the default when absent. */
export function numberSetting(
  settings: AlgorithmSettings,
  name: string,
  fallback: number,
  range: { min: number; max: number; minExclusive?: boolean; maxExclusive?: boolean },
): number {
  const text = settings[name];
  if (text === undefined) return fallback;
  const v = Number(text.trim());
  const low = range.minExclusive ? v > range.min : v >= range.min;
  const high = range.maxExclusive ? v < range.max : v <= range.max;
  if (text.trim() === '' || !Number.isFinite(v) || !low || !high) {
    const l = range.minExclusive ? '(' : '[';
    const r = range.maxExclusive ? ')' : ']';
    throw badRequest(settingField(name), `must be a number in ${l}${range.min}, ${range.max}${r}, got '${text}'`);
  }
  return v;
}

/** "true" or "false" (any case); the default when absent. */
export function boolSetting(settings: AlgorithmSettings, name: string, fallback: boolean): boolean {
  const text = settings[name];
  if (text === undefined) return fallback;
  const t = text.trim().toLowerCase();
  if (t === 'true') return true;
  if (t === 'false') return false;
  throw badRequest(settingField(name), `must be 'true' or 'false', got '${text}'`);
}

/**
 * Katib's `random_state` (hyperopt's and skopt's seed), when given, replaces the experiment's
 * seed, so a Katib experiment that pins it gets the same proposals on every run.
 */
export function seedSetting(settings: AlgorithmSettings, seed: number): number {
  return intSetting(settings, 'random_state', seed, 0, 2 ** 32 - 1);
}
