// Volcano's Job (batch.volcano.sh/v1alpha1), unchanged, as Cairn's own job document. It is a
// `batch` job, unless its `cairn.io/kind` label names another kind (a ps-lite job whose tasks
// are scheduler, server and worker says `cairn.io/kind: pslite`). Each task is a group of its
// name; its pod template (see pod-template) gives the replica, and the pod's restartPolicy the
// group's. spec.minAvailable, spec.maxRetry (Volcano's default 3 when absent),
// spec.ttlSecondsAfterFinished and the lifecycle policies (job- and task-level) are kept;
// spec.queue is the job's role (the queue `default` is the role '*').
// The env and svc plugins are what Cairn does for every batch job (VC_TASK_INDEX,
// VK_TASK_INDEX, VC_<TASK>_HOSTS and VC_<TASK>_NUM, with replicas' DNS names as the hosts);
// other plugins are listed as ignored.
//
// Policies: PodFailed, PodEvicted and TaskFailed are TaskFailed (a replica ended badly or was
// lost); TaskCompleted is TaskCompleted; Unknown (part of a gang cannot be scheduled) is
// Unschedulable; `*` is TaskFailed and Unschedulable. TerminateJob is AbortJob and RestartPod
// is RestartTask; the controller-internal events and queue actions are ignored, as are
// exit-code policies (use restartPolicy ExitCode) and timeouts.

import { JOB_KINDS, type IgnoredField } from './model.ts';
import { invalidJob, keyPath } from './field-paths.ts';
import { objectAt, readTopLevel, translated, type Doc, type Translated } from './k8s-document.ts';
import { addTemplatePaths, translatePodTemplate } from './pod-template.ts';

export const VOLCANO_API_VERSION = 'batch.volcano.sh/v1alpha1';
export const KIND_LABEL = 'cairn.io/kind';
/** Volcano's default maxRetry. */
export const VOLCANO_MAX_RETRY = 3;

const EVENTS: Record<string, string[]> = {
  PodFailed: ['TaskFailed'],
  PodEvicted: ['TaskFailed'],
  TaskFailed: ['TaskFailed'],
  TaskCompleted: ['TaskCompleted'],
  Unknown: ['Unschedulable'],
  '*': ['TaskFailed', 'Unschedulable'],
};
const INTERNAL_EVENTS = ['OutOfSync', 'CommandIssued', 'JobUpdated'];
const ACTIONS: Record<string, string> = {
  AbortJob: 'AbortJob',
  TerminateJob: 'AbortJob',
  RestartJob: 'RestartJob',
  RestartTask: 'RestartTask',
  RestartPod: 'RestartTask',
  CompleteJob: 'CompleteJob',
};
const UNSUPPORTED_ACTIONS = ['ResumeJob', 'SyncJob', 'EnqueueJob', 'SyncQueue', 'OpenQueue', 'CloseQueue'];

const SPEC_WHY: Record<string, string> = {
  schedulerName: 'Cairn\'s job engine places every job itself',
  volumes: 'persistent volume claims do not exist in Cairn: mount a hostPath of a shared filesystem in the task template',
  runningEstimate: 'not used by Cairn\'s placement',
  minSuccess: 'success is decided by the job\'s kind (every replica, for batch)',
  networkTopology: 'Cairn places replicas where offers fit',
};
const TASK_WHY: Record<string, string> = {
  minAvailable: 'the gang is the job\'s minAvailable',
  maxRetry: 'retries are counted for the job (spec.maxRetry)',
  dependsOn: 'a job\'s groups start together (a gang)',
  topologyPolicy: 'Cairn places replicas where offers fit',
};
const PLUGIN_WHY: Record<string, string> = {
  ssh: 'replicas reach each other by DNS name; ssh keys are not distributed',
  tensorflow: `label the job ${KIND_LABEL}: tensorflow for TF_CONFIG`,
  pytorch: `label the job ${KIND_LABEL}: pytorch for MASTER_ADDR, WORLD_SIZE and RANK`,
};

/** Volcano's policies at `at` as Cairn's failure policies (for `group` when a task's). */
function readPolicies(value: unknown, at: string, group: string | undefined, out: Doc[], paths: Map<string, string>, ignored: IgnoredField[]): void {
  if (!Array.isArray(value)) throw invalidJob(at, 'must be a list of {event, action}');
  Array.from(value as unknown[]).forEach((p, i) => {
    const pat = `${at}[${i}]`;
    const policy = objectAt(p, pat);
    if (policy.exitCode !== undefined) {
      ignored.push({ path: pat, why: 'exit-code policies are not supported: use restartPolicy ExitCode (exit codes from 128 are retried)' });
      return;
    }
    const events: { value: unknown; path: string }[] = [];
    if (policy.event !== undefined) events.push({ value: policy.event, path: `${pat}.event` });
    if (policy.events !== undefined) {
      if (!Array.isArray(policy.events)) throw invalidJob(`${pat}.events`, 'must be a list of events');
      Array.from(policy.events as unknown[]).forEach((e, j) => events.push({ value: e, path: `${pat}.events[${j}]` }));
    }
    if (events.length === 0) throw invalidJob(`${pat}.event`, 'is required');
    for (const key of Object.keys(policy)) {
      if (key === 'timeout') ignored.push({ path: `${pat}.timeout`, why: 'the action is taken at once' });
      else if (!['event', 'events', 'action'].includes(key)) ignored.push({ path: keyPath(pat, key), why: 'not a field of a lifecycle policy Cairn reads' });
    }
    const action = typeof policy.action === 'string' && policy.action in ACTIONS ? ACTIONS[policy.action] : policy.action;
    if (typeof policy.action === 'string' && UNSUPPORTED_ACTIONS.includes(policy.action)) {
      ignored.push({ path: pat, why: `action ${policy.action} acts on Volcano's queues and controller; Cairn has no equivalent` });
      return;
    }
    for (const event of events) {
      if (typeof event.value === 'string' && INTERNAL_EVENTS.includes(event.value)) {
        ignored.push({ path: event.path, why: `${event.value} is an event of Volcano's controller` });
        continue;
      }
      // An unknown event or action goes through as it is: spec-validate refuses it, naming it.
      const mapped = typeof event.value === 'string' && event.value in EVENTS ? EVENTS[event.value] : [event.value];
      for (const e of mapped) {
        // PodFailed and PodEvicted are both TaskFailed: one policy says it once.
        if (out.some((o) => o.event === e && o.action === action && o.group === group)) continue;
        const base = `failurePolicies[${out.length}]`;
        const cairn: Doc = { event: e, action };
        if (group !== undefined) cairn.group = group;
        out.push(cairn);
        paths.set(base, pat);
        paths.set(`${base}.event`, event.path);
        paths.set(`${base}.action`, `${pat}.action`);
      }
    }
  });
}

/** A Volcano Job as Cairn's job document. */
export function translateVolcano(doc: Doc): Translated {
  const paths = new Map<string, string>();
  const ignored: IgnoredField[] = [];
  const { name, labels } = readTopLevel(doc, 'Volcano Job', paths, ignored, [KIND_LABEL]);
  let kind: unknown = 'batch';
  if (labels[KIND_LABEL] !== undefined) {
    kind = labels[KIND_LABEL];
    const at = keyPath('metadata.labels', KIND_LABEL);
    if (typeof kind !== 'string' || !(JOB_KINDS as readonly string[]).includes(kind)) {
      throw invalidJob(at, `${JSON.stringify(kind)} is not a Cairn job kind (expected one of: ${JOB_KINDS.join(', ')})`);
    }
    paths.set('kind', at);
  }
  const out: Doc = { name, kind };
  if (doc.spec === undefined) throw invalidJob('spec.tasks', 'is required: the job\'s tasks');
  const spec = objectAt(doc.spec, 'spec');
  if (spec.tasks === undefined) throw invalidJob('spec.tasks', 'is required: the job\'s tasks');
  if (!Array.isArray(spec.tasks)) throw invalidJob('spec.tasks', 'must be a list of tasks');
  paths.set('groups', 'spec.tasks');
  const failurePolicies: Doc[] = [];
  out.groups = Array.from(spec.tasks as unknown[]).map((t, i) => {
    const at = `spec.tasks[${i}]`;
    const base = `groups[${i}]`;
    const task = objectAt(t, at);
    const group: Doc = {};
    paths.set(base, at);
    for (const field of ['name', 'replicas'] as const) {
      if (task[field] !== undefined && task[field] !== null) group[field] = task[field];
      paths.set(`${base}.${field}`, `${at}.${field}`);
    }
    for (const key of Object.keys(task)) {
      if (!['name', 'replicas', 'template', 'policies'].includes(key)) ignored.push({ path: keyPath(at, key), why: TASK_WHY[key] ?? 'not a field of a task Cairn reads' });
    }
    if (task.template === undefined) throw invalidJob(`${at}.template`, 'is required: the pod template each replica runs');
    const pod = translatePodTemplate(task.template, `${at}.template`, undefined, ignored);
    if (pod.podRestartPolicy) {
      group.restartPolicy = pod.podRestartPolicy.value;
      paths.set(`${base}.restartPolicy`, pod.podRestartPolicy.path);
    }
    group.template = pod.template;
    addTemplatePaths(paths, `${base}.template`, pod);
    if (task.policies !== undefined) readPolicies(task.policies, `${at}.policies`, typeof task.name === 'string' ? task.name : undefined, failurePolicies, paths, ignored);
    return group;
  });

  for (const [key, value] of Object.entries(spec)) {
    const at = keyPath('spec', key);
    if (key === 'tasks') continue;
    if (key === 'minAvailable' || key === 'ttlSecondsAfterFinished') {
      out[key] = value;
      paths.set(key, at);
    } else if (key === 'maxRetry') {
      out.maxRetry = value;
      paths.set('maxRetry', at);
    } else if (key === 'queue') {
      out.role = value === 'default' ? '*' : value;
      paths.set('role', at);
    } else if (key === 'priorityClassName') {
      out.priorityClassName = value;
      paths.set('priorityClassName', at);
    } else if (key === 'policies') {
      readPolicies(value, at, undefined, failurePolicies, paths, ignored);
    } else if (key === 'plugins') {
      for (const plugin of Object.keys(objectAt(value, at))) {
        if (plugin !== 'env' && plugin !== 'svc') {
          ignored.push({ path: keyPath(at, plugin), why: PLUGIN_WHY[plugin] ?? 'Cairn sets each kind\'s environment itself; this plugin has no equivalent' });
        }
      }
    } else {
      ignored.push({ path: at, why: SPEC_WHY[key] ?? 'not a field Cairn reads from a Volcano Job' });
    }
  }
  out.maxRetry ??= VOLCANO_MAX_RETRY;
  if (failurePolicies.length > 0) {
    out.failurePolicies = failurePolicies;
    paths.set('failurePolicies', 'spec.policies');
  }
  return translated(out, paths, ignored);
}
