// The jobs API as tests use it against a real master: submit a document, read a job, wait
// for it to end, find a replica, read a task's whole log.

import { expect } from 'vitest';
import { authFetch } from './credentials.ts';
import { waitFor } from './processes.ts';
import type { JobView } from '../../shared/jobs/model.ts';
import type { ReplicaStatus } from '../../shared/jobs/model.ts';

export interface JobsApi {
  /** POSTs a job (JSON, or YAML with its content type); expects 201. */
  submit(doc: unknown, contentType?: string): Promise<{ name: string; ignored: unknown[] }>;
  job(name: string): Promise<JobView>;
  /** The job once Succeeded or Failed. */
  finished(name: string, timeoutMs: number): Promise<JobView>;
  /** A task's whole stdout (or stderr) as the logs API pages it. */
  taskLog(taskId: string, stream?: 'stdout' | 'stderr'): Promise<string>;
}

/** The API of the master at `url()` (read at each call: the master is started later). */
export function jobsApi(url: () => string): JobsApi {
  const api: JobsApi = {
    async submit(doc, contentType = 'application/json') {
      const r = await authFetch(`${url()}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': contentType }, body: typeof doc === 'string' ? doc : JSON.stringify(doc) });
      const body = await r.json();
      expect(r.status, JSON.stringify(body)).toBe(201);
      return body;
    },
    async job(name) {
      const r = await authFetch(`${url()}/api/v1/jobs/${name}`);
      expect(r.status).toBe(200);
      return (await r.json()) as JobView;
    },
    finished(name, timeoutMs) {
      return waitFor(`job ${name} finished`, async () => {
        const j = await api.job(name);
        return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
      }, timeoutMs, 250);
    },
    async taskLog(taskId, stream = 'stdout') {
      let out = '';
      let offset = 0;
      for (;;) {
        const r = await authFetch(`${url()}/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=${stream}&offset=${offset}`);
        if (!r.ok) throw new Error(`logs of ${taskId}: ${r.status} ${await r.text()}`);
        const chunk = (await r.json()) as { data: string; nextOffset: number };
        if (chunk.data === '' || chunk.nextOffset === offset) return out;
        out += chunk.data;
        offset = chunk.nextOffset;
      }
    },
  };
  return api;
}

/** A job's replica; throws when the job has none such. */
export function replicaOf(j: JobView, group: string, index: number): ReplicaStatus {
  const r = j.replicas.find((x) => x.group === group && x.index === index);
  if (!r) throw new Error(`job ${j.name} has no ${group} ${index}`);
  return r;
}

/** A Kubeflow PyTorchJob of 1 Master and `workers` Workers, each running `command`. */
export function pytorchJobYaml(name: string, command: readonly string[], opts: { workers?: number; cpu?: string; memory?: string; env?: Record<string, string> } = {}): string {
  const env = Object.entries(opts.env ?? {}).map(([k, v]) => ({ name: k, value: v }));
  return [
    'apiVersion: kubeflow.org/v1',
    'kind: PyTorchJob',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  pytorchReplicaSpecs:',
    ...(['Master', 'Worker'] as const).flatMap((role) => [
      `    ${role}:`,
      `      replicas: ${role === 'Master' ? 1 : (opts.workers ?? 3)}`,
      '      restartPolicy: OnFailure',
      '      template:',
      '        spec:',
      '          containers:',
      '            - name: pytorch',
      `              command: ${JSON.stringify(command)}`,
      ...(env.length > 0 ? [`              env: ${JSON.stringify(env)}`] : []),
      '              resources:',
      `                requests: {cpu: ${opts.cpu ?? '500m'}, memory: ${opts.memory ?? '1Gi'}}`,
    ]),
  ].join('\n');
}
