// A Kubernetes pod template (a TFJob's or PyTorchJob's replica template, a Volcano task's) as
// the task template of Cairn's own job document. One container is a replica: its image,
// command and args, env values, resource requests (or limits), port count and hostPath
// mounts are kept; whatever Cairn cannot honour (sidecars, init containers, node selectors,
// other volume kinds, valueFrom, containerPort numbers, ...) is listed as ignored with why,
// never dropped silently. Pure.

import type { IgnoredField } from './model.ts';
import { invalidJob, joinPath, keyPath } from './field-paths.ts';
import { coresOf, mibOf, parseQuantity } from '../quantity.ts';
import { isObject, objectAt, type Doc } from './k8s-document.ts';

export interface PodTranslation {
  /** Cairn's template document (spec-validate checks it). */
  template: Doc;
  /** Fields of that template (`cpus`, `env.X`, `volumes[0].hostPath`) → where the user wrote them. */
  paths: Map<string, string>;
  /** The pod's own restartPolicy, and where it was (Volcano takes it; Kubeflow overrides it). */
  podRestartPolicy?: { value: unknown; path: string };
}

/** Why a pod spec field is not honoured; fields not named here get the generic reason. */
const POD_FIELD_WHY: Record<string, string> = {
  initContainers: 'a replica is one task: run set-up steps at the start of its command',
  nodeSelector: 'Cairn places replicas where offers fit; node selection is not supported for jobs',
  affinity: 'Cairn places replicas where offers fit; affinity rules are not supported for jobs',
  tolerations: 'Cairn agents have no taints',
  serviceAccountName: 'Cairn has no service accounts: a replica runs as the agent\'s task user',
  serviceAccount: 'Cairn has no service accounts: a replica runs as the agent\'s task user',
  automountServiceAccountToken: 'Cairn has no service accounts',
  schedulerName: 'Cairn\'s job engine places every job itself',
  priorityClassName: 'a pod\'s class is its job\'s: set the job\'s priorityClassName (Volcano: spec.priorityClassName; Kubeflow: runPolicy.schedulingPolicy.priorityClass)',
  priority: 'a pod\'s priority is its job\'s priority class and priority',
  hostNetwork: 'container replicas always use the host\'s network; ports come from offers',
  dnsPolicy: 'replicas resolve through the agent\'s resolver (point it at the masters\' DNS)',
  dnsConfig: 'replicas resolve through the agent\'s resolver (point it at the masters\' DNS)',
  securityContext: 'a replica runs as the agent\'s task user',
  terminationGracePeriodSeconds: 'Cairn stops a task with its own grace period',
  hostname: 'a replica\'s name is <job>-<group>-<index>.jobs.<domain>',
  subdomain: 'a replica\'s name is <job>-<group>-<index>.jobs.<domain>',
};

const CONTAINER_FIELD_WHY: Record<string, string> = {
  envFrom: 'ConfigMaps and Secrets do not exist in Cairn: give the values in env',
  workingDir: 'a replica starts in its sandbox directory',
  imagePullPolicy: 'the agent pulls an image it does not have, and uses the one it has',
  securityContext: 'a replica runs as the agent\'s task user',
  livenessProbe: 'health checks are not supported for job replicas',
  readinessProbe: 'health checks are not supported for job replicas',
  startupProbe: 'health checks are not supported for job replicas',
  lifecycle: 'lifecycle hooks are not supported',
};

const GENERIC_WHY = 'Cairn cannot honour this field for a job replica';

function listAt(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw invalidJob(path, 'must be a list');
  return Array.from(v as unknown[]);
}

/** A resource of the container: `requests` first, then `limits` (the amount Kubernetes schedules by). */
function readResources(resources: unknown, at: string, template: Doc, paths: Map<string, string>, ignored: IgnoredField[]): void {
  const res = objectAt(resources, at);
  const requests = res.requests === undefined ? {} : objectAt(res.requests, `${at}.requests`);
  const limits = res.limits === undefined ? {} : objectAt(res.limits, `${at}.limits`);
  for (const key of Object.keys(res)) {
    if (key !== 'requests' && key !== 'limits') ignored.push({ path: keyPath(at, key), why: GENERIC_WHY });
  }
  const KNOWN: Record<string, { field: string; convert: (n: number) => number; integer?: boolean }> = {
    cpu: { field: 'cpus', convert: coresOf },
    memory: { field: 'mem', convert: mibOf },
    'ephemeral-storage': { field: 'disk', convert: mibOf },
    'nvidia.com/gpu': { field: 'gpus', convert: (n) => n, integer: true },
  };
  for (const [kindOf, table] of [['requests', requests], ['limits', limits]] as const) {
    for (const name of Object.keys(table)) {
      if (!(name in KNOWN)) {
        ignored.push({ path: keyPath(`${at}.${kindOf}`, name), why: 'Cairn offers cpus, memory, disk, ports and NVIDIA GPUs only' });
      }
    }
  }
  for (const [name, known] of Object.entries(KNOWN)) {
    const requested = requests[name];
    const limited = limits[name];
    const source = requested !== undefined ? 'requests' : limited !== undefined ? 'limits' : undefined;
    if (source === undefined) continue;
    const path = keyPath(`${at}.${source}`, name);
    const q = parseQuantity(source === 'requests' ? requested : limited);
    if (q === undefined) {
      throw invalidJob(path, `${JSON.stringify(source === 'requests' ? requested : limited)} is not a Kubernetes quantity (e.g. 500m, 2, 512Mi, 1Gi, 1G)`);
    }
    if (known.integer && !Number.isInteger(q)) throw invalidJob(path, `must be a whole number of GPUs, not ${q}`);
    template[known.field] = known.convert(q);
    paths.set(known.field, path);
    if (source === 'requests' && limited !== undefined) {
      const limit = parseQuantity(limited);
      if (limit === undefined) throw invalidJob(keyPath(`${at}.limits`, name), `${JSON.stringify(limited)} is not a Kubernetes quantity (e.g. 500m, 2, 512Mi, 1Gi, 1G)`);
      if (known.convert(limit) !== known.convert(q)) {
        ignored.push({ path: keyPath(`${at}.limits`, name), why: `Cairn reserves the request (${requested}) and holds the replica to it; a higher limit cannot be honoured` });
      }
    }
  }
}

/** The pod's hostPath volumes by name; other kinds are listed as ignored. */
function readPodVolumes(volumes: unknown, at: string, ignored: IgnoredField[]): Map<string, { hostPath: string; path: string }> {
  const out = new Map<string, { hostPath: string; path: string }>();
  listAt(volumes, at).forEach((v, i) => {
    const vat = `${at}[${i}]`;
    const vol = objectAt(v, vat);
    const name = typeof vol.name === 'string' ? vol.name : '';
    if (isObject(vol.hostPath) && typeof vol.hostPath.path === 'string') {
      out.set(name, { hostPath: vol.hostPath.path, path: `${vat}.hostPath.path` });
      if (vol.hostPath.type !== undefined) ignored.push({ path: `${vat}.hostPath.type`, why: 'the host path is mounted as it is, not checked or created' });
    } else {
      const kind = Object.keys(vol).find((k) => k !== 'name') ?? 'unknown';
      ignored.push({ path: vat, why: `${kind} volumes do not exist in Cairn; only hostPath volumes are mounted (point one at a shared filesystem)` });
    }
  });
  return out;
}

/**
 * Translates `template` (a pod template at `at`): its container named `containerName`, or
 * the first one, is the replica. Throws CAIRN_INVALID_JOB naming the field for what cannot be
 * read (no containers, a malformed quantity); lists the rest it cannot honour in `ignored`.
 */
export function translatePodTemplate(raw: unknown, at: string, containerName: string | undefined, ignored: IgnoredField[]): PodTranslation {
  const tpl = objectAt(raw, at);
  for (const key of Object.keys(tpl)) {
    if (key === 'metadata') ignored.push({ path: `${at}.metadata`, why: 'pod labels and annotations have no meaning for Cairn tasks' });
    else if (key !== 'spec') ignored.push({ path: keyPath(at, key), why: GENERIC_WHY });
  }
  const specAt = `${at}.spec`;
  const spec = objectAt(tpl.spec, specAt);
  const containers = listAt(spec.containers, `${specAt}.containers`);
  if (containers.length === 0) throw invalidJob(`${specAt}.containers`, 'must hold the container each replica runs');
  let chosen = containers.findIndex((c) => isObject(c) && c.name === containerName);
  if (chosen < 0) chosen = 0;
  containers.forEach((_, i) => {
    if (i !== chosen) ignored.push({ path: `${specAt}.containers[${i}]`, why: 'a replica is one task: sidecar containers are not run' });
  });

  const translation: PodTranslation = { template: {}, paths: new Map() };
  const volumes = spec.volumes === undefined ? new Map() : readPodVolumes(spec.volumes, `${specAt}.volumes`, ignored);
  for (const key of Object.keys(spec)) {
    if (key === 'containers' || key === 'volumes') continue;
    if (key === 'restartPolicy') translation.podRestartPolicy = { value: spec.restartPolicy, path: `${specAt}.restartPolicy` };
    else if (key === 'imagePullSecrets') {
      translation.template.imagePullSecrets = spec.imagePullSecrets;
      translation.paths.set('imagePullSecrets', `${specAt}.imagePullSecrets`);
    }
    else ignored.push({ path: keyPath(specAt, key), why: POD_FIELD_WHY[key] ?? GENERIC_WHY });
  }

  const cat = `${specAt}.containers[${chosen}]`;
  const c = objectAt(containers[chosen], cat);
  const { template, paths } = translation;
  paths.set('', cat);
  const HANDLED = new Set(['name', 'image', 'command', 'args', 'env', 'resources', 'ports', 'volumeMounts']);
  for (const key of Object.keys(c)) {
    if (!HANDLED.has(key)) ignored.push({ path: keyPath(cat, key), why: CONTAINER_FIELD_WHY[key] ?? GENERIC_WHY });
  }
  for (const key of ['image', 'command', 'args'] as const) {
    if (c[key] !== undefined) {
      template[key] = c[key];
      paths.set(key, `${cat}.${key}`);
    }
  }
  if (c.env !== undefined) {
    const env: Doc = {};
    listAt(c.env, `${cat}.env`).forEach((e, i) => {
      const eat = `${cat}.env[${i}]`;
      const entry = objectAt(e, eat);
      if (typeof entry.name !== 'string') throw invalidJob(`${eat}.name`, 'is required: the variable\'s name');
      if (entry.valueFrom !== undefined) {
        ignored.push({ path: `${eat}.valueFrom`, why: 'fields, ConfigMaps and Secrets do not exist in Cairn: give the value' });
        return;
      }
      env[entry.name] = entry.value ?? '';
      paths.set(`env.${entry.name}`, eat);
    });
    template.env = env;
  }
  if (c.resources !== undefined) readResources(c.resources, `${cat}.resources`, template, paths, ignored);
  if (c.ports !== undefined) {
    const ports = listAt(c.ports, `${cat}.ports`);
    if (ports.length > 0) {
      template.ports = ports.length;
      paths.set('ports', `${cat}.ports`);
    }
    ports.forEach((_, i) => {
      ignored.push({ path: `${cat}.ports[${i}].containerPort`, why: 'Cairn assigns each replica its ports from its offer: read PORT (and the addresses in the job\'s environment)' });
    });
  }
  if (c.volumeMounts !== undefined) {
    const mounts: Doc[] = [];
    listAt(c.volumeMounts, `${cat}.volumeMounts`).forEach((m, i) => {
      const mat = `${cat}.volumeMounts[${i}]`;
      const mount = objectAt(m, mat);
      const vol = volumes.get(String(mount.name));
      if (!vol) {
        ignored.push({ path: mat, why: `mounts volume '${String(mount.name)}', which is not a hostPath volume of this pod` });
        return;
      }
      const sub = typeof mount.subPath === 'string' && mount.subPath !== '' ? `/${mount.subPath.replace(/^\/+/, '')}` : '';
      const k = mounts.length;
      mounts.push({ containerPath: mount.mountPath, hostPath: sub === '' ? vol.hostPath : `${vol.hostPath.replace(/\/+$/, '')}${sub}`, mode: mount.readOnly === true ? 'RO' : 'RW' });
      paths.set(`volumes[${k}]`, mat);
      paths.set(`volumes[${k}].containerPath`, `${mat}.mountPath`);
      paths.set(`volumes[${k}].hostPath`, sub === '' ? vol.path : `${mat}.subPath`);
      for (const key of Object.keys(mount)) {
        if (!['name', 'mountPath', 'readOnly', 'subPath'].includes(key)) ignored.push({ path: keyPath(mat, key), why: GENERIC_WHY });
      }
    });
    template.volumes = mounts;
  }
  return translation;
}

/** Adds a translation's field paths under `base` (the group's template in Cairn's document). */
export function addTemplatePaths(into: Map<string, string>, base: string, translation: PodTranslation): void {
  for (const [field, path] of translation.paths) into.set(joinPath(base, field), path);
}
