// What the services framework keeps in its replicated store, and under which keys. Apps,
// their versions, deployments and instances are written before the framework acts on them
// (launch, kill), so a new leader reads back exactly what the old one had decided.

import type { JsonValue } from '../../../shared/framework-host/store.ts';
import type { FrameworkStore } from '../../../shared/framework-host/store.ts';
import type { AppDefinition, StoredApp } from './app-model.ts';

/** Marathon's `TaskFailure` (types/task.raml): the app's last task that failed. */
export interface TaskFailureRecord {
  appId: string;
  host: string;
  message: string;
  state: string;
  taskId: string;
  timestamp: string;
  version: string;
  slaveId: string;
}

export const FRAMEWORK_ID_KEY = 'framework-id';
export const appKey = (appId: string) => `app/${appId}`;
export const versionKey = (appId: string, version: string) => `version/${appId}/${version}`;
export const deploymentKey = (id: string) => `deployment/${id}`;
export const instanceKey = (taskId: string) => `instance/${taskId}`;
/** The app's last failed task, as Marathon's `lastTaskFailure` shows it. */
export const failureKey = (appId: string) => `failure/${appId}`;

export type DeploymentAction = 'StartApplication' | 'ScaleApplication' | 'RestartApplication' | 'StopApplication';

export interface DeploymentRecord {
  id: string;
  appId: string;
  /** The app's version this deployment brings about (for a stop: when it was asked). */
  version: string;
  action: DeploymentAction;
  /** The app before: what a rollback restores; null when the deployment created it. */
  previous: StoredApp | null;
  /** The app after (null for a stop). */
  target: StoredApp | null;
}

export interface InstanceRecord {
  taskId: string;
  appId: string;
  version: string;
  configVersion: string;
  agentId: string;
  hostname: string;
  attributes: Record<string, string>;
  ports: number[];
  launchedAtMs: number;
  /** Set, and written, before the kill is sent. */
  killRequested?: boolean;
}

const json = (v: unknown) => v as JsonValue;

export class ServicesRecords {
  constructor(readonly store: FrameworkStore) {}

  frameworkId(): string | undefined {
    const v = this.store.get(FRAMEWORK_ID_KEY);
    return typeof v === 'string' && v !== '' ? v : undefined;
  }

  app(appId: string): StoredApp | undefined {
    return this.store.get(appKey(appId)) as unknown as StoredApp | undefined;
  }

  apps(): StoredApp[] {
    return this.store.entries('app/').map(([, v]) => v as unknown as StoredApp);
  }

  versions(appId: string): string[] {
    const prefix = `version/${appId}/`;
    // A nested app's versions share the prefix (`/a` and `/a/b`): a version has no slash.
    return this.store.entries(prefix).map(([k]) => k.slice(prefix.length)).filter((v) => !v.includes('/'));
  }

  version(appId: string, version: string): AppDefinition | undefined {
    return this.store.get(versionKey(appId, version)) as unknown as AppDefinition | undefined;
  }

  deployments(): DeploymentRecord[] {
    return this.store.entries('deployment/').map(([, v]) => v as unknown as DeploymentRecord);
  }

  deployment(id: string): DeploymentRecord | undefined {
    return this.store.get(deploymentKey(id)) as unknown as DeploymentRecord | undefined;
  }

  lastFailure(appId: string): TaskFailureRecord | undefined {
    return this.store.get(failureKey(appId)) as unknown as TaskFailureRecord | undefined;
  }

  instances(): InstanceRecord[] {
    return this.store.entries('instance/').map(([, v]) => v as unknown as InstanceRecord);
  }

  /** The puts that set an app, record its version and start its deployment, in one write. */
  static appChange(stored: StoredApp, deployment: DeploymentRecord, cancelled: readonly string[]) {
    return [
      { key: appKey(stored.app.id), value: json(stored) },
      { key: versionKey(stored.app.id, stored.version), value: json(stored.app) },
      ...cancelled.map((id) => ({ key: deploymentKey(id), value: null })),
      { key: deploymentKey(deployment.id), value: json(deployment) },
    ];
  }

  static put(key: string, value: unknown) {
    return { key, value: value === null ? null : json(value) };
  }
}
