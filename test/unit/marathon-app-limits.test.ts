// Marathon's own limits and the ones that keep an app's tasks launchable (issue 22, finding 7):
// a 5,000-character id, `instances: 1e8`, 900 KB of environment and over-long labels are
// refused at submit, 422 with details naming the field as Marathon answers; an app at every
// bound still makes tasks the scheduler API takes whole.

import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { MarathonError } from '../../master/frameworks/services/app-errors.ts';
import { MAX_APP_ID_LENGTH, MAX_APP_INSTANCES } from '../../master/frameworks/services/app-limits.ts';
import { buildTaskInfo, marathonTaskId } from '../../master/frameworks/services/task-info.ts';
import { parseSchedulerCall } from '../../master/scheduler-calls.ts';
import { compileObjectLimits } from '../../shared/sharing/object-limits.ts';
import { Resources } from '../../shared/resources.ts';

function details(raw: unknown, limits = compileObjectLimits()): { path: string; errors: string[] }[] {
  try {
    parseApp(raw, undefined, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(MarathonError);
    expect((err as MarathonError).status).toBe(422);
    expect((err as MarathonError).message).toBe('Object is not valid');
    return (err as MarathonError).details!;
  }
  throw new Error('expected a refusal');
}

const paths = (raw: unknown, limits?: ReturnType<typeof compileObjectLimits>) => details(raw, limits).map((d) => d.path);

/** An id of `n` characters, its leading slash counted, in segments of at most 63. */
function idOf(n: number): string {
  const parts: string[] = [];
  let left = n;
  while (left > 0) {
    const len = Math.min(63, left - 1);
    parts.push('a'.repeat(Math.max(1, len)));
    left -= len + 1;
  }
  return `/${parts.join('/')}`.slice(0, n);
}

describe("Marathon's limits on an app", () => {
  it('refuses an id of 5,000 characters naming id, and a segment longer than a DNS label', () => {
    const d = details({ id: 'a'.repeat(5000), cmd: 'sleep 1' });
    expect(d.map((x) => x.path)).toEqual(['/id']);
    expect(d[0]!.errors.join(' ')).toMatch(/is 5001 characters; an app id is at most 219 .*at most 255/);
    expect(paths({ id: `/team/${'b'.repeat(64)}`, cmd: 'x' })).toEqual(['/id']);
  });

  it('takes an id at the bound, whose tasks the scheduler API then takes whole', () => {
    const id = idOf(MAX_APP_ID_LENGTH);
    expect(id.length).toBe(MAX_APP_ID_LENGTH);
    const { app } = parseApp({ id, cmd: 'sleep 1', labels: { team: 'x'.repeat(4096) } });
    expect(paths({ id: `${id}b`, cmd: 'x' })).toEqual(['/id']);
    const task = buildTaskInfo({ app, version: '2024-01-01T00:00:00.000Z', configVersion: '2024-01-01T00:00:00.000Z' }, {
      appId: app.id, configVersion: 'v', offerId: 'o', agentId: 'a1', hostname: 'h', attributes: {}, resources: Resources.parse('cpus:1;mem:128;ports:[31000-31000]'), ports: [31000],
    }, marathonTaskId(app.id, randomUUID()));
    expect(task.task_id.value.length).toBe(255);
    const call = parseSchedulerCall({ type: 'ACCEPT', framework_id: { value: 'fw' }, accept: { offer_ids: [{ value: 'o' }], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }] } });
    expect(call).toMatchObject({ type: 'ACCEPT', tasks: [{ taskId: task.task_id.value }] });
    expect(call).not.toHaveProperty('refused');
  });

  it('refuses instances: 1e8 naming instances', () => {
    const d = details(JSON.parse('{"id": "web", "cmd": "x", "instances": 1e8}'));
    expect(d).toEqual([{ path: '/instances', errors: [`got 100000000, expected ${MAX_APP_INSTANCES} or less`] }]);
    expect(parseApp({ id: 'web', cmd: 'x', instances: MAX_APP_INSTANCES }).app.instances).toBe(MAX_APP_INSTANCES);
  });

  it('refuses 900 KB of environment naming the variable and the task env cap', () => {
    const d = details({ id: 'fat', cmd: 'x', env: { BIG: 'x'.repeat(900 * 1024) } });
    expect(d.find((x) => x.path === '/env/BIG')!.errors.join(' ')).toMatch(/921600 characters, at most 65536/);
    expect(d.find((x) => x.path === '/env')!.errors.join(' ')).toMatch(/bytes; a task carries at most 131072 \(the master's --max-task-env\)/);
    // Many variables each within their bound, together past the cap.
    const many = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`V${i}`, 'x'.repeat(60_000)]));
    expect(paths({ id: 'fat', cmd: 'x', env: many })).toEqual(['/env']);
    // The cap is the master's setting.
    expect(parseApp({ id: 'fat', cmd: 'x', env: many }, undefined, compileObjectLimits({ maxTaskEnvBytes: 256 * 1024 })).app.env.V0).toHaveLength(60_000);
    expect(paths({ id: 'small', cmd: 'x', env: { A: 'x'.repeat(2000) } }, compileObjectLimits({ maxTaskEnvBytes: 2048 }))).toEqual(['/env']);
  });

  it('counts the variables labels make (MARATHON_APP_LABEL_<NAME>) and bounds labels as Marathon and the scheduler API do', () => {
    expect(paths({ id: 'l', cmd: 'x', labels: { k: 'v'.repeat(4097) } })).toEqual(['/labels/k']);
    expect(paths({ id: 'l', cmd: 'x', labels: { ['k'.repeat(256)]: 'v' } })).toContain(`/labels/${'k'.repeat(64)}`);
    // Each label's value goes into the environment too: 40 labels of 4 KiB are past 128 KiB.
    const labels = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`l${i}`, 'v'.repeat(4096)]));
    expect(paths({ id: 'l', cmd: 'x', labels })).toEqual(['/env']);
    expect(paths({ id: 'l', cmd: 'x'.repeat(65537) })).toEqual(['/cmd']);
  });
});
