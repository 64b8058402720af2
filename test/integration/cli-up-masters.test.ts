// `cairn up --masters 3`: a local three-master group and an agent in one process, as the
// README shows it. The group elects a leader, the agent registers with it, `cairn masters`
// lists the three, a job runs through any master, and Ctrl-C stops everything cleanly.

import { afterAll, describe, expect, it } from 'vitest';
import { Cleanup, freePort, freePortRun, getJson, runCairn, startCairn, waitFor } from '../harness/processes.ts';

const cleanup = new Cleanup();
afterAll(async () => {
  await cleanup.run();
});

describe('cairn up --masters 3', () => {
  it('runs a replicated group and an agent; jobs run through any master; Ctrl-C stops it', async () => {
    const port = await freePortRun(3);
    const urls = [0, 1, 2].map((i) => `http://127.0.0.1:${port + i}`);
    const up = cleanup.track(startCairn(['up', '--masters', '3', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--data-dir', cleanup.dir('cairn-up3-')], urls[0]));
    await up.waitHealthy();
    const leaderUrl = await waitFor('a leader with the agent', async () => {
      for (const u of urls) {
        const st = await getJson(`${u}/api/v1/state`).catch(() => undefined);
        if (st?.master.role === 'leader' && st.agents[0]?.connected) return u;
      }
      return undefined;
    }, 30_000);
    const st = await getJson(`${leaderUrl}/api/v1/state`);
    expect(st.members.map((m: any) => m.url).sort()).toEqual([...urls].sort());
    expect(st.leader.url).toBe(leaderUrl);

    const listed = await runCairn(['masters', '--master', urls[0]]);
    expect(listed.code).toBe(0);
    for (const u of urls) expect(listed.stdout).toContain(u);
    // Given several masters, the first of which is down, a client asks the next.
    const down = `http://127.0.0.1:${await freePort()}`;
    const throughNext = await runCairn(['masters', '--master', `${down},${urls[1]}`]);
    expect(throughNext.code).toBe(0);
    for (const u of urls) expect(throughNext.stdout).toContain(u);
    const nothing = await runCairn(['tasks', '--master', `${down},${down.replace(/\d+$/, String(await freePort()))}`]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/cannot reach any master \(http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED; http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\)/);

    // Through a master that may be a follower: it sends the framework on to the leader.
    const follower = urls.find((u) => u !== leaderUrl)!;
    const r = await runCairn(['run', '--master', `${down},${follower}`, '--cpus', '0.1', '--mem', '32', '--', 'sh', '-c', 'echo replicated']);
    // Only the line naming the task it launched; no error, no complaint about the master that is down.
    expect(r.stderr).toMatch(/^cairn run: launched \S+ on \S+\n$/);
    expect(r.stdout).toBe('replicated\n');
    expect(r.code).toBe(0);

    expect(await up.kill('SIGINT')).toBe(0);
  });
});
