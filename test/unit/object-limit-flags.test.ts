// `cairn master`'s object quotas and task environment cap: sizes with binary units, refused
// with the flag's name when out of range, and left out when not given (the master's defaults).

import { describe, expect, it } from 'vitest';
import { runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import { bytesFlag } from '../../bin/commands/common/flags.ts';

async function parseMaster(flags: string[]): Promise<{ code: number; options: any; err: string }> {
  let err = '';
  let options: unknown;
  const handlers = { master: async (o: unknown) => ((options = o), 0) } as unknown as CommandHandlers;
  const io = { stdout: { write: () => true }, stderr: { write: (s: string) => ((err += s), true) }, env: {}, onInterrupt: () => () => undefined };
  const code = await runCli(['master', ...flags], io as never, handlers);
  return { code, options, err };
}

describe('the object limit flags', () => {
  it('reads sizes with binary units', () => {
    const f = bytesFlag(1024, 2 ** 40);
    expect(f('65536')).toBe(65536);
    expect(f('128KiB')).toBe(128 * 1024);
    expect(f('64MiB')).toBe(64 * 1024 ** 2);
    expect(f('1g')).toBe(1024 ** 3);
    expect(() => f('12 parsecs')).toThrow(/KiB, MiB or GiB/);
    expect(() => f('10')).toThrow(/from 1024/);
  });

  it('passes each given limit to the master, and none when none is given', async () => {
    const r = await parseMaster(['--max-objects-per-principal', '50', '--max-object-bytes-per-principal', '8MiB', '--max-task-env', '256KiB']);
    expect(r.code).toBe(0);
    expect(r.options.objectLimits).toEqual({ maxObjectsPerPrincipal: 50, maxObjectBytesPerPrincipal: 8 * 1024 ** 2, maxTaskEnvBytes: 256 * 1024 });
    expect((await parseMaster(['--max-task-env', '64KiB'])).options.objectLimits).toEqual({ maxTaskEnvBytes: 64 * 1024 });
    expect((await parseMaster([])).options).not.toHaveProperty('objectLimits');
    const bad = await parseMaster(['--max-task-env', '2MiB']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--max-task-env');
  });
});
