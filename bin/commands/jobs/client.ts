// The jobs API as the command line reads it: `/api/v1/jobs` on the masters given, following
// a follower's redirect to the leader with the credential kept (fetch would drop it on the
// way to another origin), trying the next master when one cannot be reached (../common/master-api-client.ts).

import type { JobView } from '../../../shared/jobs/model.ts';
import { MasterApiClient } from '../common/master-api-client.ts';

export interface SubmitAnswer {
  name: string;
  ignored: { path: string; why: string }[];
  /** With allowUnschedulable: the replicas no agent can hold, and why. */
  warnings?: string[];
}

export class JobsClient extends MasterApiClient {
  /** `allowUnschedulable`: submit a job no agent can hold yet instead of having it refused. */
  submit(document: string, contentType: string, allowUnschedulable = false): Promise<SubmitAnswer> {
    return this.json('POST', `/api/v1/jobs${allowUnschedulable ? '?allowUnschedulable=true' : ''}`, 'submitting the job', { body: document, contentType });
  }

  async list(): Promise<JobView[]> {
    return (await this.json<{ jobs: JobView[] }>('GET', '/api/v1/jobs', 'listing jobs')).jobs;
  }

  get(name: string): Promise<JobView> {
    return this.json('GET', `/api/v1/jobs/${encodeURIComponent(name)}`, `reading job ${name}`);
  }

  async remove(name: string): Promise<void> {
    await this.json('DELETE', `/api/v1/jobs/${encodeURIComponent(name)}`, `deleting job ${name}`);
  }

  private async json<T>(method: string, path: string, what: string, send?: { body: string; contentType: string }): Promise<T> {
    return JSON.parse(await this.request(method, path, what, send)) as T;
  }
}
