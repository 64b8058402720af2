import { describe, expect, it } from 'vitest';
import { runCli, type CommandHandlers } from '../../bin/commands/program.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';

interface Captured {
  io: CliIo;
  out: () => string;
  err: () => string;
}

function capture(env: Record<string, string> = {}): Captured {
  let out = '';
  let err = '';
  return {
    io: {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      env,
      onInterrupt: () => () => undefined,
    },
    out: () => out,
    err: () => err,
  };
}

/** Handlers that record what they were given instead of running anything. */
function recorder(exitCode = 0): { handlers: CommandHandlers; calls: { command: string; options: any }[] } {
  const calls: { command: string; options: any }[] = [];
  const make = (command: string) => async (options: unknown) => {
    calls.push({ command, options });
    return exitCode;
  };
  const handlers = {
    up: make('up'),
    master: make('master'),
    agent: make('agent'),
    run: make('run'),
    attach: make('attach'),
    agents: make('agents'),
    tasks: make('tasks'),
    task: make('task'),
    completion: make('completion'),
    state: make('state'),
    logs: make('logs'),
    kill: make('kill'),
    teardown: make('teardown'),
    top: make('top'),
    members: make('members'),
    masters: make('masters'),
    drain: make('drain'),
  } as CommandHandlers;
  return { handlers, calls };
}

async function parse(argv: string[], env: Record<string, string> = {}) {
  const c = capture(env);
  const r = recorder();
  const code = await runCli(argv, c.io, r.handlers);
  return { code, options: r.calls[0]?.options, command: r.calls[0]?.command, out: c.out(), err: c.err() };
}

describe('cairn run: parsing', () => {
  it('fills the defaults', async () => {
    const r = await parse(['run', 'echo hi']);
    expect(r.code).toBe(0);
    expect(r.options).toEqual({
      masterUrl: 'http://127.0.0.1:5050',
      name: 'cairn-run',
      instances: 1,
      cpus: 0.1,
      mem: 32,
      gpus: 0,
      ports: 0,
      role: '*',
      env: [],
      command: ['echo hi'],
    });
  });

  it('takes every flag, repeated --env in order, and the command after --', async () => {
    const r = await parse([
      'run', '--master', 'http://m:5050/', '--name', 'train', '--instances', '4', '--cpus', '1.5', '--mem', '2048',
      '--gpus', '1', '--ports', '2', '--role', 'ml', '--user', 'alice', '--env', 'A=1', '--env', 'B=x=y', '--env', 'EMPTY=', '--', 'python', '-u', 'train.py', '--lr', '0.1',
    ]);
    expect(r.code).toBe(0);
    expect(r.options).toMatchObject({
      masterUrl: 'http://m:5050',
      name: 'train',
      instances: 4,
      cpus: 1.5,
      mem: 2048,
      gpus: 1,
      ports: 2,
      role: 'ml',
      user: 'alice',
      env: [['A', '1'], ['B', 'x=y'], ['EMPTY', '']],
      command: ['python', '-u', 'train.py', '--lr', '0.1'],
    });
  });

  it('passes flags after the command through to the command', async () => {
    const r = await parse(['run', '--instances', '2', 'ls', '-la', '--name', 'x']);
    expect(r.options.instances).toBe(2);
    expect(r.options.name).toBe('cairn-run');
    expect(r.options.command).toEqual(['ls', '-la', '--name', 'x']);
  });

  it.each([
    [['run', '--instances', 'x', 'true'], '--instances'],
    [['run', '--instances', '0', 'true'], '--instances'],
    [['run', '--cpus', '0', 'true'], '--cpus'],
    [['run', '--cpus', '-1', 'true'], '--cpus'],
    [['run', '--mem', 'lots', 'true'], '--mem'],
    [['run', '--gpus', '0.5', 'true'], '--gpus'],
    [['run', '--ports', '-1', 'true'], '--ports'],
    [['run', '--env', 'NOEQUALS', 'true'], '--env'],
    [['run', '--env', '1BAD=x', 'true'], '--env'],
    [['run', '--name', 'bad name', 'true'], '--name'],
    [['run', '--role', 'a b', 'true'], '--role'],
    [['run', '--master', 'not a url', 'true'], '--master'],
    [['run', '--bogus', 'true'], '--bogus'],
    [['run', '--timeout', '5', 'true'], '--timeout'],
    [['run', '--timeout', 'soon', 'true'], '--timeout'],
    [['run', '--image', '-bad', 'true'], '--image'],
    [['run', '--image', 'a b', 'true'], '--image'],
  ])('rejects %j naming %s, with exit code 2', async (argv, flag) => {
    const r = await parse(argv);
    expect(r.code).toBe(2);
    expect(r.command).toBeUndefined();
    expect(r.err).toContain(flag);
  });

  it('takes --timeout with a unit, --detach and --image', async () => {
    const r = await parse(['run', '--timeout', '5s', '--detach', '--image', 'registry:5000/team/app:1.2', '--', 'python', '-V']);
    expect(r.code).toBe(0);
    expect(r.options).toMatchObject({ timeoutMs: 5000, detach: true, image: 'registry:5000/team/app:1.2', command: ['python', '-V'] });
    expect((await parse(['run', '--timeout', '2m', 'true'])).options.timeoutMs).toBe(120_000);
  });

  it('says in --help which code a timeout exits with and how long detached tasks live', async () => {
    const r = await parse(['run', '--help']);
    expect(r.out).toContain('--timeout <duration>');
    expect(r.out).toContain('124 when --timeout ended the wait');
    expect(r.out).toContain('7 days');
  });

  it('cairn attach takes task ids', async () => {
    const r = await parse(['attach', '--master', 'http://m:5050', 'job-0-abc', 'job-1-abc']);
    expect(r.code).toBe(0);
    expect(r.command).toBe('attach');
    expect(r.options).toEqual({ masterUrl: 'http://m:5050', taskIds: ['job-0-abc', 'job-1-abc'] });
    expect((await parse(['attach'])).code).toBe(2);
  });

  it('needs a command', async () => {
    const r = await parse(['run', '--instances', '2']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/missing required argument 'command'/);
  });
});

describe('the master address', () => {
  it('comes from --master, else CAIRN_MASTER, else the default', async () => {
    expect((await parse(['tasks', '--master', 'http://a:1'], { CAIRN_MASTER: 'http://b:2' })).options.masterUrl).toBe('http://a:1');
    expect((await parse(['tasks'], { CAIRN_MASTER: 'http://b:2' })).options.masterUrl).toBe('http://b:2');
    expect((await parse(['tasks'], { CAIRN_MASTER: '' })).options.masterUrl).toBe('http://127.0.0.1:5050');
    // Several masters: a client keeps them all and asks them in turn.
    expect((await parse(['tasks', '--master', 'http://a:1, http://b:2/'])).options.masterUrl).toBe('http://a:1,http://b:2');
    expect((await parse(['logs', 't1'], { CAIRN_MASTER: 'http://a:1,http://b:2' })).options.masterUrl).toBe('http://a:1,http://b:2');
    expect((await parse(['agents'])).options.masterUrl).toBe('http://127.0.0.1:5050');
  });

  it('names CAIRN_MASTER when that is what is wrong', async () => {
    const r = await parse(['state'], { CAIRN_MASTER: 'ftp://x' });
    expect(r.code).toBe(2);
    expect(r.err).toContain('CAIRN_MASTER');
  });
});

describe('daemon commands: parsing', () => {
  it('up: defaults and flags; the data dir becomes absolute', async () => {
    const r = await parse(['up']);
    expect(r.command).toBe('up');
    expect(r.options.port).toBe(5050);
    expect(r.options.agentPort).toBe(5051);
    expect(r.options.dataDir).toMatch(/^\/.*\.cairn$/);
    expect(r.options.resources).toBeUndefined();
    const r2 = await parse(['up', '--data-dir', '/tmp/x', '--port', '0', '--agent-port', '6000', '--resources', 'cpus:2;mem:1024;ports:[31000-31010]']);
    expect(r2.options).toEqual({ dataDir: '/tmp/x', port: 0, agentPort: 6000, masters: 1, resources: 'cpus:2;mem:1024;ports:[31000-31010]' });
    expect((await parse(['up', '--masters', '3'])).options.masters).toBe(3);
    const open = await parse(['up', '--open', 'scheduler', '--acls', '/etc/cairn/a.json', '--gossip-port', '7946']);
    expect(open.options).toMatchObject({ open: ['scheduler'], acls: '/etc/cairn/a.json', gossipPort: 7946 });
    // The agent's containers may mount what --host-path-allow names, as cairn agent's.
    expect((await parse(['up', '--host-path-allow', '/mnt/dcos,/data', '--host-path-allow', '/srv'])).options.hostPathAllow).toEqual(['/mnt/dcos', '/data', '/srv']);
    const bad = await parse(['up', '--open', 'scheduler,frameworks']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--open.*'frameworks' cannot be opened \(known: metrics, dns-api, scheduler\)/s);
  });

  it('master: a replicated group needs --id, --peers naming it, and a secret file', async () => {
    const r = await parse(['master', '--id', '2', '--peers', '1=http://a:5050,2=http://b:5050,3=http://c:5050', '--secret-file', '/tmp/s']);
    expect(r.options.raft).toEqual({ id: 2, peers: new Map([[1, 'http://a:5050'], [2, 'http://b:5050'], [3, 'http://c:5050']]), secretFile: '/tmp/s' });
    expect((await parse(['up', '--masters', '2'])).err).toMatch(/--masters/);
    expect((await parse(['master', '--id', '4', '--peers', '1=http://a:5050', '--secret-file', '/tmp/s'])).err).toMatch(/--peers/);
    expect((await parse(['master', '--id', '1', '--peers', '1=http://a:5050,2=http://b:5050'])).err).toMatch(/--secret-file/);
    expect((await parse(['master', '--peers', '1=nope'])).err).toMatch(/--peers/);
  });

  it.each([
    [['up', '--port', '70000'], '--port'],
    [['up', '--agent-port', 'x'], '--agent-port'],
    [['up', '--gossip-port', '65536'], '--gossip-port'],
    [['up', '--resources', 'cpus:two'], '--resources'],
    [['master', '--ping-interval', '0s'], '--ping-interval'],
    [['master', '--ping-interval', '500'], '--ping-interval'],
    [['master', '--max-missed-pings', 'x'], '--max-missed-pings'],
    [['master', '--offer-timeout', '1.5'], '--offer-timeout'],
    [['agent', '--usage-interval', '200'], '--usage-interval'],
    [['up', '--masters', '3', '--port', '0'], '--port'],
    [['up', '--masters', '5', '--port', '65533'], '--port'],
    [['agent', '--attributes', 'nocolon'], '--attributes'],
    [['agent', '--resources', 'bogus:1'], '--resources'],
    [['agent', '--port', '-5'], '--port'],
  ])('rejects %j naming %s, with exit code 2', async (argv, flag) => {
    const r = await parse(argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(flag);
  });

  it('master: every flag', async () => {
    const r = await parse(['master', '--port', '5055', '--host', '10.0.0.1', '--data-dir', '/var/lib/cairn', '--ping-interval', '500ms', '--max-missed-pings', '3', '--offer-timeout', '2s', '--credentials', '/etc/cairn/c.json', '--acls', '/etc/cairn/a.json', '--open', 'metrics,dns-api,scheduler']);
    expect(r.options).toEqual({ port: 5055, host: '10.0.0.1', dataDir: '/var/lib/cairn', pingIntervalMs: 500, maxMissedPings: 3, offerTimeoutMs: 2000, credentials: '/etc/cairn/c.json', acls: '/etc/cairn/a.json', open: ['metrics', 'dns-api', 'scheduler'] });
    // Loopback unless told an address.
    const d = await parse(['master']);
    expect(d.options).toMatchObject({ port: 5050, host: '127.0.0.1' });
    const bad = await parse(['master', '--open', 'state']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--open');
    expect(d.options.pingIntervalMs).toBeUndefined();
  });

  it('agent: every flag', async () => {
    const r = await parse(['agent', '--master', 'http://m:5050', '--work-dir', '/w', '--resources', 'cpus:1', '--attributes', 'rack:r1;zone:a', '--port', '0', '--hostname', 'h1']);
    expect(r.options).toEqual({
      masterUrl: 'http://m:5050', workDir: '/w', resources: 'cpus:1', attributes: 'rack:r1;zone:a', httpPort: 0, hostname: 'h1',
      recover: 'reconnect', cgroups: true, cgroupsRoot: 'cairn', cgroupsCpuQuota: false, usageIntervalMs: 5000, sandboxGcAgeMs: 7 * 86_400_000, sandboxGcDiskPercent: 90,
      gpuSharing: 1, docker: true, dockerSocket: '/var/run/docker.sock',
      defaultTaskUser: 'nobody', taskUidRange: '1879048192-2147483646', allowRootTasks: false, taskPidsMax: 4096, taskDns: true,
      enforceDisk: true, diskWatchIntervalMs: 5000, defaultTaskDiskMb: 0,
    });
    const r2 = await parse(['agent', '--recover', 'cleanup', '--no-cgroups', '--cgroups-root', 'ml/cairn', '--cgroups-cpu-quota', '--usage-interval', '1s', '--sandbox-gc-age', '12h', '--sandbox-gc-disk-percent', '80']);
    expect(r2.options).toMatchObject({ recover: 'cleanup', cgroups: false, cgroupsRoot: 'ml/cairn', cgroupsCpuQuota: true, usageIntervalMs: 1000, sandboxGcAgeMs: 12 * 3_600_000, sandboxGcDiskPercent: 80 });
    for (const bad of [['--recover', 'keep'], ['--sandbox-gc-age', '7 days'], ['--sandbox-gc-disk-percent', '0']]) expect((await parse(['agent', ...bad])).code).toBe(2);
    const r3 = await parse(['agent', '--no-docker', '--docker-socket', '/run/d.sock', '--gpu-sharing', '4', '--docker-runtime', 'crun']);
    expect(r3.options).toMatchObject({ docker: false, dockerSocket: '/run/d.sock', gpuSharing: 4, dockerRuntime: 'crun' });
    for (const bad of ['0', '65', '1.5']) expect((await parse(['agent', '--gpu-sharing', bad])).code).toBe(2);
    // Host paths and capabilities: comma-separated, or the flag again; checked when the agent compiles its options.
    const rh = await parse(['agent', '--host-path-allow', '/srv/data,/mnt/sets', '--host-path-allow', '/scratch', '--container-cap-add', 'CHOWN']);
    expect(rh.options).toMatchObject({ hostPathAllow: ['/srv/data', '/mnt/sets', '/scratch'], containerCapAdd: ['CHOWN'] });
    expect((await parse(['agent'])).options).not.toHaveProperty('hostPathAllow');
    const r4 = await parse(['agent', '--default-task-user', 'builder', '--allow-root-tasks', '--task-pids-max', '64']);
    expect(r4.options).toMatchObject({ defaultTaskUser: 'builder', allowRootTasks: true, taskPidsMax: 64 });
    for (const bad of [['--default-task-user', 'a b'], ['--default-task-user', '-x'], ['--task-pids-max', '-1'], ['--task-pids-max', '5000000']]) expect((await parse(['agent', ...bad])).code).toBe(2);
    // A uid per principal: the range (checked when the agent compiles its options) and the operator's map.
    const ru = await parse(['agent', '--task-uid-range', 'none', '--task-user-map', 'alice=svc-alice,bob=svc-bob', '--task-user-map', 'carol=svc-carol']);
    expect(ru.options).toMatchObject({ taskUidRange: 'none', taskUserMap: ['alice=svc-alice', 'bob=svc-bob', 'carol=svc-carol'] });
    const rd = await parse(['agent', '--no-enforce-disk', '--disk-watch-interval', '15s', '--default-task-disk', '2048']);
    expect(rd.options).toMatchObject({ enforceDisk: false, diskWatchIntervalMs: 15_000, defaultTaskDiskMb: 2048 });
    for (const bad of [['--disk-watch-interval', '15'], ['--disk-watch-interval', '10ms'], ['--default-task-disk', '-1'], ['--default-task-disk', '1.5']]) expect((await parse(['agent', ...bad])).code, bad.join(' ')).toBe(2);
    const r5 = await parse(['agent', '--no-task-dns', '--task-dns-address', '169.254.53.53', '--dns-resolvers', '10.0.0.2,127.0.0.1:5353']);
    expect(r5.options).toMatchObject({ taskDns: false, taskDnsAddress: '169.254.53.53', dnsResolvers: ['10.0.0.2', '127.0.0.1:5353'] });
    for (const bad of [['--task-dns-address', 'resolver.local'], ['--task-dns-address', '::1'], ['--dns-resolvers', 'dns.example']]) {
      const r = await parse(['agent', ...bad]);
      expect(r.code, bad.join(' ')).toBe(2);
      expect(r.err).toContain(bad[0]);
    }
  });

  it('agent drain and undrain: a host, a deadline, the master from either place', async () => {
    const r = await parse(['agent', 'drain', 'gpu-7', '--deadline', '10m', '--master', 'http://m:5050']);
    expect(r).toMatchObject({ code: 0, command: 'drain', options: { masterUrl: 'http://m:5050', host: 'gpu-7', deadlineMs: 600_000, undrain: false } });
    const r2 = await parse(['agent', '--master', 'http://m2:5050', 'drain', 'gpu-7']);
    expect(r2.options).toEqual({ masterUrl: 'http://m2:5050', host: 'gpu-7', undrain: false });
    expect((await parse(['agent', 'undrain', 'gpu-7'], { CAIRN_MASTER: 'http://m3:1' })).options).toEqual({ masterUrl: 'http://m3:1', host: 'gpu-7', undrain: true });
    expect((await parse(['agent', 'drain', 'gpu-7', '--deadline', 'soon'])).code).toBe(2);
    expect((await parse(['agent', 'drain'])).code).toBe(2);
    expect((await parse(['agent', 'undrain', 'h', '--deadline', '1m'])).code).toBe(2);
  });
});

describe('duration flags need a unit', () => {
  it('reads 90s, 5m, 500ms, 1h on every duration flag', async () => {
    expect((await parse(['agent', 'drain', 'h', '--deadline', '90s'])).options).toMatchObject({ deadlineMs: 90_000 });
    expect((await parse(['agent', 'drain', 'h', '--deadline', '1h'])).options).toMatchObject({ deadlineMs: 3_600_000 });
    expect((await parse(['agent', '--sandbox-gc-age', '5m'])).options).toMatchObject({ sandboxGcAgeMs: 300_000 });
    expect((await parse(['top', '--interval', '500ms'])).options).toMatchObject({ intervalMs: 500 });
    expect((await parse(['top'])).options).toMatchObject({ intervalMs: 2000 });
  });

  it('refuses a bare number, naming the flag and the units', async () => {
    for (const [argv, flag] of [
      [['agent', 'drain', 'h', '--deadline', '90'], '--deadline'],
      [['agent', '--sandbox-gc-age', '250'], '--sandbox-gc-age'],
      [['top', '--interval', '2000'], '--interval'],
    ] as const) {
      const r = await parse([...argv]);
      expect(r.code).toBe(2);
      expect(r.command).toBeUndefined();
      expect(r.err).toContain(`option '${flag} <duration>' argument '${argv.at(-1)}' is invalid`);
      expect(r.err).toContain(`needs a unit: write e.g. ${argv.at(-1)}s`);
    }
  });

  it('refuses durations out of range or malformed', async () => {
    expect((await parse(['agent', 'drain', 'h', '--deadline', '8d'])).err).toContain('must be from 1ms to 7d');
    expect((await parse(['top', '--interval', '10ms'])).err).toContain('must be from 100ms to 1h');
    for (const bad of ['0s', '-5s', '5 minutes', 's', '']) {
      const r = await parse(['agent', 'drain', 'h', '--deadline', bad]);
      expect(r.code).toBe(2);
      expect(r.err).toContain("option '--deadline <duration>'");
    }
  });
});

describe('gossip flags', () => {
  it('master: gossip runs with --secret-file, on the default port unless told', async () => {
    expect((await parse(['master'])).options.gossip).toBeUndefined();
    expect((await parse(['master', '--secret-file', '/tmp/s'])).options.gossip).toEqual({ secretFile: '/tmp/s', join: [] });
    const r = await parse(['master', '--secret-file', '/tmp/s', '--gossip-port', '0', '--gossip-addr', '10.0.0.1', '--join', '10.0.0.2:7946', '--join', '10.0.0.3:7947,[::1]:7946', '--gossip-interval', '200ms']);
    expect(r.options.gossip).toEqual({ secretFile: '/tmp/s', port: 0, advertise: '10.0.0.1', join: ['10.0.0.2:7946', '10.0.0.3:7947', '[::1]:7946'], probeIntervalMs: 200 });
  });

  it('agent: --join alone (no --master, no CAIRN_MASTER) means the leader comes from gossip', async () => {
    const r = await parse(['agent', '--secret-file', '/tmp/s', '--join', '10.0.0.2:7946']);
    expect(r.options).toMatchObject({ masterUrl: '', gossip: { secretFile: '/tmp/s', join: ['10.0.0.2:7946'] } });
    expect((await parse(['agent', '--secret-file', '/tmp/s', '--join', '10.0.0.2:7946'], { CAIRN_MASTER: 'http://m:1' })).options.masterUrl).toBe('http://m:1');
    expect((await parse(['agent', '--secret-file', '/tmp/s'])).options).toMatchObject({ masterUrl: 'http://127.0.0.1:5050', gossip: { join: [] } });
  });

  it('refuses gossip flags without a secret, and bad addresses', async () => {
    for (const argv of [['agent', '--join', '10.0.0.2:7946'], ['master', '--gossip-port', '7000'], ['master', '--gossip-interval', '100ms']]) {
      const r = await parse(argv);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/--secret-file/);
    }
    for (const [flag, value] of [['--join', '10.0.0.2'], ['--join', ''], ['--gossip-addr', 'a:b'], ['--gossip-interval', '5ms'], ['--gossip-interval', '200']]) {
      const r = await parse(['agent', '--secret-file', '/tmp/s', flag, value]);
      expect(r.code).toBe(2);
      expect(r.err).toContain(flag);
    }
  });

  it('--gossip-encrypt on master, agent and up; not without a secret', async () => {
    expect((await parse(['master', '--secret-file', '/tmp/s', '--gossip-encrypt'])).options.gossip).toEqual({ secretFile: '/tmp/s', join: [], encrypt: true });
    const agent = await parse(['agent', '--secret-file', '/tmp/s', '--gossip-encrypt']);
    expect(agent.options.gossip).toMatchObject({ encrypt: true });
    expect(agent.options).not.toHaveProperty('gossipEncrypt');
    expect((await parse(['agent', '--secret-file', '/tmp/s'])).options.gossip).not.toHaveProperty('encrypt');
    expect((await parse(['up', '--gossip-encrypt'])).options).toMatchObject({ gossipEncrypt: true });
    expect((await parse(['up'])).options).not.toHaveProperty('gossipEncrypt');
    const r = await parse(['master', '--gossip-encrypt']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--secret-file.*--gossip-encrypt/);
  });

  it('members: asks --master, else CAIRN_MASTER', async () => {
    expect((await parse(['members'])).options).toEqual({ masterUrl: 'http://127.0.0.1:5050' });
    expect((await parse(['members', '--master', 'http://10.0.0.5:5051'])).options).toEqual({ masterUrl: 'http://10.0.0.5:5051' });
  });
});

describe('client commands: parsing', () => {
  it('logs: stdout by default, --stderr, --follow', async () => {
    expect((await parse(['logs', 't1'])).options).toEqual({ masterUrl: 'http://127.0.0.1:5050', taskId: 't1', stream: 'stdout', follow: false });
    expect((await parse(['logs', 't1', '--stderr', '--follow'])).options).toMatchObject({ stream: 'stderr', follow: true });
    expect((await parse(['logs', '-f', 't1'])).options.follow).toBe(true);
  });

  it('kill needs a task', async () => {
    expect((await parse(['kill', 't9'])).options).toEqual({ masterUrl: 'http://127.0.0.1:5050', taskId: 't9' });
    expect((await parse(['teardown', 'fw-1'])).options).toEqual({ masterUrl: 'http://127.0.0.1:5050', frameworkId: 'fw-1' });
    const r = await parse(['kill']);
    expect(r.code).toBe(2);
    expect(r.err).toContain("missing required argument 'task'");
  });

  it('rejects extra arguments', async () => {
    expect((await parse(['tasks', 'extra'])).code).toBe(2);
  });
});

describe('the program', () => {
  it('--help prints to stdout and exits 0, on the program and on each command', async () => {
    const top = await parse(['--help']);
    expect(top.code).toBe(0);
    for (const name of ['up', 'master', 'agent', 'run', 'agents', 'tasks', 'state', 'members', 'logs', 'kill']) expect(top.out).toContain(name);
    for (const name of ['up', 'master', 'agent', 'run', 'agents', 'tasks', 'state', 'members', 'logs', 'kill']) {
      const r = await parse([name, '--help']);
      expect(r.code).toBe(0);
      expect(r.out).toContain(`Usage: cairn ${name}`);
      expect(r.command).toBeUndefined();
    }
  });

  it('without a command, prints help to stderr and exits 2', async () => {
    const r = await parse([]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('Usage: cairn');
  });

  it('an unknown command exits 2', async () => {
    const r = await parse(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('frobnicate');
  });

  it("passes on the handler's exit code, and turns a thrown error into exit 1", async () => {
    const c = capture();
    expect(await runCli(['tasks'], c.io, recorder(7).handlers)).toBe(7);
    const failing = { ...recorder().handlers, tasks: async () => { throw new Error('boom'); } };
    expect(await runCli(['tasks'], c.io, failing)).toBe(1);
    expect(c.err()).toContain('cairn: boom');
  });
});
