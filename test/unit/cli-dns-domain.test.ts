// `--dns-domain` on `cairn master` and `cairn up`, and `--domain`, its earlier name: both
// reach the daemon as its zone, both are in --help, and giving both is a usage error.

import { describe, expect, it } from 'vitest';
import { runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';

async function parse(argv: string[]): Promise<{ code: number; options: any; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env: {},
    onInterrupt: () => () => undefined,
  };
  let options: any;
  const record = async (o: unknown) => {
    options = o;
    return 0;
  };
  const handlers: Partial<CommandHandlers> = { up: record, master: record };
  const code = await runCli(argv, io, handlers);
  return { code, options, out, err };
}

describe.each(['master', 'up'])('cairn %s: the DNS zone', (command) => {
  it('takes --dns-domain, lower-cased and without the dots at its ends', async () => {
    const r = await parse([command, '--dns-domain', 'Mesos.']);
    expect(r.code).toBe(0);
    expect(r.options.domain).toBe('mesos');
    expect(r.options).not.toHaveProperty('dnsDomain');
  });

  it('still takes --domain, its earlier name', async () => {
    const r = await parse([command, '--domain', 'cluster.example']);
    expect(r.code).toBe(0);
    expect(r.options.domain).toBe('cluster.example');
  });

  it('leaves the zone to the master when neither is given', async () => {
    const r = await parse([command]);
    expect(r.code).toBe(0);
    expect(r.options).not.toHaveProperty('domain');
  });

  it('refuses both at once, naming them', async () => {
    const r = await parse([command, '--dns-domain', 'mesos', '--domain', 'cairn']);
    expect(r.code).toBe(2);
    expect(r.options).toBeUndefined();
    expect(r.err).toMatch(/--domain <domain>.*cannot be used with.*--dns-domain <domain>/);
  });

  it('refuses a name that is not a domain, naming the flag', async () => {
    const r = await parse([command, '--dns-domain', 'not_a domain']);
    expect(r.code).toBe(2);
    expect(r.options).toBeUndefined();
    expect(r.err).toMatch(/--dns-domain <domain>.*must be a domain name/);
  });

  it('documents both in --help', async () => {
    const r = await parse([command, '--help']);
    expect(r.out).toMatch(/--dns-domain <domain>\s+the DNS zone tasks are named in/);
    expect(r.out).toMatch(/--domain <domain>\s+the same as --dns-domain/);
  });
});
