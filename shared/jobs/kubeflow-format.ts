// Kubeflow's TFJob and PyTorchJob (kubeflow.org/v1), unchanged, as Cairn's own job document.
// Each replica type becomes a group named in lower case (PS → ps, Chief → chief, Master →
// master); its replicas, restartPolicy and pod template (see pod-template) are kept, and so
// are runPolicy (cleanPodPolicy, ttlSecondsAfterFinished, activeDeadlineSeconds,
// backoffLimit, schedulingPolicy.minAvailable and .queue as the role) and TFJob's
// successPolicy. The older v1 layout with those fields directly under spec is read too.
// Defaults follow Kubeflow where it has one (replicas 1; restartPolicy Never for a TFJob,
// OnFailure for a PyTorchJob); cleanPodPolicy, which Kubeflow now defaults to None, keeps
// Cairn's default (Running for TensorFlow: parameter servers never exit on their own).
// Kubeflow requires an image; Cairn runs the command as a process when there is none.

import type { IgnoredField, JobKind, RestartPolicy } from './model.ts';
import { invalidJob, keyPath } from './field-paths.ts';
import { isObject, objectAt, readTopLevel, translated, type Doc, type Translated } from './k8s-document.ts';
import { addTemplatePaths, translatePodTemplate } from './pod-template.ts';

export const KUBEFLOW_API_VERSION = 'kubeflow.org/v1';

interface KubeflowKind {
  jobKind: JobKind;
  specKey: string;
  /** Replica types in Kubeflow's spelling, in the order the groups are listed. */
  replicaTypes: readonly string[];
  /** The container Kubeflow treats as the replica's own (others are sidecars). */
  container: string;
  restartPolicy: RestartPolicy;
  /** spec fields of the kind that Cairn does not honour, with why. */
  ignoredSpec: Record<string, string>;
}

export const KUBEFLOW_KINDS: Record<string, KubeflowKind> = {
  TFJob: {
    jobKind: 'tensorflow',
    specKey: 'tfReplicaSpecs',
    replicaTypes: ['Chief', 'Master', 'PS', 'Worker', 'Evaluator'],
    container: 'tensorflow',
    restartPolicy: 'Never',
    ignoredSpec: { enableDynamicWorker: 'the cluster in TF_CONFIG is fixed for the job\'s life' },
  },
  PyTorchJob: {
    jobKind: 'pytorch',
    specKey: 'pytorchReplicaSpecs',
    replicaTypes: ['Master', 'Worker'],
    container: 'pytorch',
    restartPolicy: 'OnFailure',
    ignoredSpec: {
      elasticPolicy: 'elastic training (torchrun rendezvous, scaling between min and max replicas) is not supported: the job runs with its replicas',
      nprocPerNode: 'each replica is one rank (LOCAL_RANK 0): start more processes per replica yourself',
    },
  },
};

/** runPolicy fields Cairn keeps, by their name in Cairn's document. */
const RUN_POLICY: Record<string, string> = {
  cleanPodPolicy: 'cleanupPolicy',
  ttlSecondsAfterFinished: 'ttlSecondsAfterFinished',
  activeDeadlineSeconds: 'activeDeadlineSeconds',
  backoffLimit: 'backoffLimit',
  // Cairn's own: Kubeflow leaves the wait before a restart to the kubelet (CrashLoopBackOff).
  restartBackoff: 'restartBackoff',
};

const SCHEDULING_WHY: Record<string, string> = {
  minResources: 'the gang is sized by minAvailable replicas; their resources come from their templates',
  scheduleTimeoutSeconds: 'a gang that does not fit waits with backoff; one that can never fit is Unschedulable at once',
};

function readRunPolicy(rp: Doc, at: string, out: Doc, paths: Map<string, string>, ignored: IgnoredField[]): void {
  for (const [key, value] of Object.entries(rp)) {
    const path = `${at}.${key}`;
    if (key in RUN_POLICY) {
      out[RUN_POLICY[key]] = value;
      paths.set(RUN_POLICY[key], path);
    } else if (key === 'schedulingPolicy') {
      const sp = objectAt(value, path);
      for (const [skey, svalue] of Object.entries(sp)) {
        const spath = `${path}.${skey}`;
        if (skey === 'minAvailable') {
          out.minAvailable = svalue;
          paths.set('minAvailable', spath);
        } else if (skey === 'queue') {
          out.role = svalue;
          paths.set('role', spath);
        } else if (skey === 'priorityClass') {
          out.priorityClassName = svalue;
          paths.set('priorityClassName', spath);
        } else {
          ignored.push({ path: keyPath(path, skey), why: SCHEDULING_WHY[skey] ?? 'not supported by Cairn' });
        }
      }
    } else if (key === 'suspend' && value === false) {
      // The default: nothing to honour.
    } else {
      ignored.push({ path: keyPath(at, key), why: key === 'suspend' ? 'suspending a job is not supported: submit it when it should run' : 'not supported by Cairn' });
    }
  }
}

/** A TFJob or PyTorchJob (`kind` says which) as Cairn's job document. */
export function translateKubeflow(doc: Doc, kind: string): Translated {
  const k = KUBEFLOW_KINDS[kind];
  const paths = new Map<string, string>([['kind', 'kind']]);
  const ignored: IgnoredField[] = [];
  const { name } = readTopLevel(doc, kind, paths, ignored);
  const out: Doc = { name, kind: k.jobKind };
  if (doc.spec === undefined) throw invalidJob(`spec.${k.specKey}`, `is required: the ${kind}'s replica types`);
  const spec = objectAt(doc.spec, 'spec');

  const specsAt = `spec.${k.specKey}`;
  if (spec[k.specKey] === undefined) throw invalidJob(specsAt, `is required: the ${kind}'s replica types (${k.replicaTypes.join(', ')})`);
  const specs = objectAt(spec[k.specKey], specsAt);
  paths.set('groups', specsAt);
  // Kubeflow accepts replica types in any case (ps, PS, Ps) and writes them back camel-cased.
  const byType = new Map<string, string>();
  for (const key of Object.keys(specs)) {
    const type = k.replicaTypes.find((t) => t.toLowerCase() === key.toLowerCase());
    if (type === undefined) throw invalidJob(keyPath(specsAt, key), `'${key}' is not a ${kind} replica type (expected one of: ${k.replicaTypes.join(', ')})`);
    if (byType.has(type)) throw invalidJob(keyPath(specsAt, key), `repeats replica type ${type} (as '${byType.get(type)}')`);
    byType.set(type, key);
  }
  const groups: Doc[] = [];
  for (const type of k.replicaTypes) {
    const key = byType.get(type);
    if (key === undefined) continue;
    const at = keyPath(specsAt, key);
    const rs = objectAt(specs[key], at);
    const base = `groups[${groups.length}]`;
    const group: Doc = { name: type.toLowerCase(), restartPolicy: k.restartPolicy };
    paths.set(base, at);
    paths.set(`${base}.name`, at);
    paths.set(`${base}.replicas`, `${at}.replicas`);
    paths.set(`${base}.restartPolicy`, `${at}.restartPolicy`);
    for (const [field, value] of Object.entries(rs)) {
      if (field === 'replicas' || field === 'restartPolicy') {
        if (value !== null) group[field] = value;
      } else if (field !== 'template') {
        ignored.push({ path: keyPath(at, field), why: 'not supported by Cairn' });
      }
    }
    if (rs.template === undefined) throw invalidJob(`${at}.template`, 'is required: the pod template whose container each replica runs');
    const pod = translatePodTemplate(rs.template, `${at}.template`, k.container, ignored);
    if (pod.podRestartPolicy) {
      ignored.push({ path: pod.podRestartPolicy.path, why: `the replica spec's restartPolicy governs (${String(group.restartPolicy)})` });
    }
    group.template = pod.template;
    addTemplatePaths(paths, `${base}.template`, pod);
    groups.push(group);
  }
  out.groups = groups;

  // The older v1 layout: run policy fields directly under spec (runPolicy wins over them).
  const legacy: Doc = {};
  for (const [key, value] of Object.entries(spec)) {
    if (key === k.specKey || key === 'runPolicy') continue;
    if (key in RUN_POLICY) {
      legacy[key] = value;
    } else if (key === 'successPolicy' && kind === 'TFJob') {
      out.successPolicy = value;
      paths.set('successPolicy', 'spec.successPolicy');
    } else {
      ignored.push({ path: keyPath('spec', key), why: k.ignoredSpec[key] ?? `not a field Cairn reads from a ${kind}` });
    }
  }
  readRunPolicy(legacy, 'spec', out, paths, ignored);
  if (spec.runPolicy !== undefined) {
    const rp = objectAt(spec.runPolicy, 'spec.runPolicy');
    for (const key of Object.keys(rp)) {
      if (key in legacy) ignored.push({ path: `spec.${key}`, why: `spec.runPolicy.${key} is given too, and wins` });
    }
    readRunPolicy(rp, 'spec.runPolicy', out, paths, ignored);
  }
  return translated(out, paths, ignored);
}

export function isKubeflowKind(kind: unknown): kind is string {
  return typeof kind === 'string' && Object.hasOwn(KUBEFLOW_KINDS, kind) && isObject(KUBEFLOW_KINDS[kind]);
}
