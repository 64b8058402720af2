// Adding a master that never catches up (nothing runs at its URL, or it was started without
// --new-member and founded a group of its own): the add gives up after the catch-up limit
// with an answer that says what to check, the new member stays a learner (it counts toward
// no quorum), the group goes on writing, and the learner can be removed again.

import { afterAll, describe, expect, it } from 'vitest';
import type { MasterHandle } from '../../master/server.ts';
import type { MastersView } from '../../shared/masters-view.ts';
import { startMasterGroup } from '../harness/master-group.ts';
import { Cleanup, freePort, getJson, waitFor } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';

const SECRET = 'catch-up-test-secret-0123456789abc';
const CATCH_UP_MS = 1500;
const cleanup = new Cleanup();
const masters: MasterHandle[] = [];
afterAll(async () => {
  await Promise.all(masters.map((m) => m.stop()));
  await cleanup.run();
});

describe('adding a master that does not catch up', () => {
  it('gives up after the limit, leaves it a learner, and the group goes on', async () => {
    const dir = cleanup.dir('cairn-raft-catchup-');
    masters.push(...(await startMasterGroup(dir, 3, SECRET, { catchUpTimeoutMs: CATCH_UP_MS })));
    const leader = await waitFor('a leader', () => masters.find((m) => m.raft?.status().role === 'leader'), 20_000);
    const nobody = `http://127.0.0.1:${await freePort()}`;

    // A leader just elected answers 503 until its first entry commits: ask again, as a client would.
    let started = Date.now();
    let r = await authFetch(`${leader.url}/api/v1/masters`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 4, url: nobody }) });
    for (let tries = 0; r.status === 503 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      started = Date.now();
      r = await authFetch(`${leader.url}/api/v1/masters`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 4, url: nobody }) });
    }
    const body = (await r.json()) as { code: string; message: string; field?: string };
    expect(Date.now() - started, `${r.status} ${JSON.stringify(body)}`).toBeGreaterThanOrEqual(CATCH_UP_MS);
    expect(r.status).toBe(409);
    expect(body).toMatchObject({ code: 'CAIRN_RAFT_LEARNER_BEHIND', field: 'id' });
    expect(body.message).toMatch(new RegExp(`master 4 has not caught up within 2 s .*is it running at ${nobody}, started with --new-member\\?`));

    const listed = (await getJson(`${leader.url}/api/v1/masters`)) as MastersView;
    expect(listed.masters.map((m) => [m.id, m.voter])).toEqual([[1, true], [2, true], [3, true], [4, false]]);

    // Still three voters: a write commits with the learner down.
    const put = await authFetch(`${leader.url}/api/v1/roles/with-a-learner-behind`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weight: 3 }) });
    expect(put.status).toBe(200);

    const removed = await authFetch(`${leader.url}/api/v1/masters/4`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    const after = (await getJson(`${leader.url}/api/v1/masters`)) as MastersView;
    expect(after.masters.map((m) => m.id)).toEqual([1, 2, 3]);
  });
});
