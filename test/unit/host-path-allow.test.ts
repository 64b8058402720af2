// Which host paths a container may mount: what the master refuses at submit (shared/
// host-paths.ts), and the agent's operator allow-list (--host-path-allow), which refuses at
// start a directory that is or holds the host's root, the Docker socket or the agent's own
// directories, and judges each volume by where its symlinks lead.

import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostPathProblem } from '../../shared/host-paths.ts';
import { HostPathAllowList } from '../../agent/executors/docker/host-path-allow.ts';
import { compileAgentOptions } from '../../agent/options.ts';
import { CairnError } from '../../shared/errors.ts';

const root = mkdtempSync(join(tmpdir(), 'cairn-hostpaths-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function flagError(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    return err as CairnError;
  }
  throw new Error('expected a refusal');
}

describe('host paths the master refuses at submit', () => {
  it('refuses the root, the kernel, devices, configuration, the Docker socket and unnormalised paths', () => {
    for (const p of ['/', '/proc', '/proc/1/root', '/sys', '/dev', '/dev/sda', '/etc', '/etc/shadow', '/boot', '/var/run/docker.sock', '/run/docker.sock', '/var/run', '/var', '/run', 'rel', '/srv/../etc', '/srv/./x', '//etc', '/srv/', '/a\0b']) {
      expect(hostPathProblem(p), p).toBeDefined();
    }
    expect(hostPathProblem('/')).toMatch(/root/);
    expect(hostPathProblem('/var/run')).toMatch(/Docker daemon's socket/);
  });

  it('leaves ordinary data directories to the agent', () => {
    for (const p of ['/srv/data', '/mnt/dcos', '/data/mnist', '/var/lib/datasets', '/run/user-data', '/tmp/x', '/etcetera']) expect(hostPathProblem(p), p).toBeUndefined();
  });
});

describe('the agent\'s host path allow-list', () => {
  const work = join(root, 'work');
  const data = join(root, 'data');
  const other = join(root, 'other');
  mkdirSync(work);
  mkdirSync(join(data, 'sets'), { recursive: true });
  mkdirSync(other);
  symlinkSync('/', join(data, 'to-root'));
  symlinkSync(other, join(data, 'to-other'));
  const guards = { dockerSocket: '/var/run/docker.sock', ownDirs: [work, join(work, 'job-dirs')] };

  it('allows nothing by default, naming the path and the flag', () => {
    expect(HostPathAllowList.none().refusal('/srv/data')).toMatch(/'\/srv\/data'.*--host-path-allow names none/);
    expect(HostPathAllowList.compile([], guards).refusal(data)).toMatch(/--host-path-allow/);
  });

  it('allows what lies under a listed directory, judged where its symlinks lead', () => {
    const list = HostPathAllowList.compile([data], guards);
    expect(list.refusal(data)).toBeUndefined();
    expect(list.refusal(join(data, 'sets'))).toBeUndefined();
    expect(list.refusal(join(data, 'not-yet', 'made'))).toBeUndefined();
    expect(list.refusal(other)).toMatch(/is not under a directory of this agent's --host-path-allow/);
    expect(list.refusal(`${data}-sibling`)).toMatch(/not under/);
    expect(list.refusal(join(data, 'to-other'))).toMatch(/resolves to/);
    expect(list.refusal(join(data, 'to-root', 'etc'))).toMatch(/resolves to '\/etc'/);
    expect(list.refusal('/')).toMatch(/root/);
  });

  it('refuses at start a directory that is or holds the root, the Docker socket or the agent\'s own directories, naming it', () => {
    for (const [dir, why] of [
      ['/', /root/],
      ['/var/run', /socket/],
      [join(root, 'sock-dir'), /holds the Docker daemon's socket/],
      [root, /holds the Docker daemon's socket|overlaps/],
      [work, /overlaps/],
      [join(work, 'sandboxes'), /overlaps/],
      [join(data, 'to-root'), /resolves to the host's root/],
      ['relative', /absolute/],
    ] as const) {
      const e = flagError(() => HostPathAllowList.compile([dir], { ...guards, dockerSocket: join(root, 'sock-dir', 'docker.sock') }));
      expect(e.code).toBe('CAIRN_BAD_FLAG');
      expect(e.field).toBe('hostPathAllow');
      expect(e.message).toContain(`--host-path-allow '${dir}'`);
      expect(e.message).toMatch(why);
    }
  });

  it('is compiled with the agent\'s options: its work and job dirs and socket guarded, capabilities checked', () => {
    const base = { masterUrl: 'http://127.0.0.1:5050', workDir: work };
    const cfg = compileAgentOptions({ ...base, hostPathAllow: [data], containerCapAdd: ['net_bind_service', 'CAP_CHOWN'] });
    expect(cfg.hostPathAllow.dirs).toEqual([data]);
    expect(cfg.containerCapAdd).toEqual(['NET_BIND_SERVICE', 'CHOWN']);
    expect(compileAgentOptions(base).hostPathAllow.dirs).toEqual([]);
    expect(compileAgentOptions(base).containerCapAdd).toEqual([]);
    expect(flagError(() => compileAgentOptions({ ...base, hostPathAllow: [work] })).message).toMatch(/--host-path-allow '.*work'.*own directory/);
    expect(flagError(() => compileAgentOptions({ ...base, jobDirs: join(data, 'jobs'), hostPathAllow: [data] })).message).toMatch(/own directory/);
    expect(flagError(() => compileAgentOptions({ ...base, dockerSocket: join(data, 'docker.sock'), hostPathAllow: [data] })).message).toMatch(/Docker daemon's socket/);
    const cap = flagError(() => compileAgentOptions({ ...base, containerCapAdd: ['SYS_ADMIN'] }));
    expect(cap.field).toBe('containerCapAdd');
    expect(cap.message).toMatch(/--container-cap-add 'SYS_ADMIN'/);
  });
});
