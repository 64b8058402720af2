// The example ML programs (examples/programs) run on their own, without a cluster: several
// processes on loopback with the variables a job's replicas get set by hand. DDP over 4 ranks
// (the loss falls, the ranks agree); ps-lite with a scheduler, 2 servers and 4 workers (the
// loss falls, scheduler and servers keep running, losing the scheduler ends the others);
// TF_CONFIG with 2 ps and 3 workers (the chief decides, a killed worker resumes from its
// checkpoint, a bad TF_CONFIG is refused naming the field); the indexed batch job (300 items
// exactly once, across a failure and a rerun). Cluster DNS names resolve through CAIRN_DNS.
// They need torch, numpy and scikit-learn under /usr/bin/python3: skipped with the reason
// where those are missing, except in CI, where they must run.

import { afterEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import dnsPacket from 'dns-packet';
import { Cleanup, freePort, waitFor } from '../harness/processes.ts';

const PYTHON = '/usr/bin/python3';
const PROGRAMS = fileURLToPath(new URL('../../examples/programs/', import.meta.url));

const missing = (() => {
  const r = spawnSync(PYTHON, ['-c', 'import torch, numpy, sklearn'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `${PYTHON} cannot import torch, numpy and sklearn (${(r.stderr || r.error?.message || '').trim().split('\n').pop()}); apt-get install python3-torch python3-numpy python3-sklearn`;
})();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.log(`skipping the ML program tests: ${missing}`);

class Program {
  output = '';
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d) => (this.output += d));
    child.stderr!.on('data', (d) => (this.output += d));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves once the output matches `re` (or fails if the program ends first). */
  waitOutput(re: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    return waitFor(`output matching ${re}`, () => {
      const m = this.output.match(re);
      if (m) return m;
      if (!this.running) throw new Error(`ended without it: ${this.output.slice(-1500)}`);
      return undefined;
    }, timeoutMs);
  }

  /** Its exit code, failing with its output if it has not ended within `timeoutMs`. */
  async exitCode(timeoutMs = 60_000): Promise<number | null> {
    let t: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms: ${this.output.slice(-1500)}`)), timeoutMs)));
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(t);
    }
  }
}

const started: Program[] = [];
const cleanup = new Cleanup();
afterEach(async () => {
  for (const p of started.splice(0)) if (p.running) p.child.kill('SIGKILL');
  await cleanup.run();
});

function run(script: string, env: Record<string, string>, args: string[] = []): Program {
  const child = spawn(PYTHON, [join(PROGRAMS, script), ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const p = new Program(child);
  started.push(p);
  return p;
}

/** The numbers after `loss` on lines that start with `prefix`, in order. */
function losses(output: string, prefix: RegExp): number[] {
  return output.split('\n').filter((l) => prefix.test(l)).map((l) => Number(/loss (\d+\.\d+)/.exec(l)![1]));
}

async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

describe.skipIf(skip)('example ML programs, run without a cluster', () => {
  it('pytorch_ddp.py: 4 DDP ranks over gloo agree on a loss that falls', async () => {
    const [port] = await freePorts(1);
    const ranks = [0, 1, 2, 3].map((rank) => run('pytorch_ddp.py', {
      MASTER_ADDR: 'localhost', MASTER_PORT: String(port), WORLD_SIZE: '4', RANK: String(rank),
    }, ['--epochs', '5']));
    for (const r of ranks) expect(await r.exitCode(90_000), r.output).toBe(0);
    const perRank = ranks.map((r) => losses(r.output, /^epoch \d+ loss/));
    // all_reduce'd: every rank prints the same averaged loss each epoch.
    for (const l of perRank) expect(l).toEqual(perRank[0]);
    expect(perRank[0]).toHaveLength(5);
    expect(perRank[0][4]).toBeLessThan(perRank[0][0] / 2);
    const done = /done: world 4 epochs 5 loss (\S+) -> (\S+) accuracy (\S+)/.exec(ranks[0].output);
    expect(done, ranks[0].output).not.toBeNull();
    expect(Number(done![3])).toBeGreaterThan(0.8);
    expect(ranks.slice(1).some((r) => r.output.includes('done:'))).toBe(false);
  }, 120_000);

  it('pslite_numpy.py: a scheduler, 2 servers and 4 workers train; scheduler and servers keep running', async () => {
    const [root, ...nodePorts] = await freePorts(7);
    const common = { DMLC_PS_ROOT_URI: 'localhost', DMLC_PS_ROOT_PORT: String(root), DMLC_NUM_SERVER: '2', DMLC_NUM_WORKER: '4', DMLC_NODE_HOST: '127.0.0.1' };
    const scheduler = run('pslite_numpy.py', { ...common, DMLC_ROLE: 'scheduler' });
    const servers = nodePorts.slice(0, 2).map((p) => run('pslite_numpy.py', { ...common, DMLC_ROLE: 'server', PORT: String(p) }));
    // One worker finishes (and leaves) well before the others: that alone breaks nothing.
    const steps = [10, 30, 30, 30];
    const workers = nodePorts.slice(2).map((p, i) => run('pslite_numpy.py', { ...common, DMLC_ROLE: 'worker', PORT: String(p) }, ['--steps', String(steps[i]), '--step-delay', '0.05']));
    for (const w of workers) expect(await w.exitCode(90_000), w.output).toBe(0);
    for (const [i, w] of workers.entries()) {
      const l = losses(w.output, /^step \d+ loss/);
      expect(l).toHaveLength(steps[i]);
      expect(l.at(-1)).toBeLessThan(l[0] * 0.75);
    }
    // Ranks 0-3 to the workers, 0-1 to the servers, each once; the servers split the keys.
    expect(workers.map((w) => Number(/worker (\d) of 4/.exec(w.output)![1])).sort()).toEqual([0, 1, 2, 3]);
    expect(servers.map((s) => /holds keys \[(\d+), (\d+)\)/.exec(s.output)!.slice(1).join('-')).sort()).toEqual(['0-325', '325-650']);
    await scheduler.waitOutput(/all 4 workers finished; running until stopped/);
    for (const s of servers) await s.waitOutput(/the workers have finished; serving until stopped/);
    // Like ps-lite's, they do not exit on their own once the workers are done.
    expect([scheduler, ...servers].every((p) => p.running)).toBe(true);
  }, 120_000);

  it('pslite_numpy.py: losing the scheduler mid-run ends the servers and workers (exit 1)', async () => {
    const [root, ...nodePorts] = await freePorts(4);
    // As the engine starts it: the scheduler binds 0.0.0.0 under DMLC_USE_KUBERNETES=1.
    const common = { DMLC_PS_ROOT_URI: 'localhost', DMLC_PS_ROOT_PORT: String(root), DMLC_NUM_SERVER: '1', DMLC_NUM_WORKER: '2', DMLC_NODE_HOST: '127.0.0.1' };
    const scheduler = run('pslite_numpy.py', { ...common, DMLC_ROLE: 'scheduler', DMLC_USE_KUBERNETES: '1' });
    await scheduler.waitOutput(/listening on 0\.0\.0\.0:/);
    const server = run('pslite_numpy.py', { ...common, DMLC_ROLE: 'server', PORT: String(nodePorts[0]) });
    const workers = nodePorts.slice(1).map((p) => run('pslite_numpy.py', { ...common, DMLC_ROLE: 'worker', PORT: String(p) }, ['--steps', '1000', '--step-delay', '0.05']));
    await workers[0].waitOutput(/^step 3 loss/m);
    scheduler.child.kill('SIGKILL');
    for (const p of [server, ...workers]) {
      expect(await p.exitCode(30_000), p.output).toBe(1);
      expect(p.output).toMatch(/lost the scheduler/);
    }
  }, 90_000);

  it('tf_config_trainer.py: 2 ps and 3 workers; the chief decides, a killed worker resumes at its checkpoint', async () => {
    const ports = await freePorts(5);
    const dir = cleanup.dir('cairn-tf-ckpt-');
    const cluster = { ps: ports.slice(0, 2).map((p) => `localhost:${p}`), worker: ports.slice(2).map((p) => `localhost:${p}`) };
    const env = (type: string, index: number) => ({ TF_CONFIG: JSON.stringify({ cluster, task: { type, index } }), CAIRN_JOB_DIR: dir });
    const args = ['--steps', '30', '--checkpoint-every', '5', '--expect', 'ps=2,worker=3'];
    const ps = [0, 1].map((i) => run('tf_config_trainer.py', env('ps', i), args));
    const slow = [...args, '--step-delay', '0.1'];
    const workers = [0, 1, 2].map((i) => run('tf_config_trainer.py', env('worker', i), slow));

    await workers[1].waitOutput(/checkpoint at step 10/);
    workers[1].child.kill('SIGKILL');
    await workers[1].exited;
    const saved = JSON.parse(readFileSync(join(dir, 'worker-1.json'), 'utf8')).step as number;
    expect(saved).toBeGreaterThanOrEqual(10);
    const again = run('tf_config_trainer.py', env('worker', 1), slow);
    await again.waitOutput(new RegExp(`^resumed at step ${saved}$`, 'm'));
    expect(await again.exitCode(60_000), again.output).toBe(0);
    // It went on from its checkpoint: no step before it ran again.
    expect(Number(/^step (\d+) loss/m.exec(again.output)![1])).toBe(saved);

    // Worker 0 is the chief (no chief task): it waits for every trainer and judges the loss.
    expect(await workers[0].exitCode(60_000), workers[0].output).toBe(0);
    expect(workers[0].output).toMatch(/chief: all 3 trainers finished; loss 2\.3026 -> 0\.\d+: success/);
    expect(await workers[2].exitCode(60_000), workers[2].output).toBe(0);
    expect(ps.every((p) => p.running)).toBe(true);
    expect(ps.map((p) => /holds keys \[(\d+), (\d+)\)/.exec(p.output)!.slice(1).join('-'))).toEqual(['0-325', '325-650']);
  }, 120_000);

  it('tf_config_trainer.py: a TF_CONFIG that does not describe a usable cluster is refused naming the field', async () => {
    const dir = cleanup.dir('cairn-tf-bad-');
    const cluster = { ps: ['localhost:1'], worker: ['localhost:2', 'localhost:3'] };
    const cases: [unknown, string[], RegExp][] = [
      [{ cluster, task: { type: 'worker', index: 2 } }, [], /task\.index: 2 is outside 0\.\.1/],
      [{ cluster, task: { type: 'chief', index: 0 } }, [], /task\.type: 'chief' is not in the cluster/],
      [{ cluster: { ...cluster, trainer: ['localhost:4'] }, task: { type: 'worker', index: 0 } }, [], /cluster\.trainer: unknown task type/],
      [{ cluster: { ...cluster, ps: ['nowhere'] }, task: { type: 'worker', index: 0 } }, [], /cluster\.ps\[0\]: 'nowhere' is not host:port/],
      [{ cluster, task: { type: 'worker', index: 0 } }, ['--expect', 'ps=2,worker=2'], /cluster\.ps: 1 tasks, expected 2/],
    ];
    for (const [conf, args, why] of cases) {
      const p = run('tf_config_trainer.py', { TF_CONFIG: JSON.stringify(conf), CAIRN_JOB_DIR: dir }, args);
      expect(await p.exitCode(30_000)).not.toBe(0);
      expect(p.output).toMatch(why);
    }
  }, 90_000);

  it('indexed_batch.py: 300 items over 4 replicas, each exactly once across a failure and a rerun', async () => {
    const out = cleanup.dir('cairn-batch-');
    const replica = (i: number) => run('indexed_batch.py', { VC_TASK_INDEX: String(i), VC_WORKER_NUM: '4' }, ['--out', out, '--fail-at', '7']);
    const first = [0, 1, 2, 3].map(replica);
    const codes = await Promise.all(first.map((p) => p.exitCode(60_000)));
    // Item 7 is replica 3's (7 % 4): it stopped there, the others finished.
    expect(codes).toEqual([0, 0, 0, 3]);
    expect(first[3].output).toMatch(/failing before item 7/);
    // The whole job again, as RestartJob does: what is done is not done twice.
    const second = [0, 1, 2, 3].map(replica);
    expect(await Promise.all(second.map((p) => p.exitCode(60_000)))).toEqual([0, 0, 0, 0]);
    expect(second[0].output).toMatch(/processed 0 items, 75 already done/);
    expect(second[3].output).toMatch(/processed 74 items, 1 already done/);

    const lines = readFileSync(join(out, 'processed.log'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(300);
    const items = lines.map((l) => Number(l.split(' ')[0]));
    expect(new Set(items).size).toBe(300);
    expect(items.every((item, k) => Number(lines[k].split(' ')[1]) === item % 4)).toBe(true);
    const files = readdirSync(out).filter((f) => /^item-\d{5}\.json$/.test(f));
    expect(files).toHaveLength(300);
    for (const f of files) {
      const r = JSON.parse(readFileSync(join(out, f), 'utf8'));
      expect(f).toBe(`item-${String(r.item).padStart(5, '0')}.json`);
      expect(r.digest).toBe(createHash('sha256').update(`item-${r.item}`).digest('hex'));
    }
  }, 90_000);

  it('cairn_net.py looks names up through the system resolver only, retrying until its deadline', async () => {
    // A server named by CAIRN_DNS that would answer: the programs no longer ask it (inside a
    // task the system resolver is the agent's task resolver, which answers the zone).
    const server = createSocket('udp4');
    let asked = 0;
    server.on('message', (msg, rinfo) => {
      asked++;
      const q = dnsPacket.decode(msg);
      server.send(dnsPacket.encode({ type: 'response', id: q.id, questions: q.questions, answers: [{ type: 'A', name: q.questions![0].name, ttl: 5, data: '127.0.0.7' }] }), rinfo.port, rinfo.address);
    });
    await new Promise<void>((r) => server.bind(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as { port: number }).port;
      const script = [
        'import cairn_net, time',
        'print(cairn_net.resolve("localhost", 5))',
        't = time.monotonic()',
        'try:\n    cairn_net.resolve("w-worker-0.jobs.cairn.invalid", 1)\nexcept OSError as e:\n    print("gave up after", round(time.monotonic() - t))',
      ].join('\n');
      const p = spawn(PYTHON, ['-c', script], {
        cwd: PROGRAMS, env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', CAIRN_DNS: `127.0.0.1:${port}`, CAIRN_DNS_DOMAIN: 'cairn' },
      });
      const prog = new Program(p);
      started.push(prog);
      expect(await prog.exitCode(40_000), prog.output).toBe(0);
      expect(prog.output.trim().split('\n')).toEqual(['127.0.0.1', 'gave up after 1']);
      expect(asked).toBe(0);
    } finally {
      server.close();
    }
  }, 60_000);
});

describe('example ML programs in CI', () => {
  it.runIf(process.env.CI === 'true')('have torch, numpy and scikit-learn under /usr/bin/python3', () => {
    expect(missing).toBeUndefined();
  });
});
