// The tuning API as the command line reads it: `/api/v1/experiments` on the masters given,
// following a follower's redirect to the leader with the credential kept (fetch would drop it
// on the way to another origin), trying the next master when one cannot be reached, as the
// jobs client does (both through ../common/master-api-client.ts).

import type { ExperimentSummary, ExperimentView } from '../../../shared/tuning/views.ts';
import type { IgnoredField } from '../../../shared/tuning/model.ts';
import { MasterApiClient } from '../common/master-api-client.ts';

export interface ExperimentSubmitAnswer {
  name: string;
  seed: number;
  ignored: IgnoredField[];
}

export interface ResumeLimits {
  maxTrialCount?: number;
  maxFailedTrialCount?: number;
}

export class ExperimentsClient extends MasterApiClient {
  submit(document: string, contentType: string): Promise<ExperimentSubmitAnswer> {
    return this.json('POST', '/api/v1/experiments', 'submitting the experiment', { body: document, contentType });
  }

  async list(): Promise<ExperimentSummary[]> {
    return (await this.json<{ experiments: ExperimentSummary[] }>('GET', '/api/v1/experiments', 'listing experiments')).experiments;
  }

  get(name: string): Promise<ExperimentView> {
    return this.json('GET', `/api/v1/experiments/${encodeURIComponent(name)}`, `reading experiment ${name}`);
  }

  async stop(name: string): Promise<void> {
    await this.json('POST', `/api/v1/experiments/${encodeURIComponent(name)}/stop`, `stopping experiment ${name}`, { body: '{}', contentType: 'application/json' });
  }

  async resume(name: string, limits: ResumeLimits): Promise<void> {
    await this.json('POST', `/api/v1/experiments/${encodeURIComponent(name)}/resume`, `resuming experiment ${name}`, { body: JSON.stringify(limits), contentType: 'application/json' });
  }

  async remove(name: string): Promise<void> {
    await this.json('DELETE', `/api/v1/experiments/${encodeURIComponent(name)}`, `deleting experiment ${name}`);
  }

  private async json<T>(method: string, path: string, what: string, send?: { body: string; contentType: string }): Promise<T> {
    const text = await this.request(method, path, what, send);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }
}
