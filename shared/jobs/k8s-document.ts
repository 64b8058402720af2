// What the Kubernetes-style formats (Kubeflow's TFJob and PyTorchJob, Volcano's Job) have in
// common: an object with apiVersion, kind, metadata and spec, whose name is metadata.name.
// Each is translated into Cairn's own job document plus a Locate back to the user's paths;
// spec-validate then checks it as it checks any Cairn document.

import type { IgnoredField } from './model.ts';
import { invalidJob, keyPath, mappedLocator, type Locate } from './field-paths.ts';

export type Doc = Record<string, unknown>;

/** A foreign document as Cairn's own, with where each field came from and what was left out. */
export interface Translated {
  document: Doc;
  locate: Locate;
  ignored: IgnoredField[];
}

export function isObject(v: unknown): v is Doc {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function objectAt(v: unknown, path: string): Doc {
  if (!isObject(v)) throw invalidJob(path, `must be an object, not ${v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v}`);
  return v;
}

/** Builds a Translated: `paths` maps Cairn's fields to the user's. */
export function translated(document: Doc, paths: Map<string, string>, ignored: IgnoredField[]): Translated {
  return { document, locate: mappedLocator(paths), ignored };
}

/**
 * The top level and metadata: sets the job's name (checked later as Cairn's `name`), and
 * lists every other top-level or metadata field as ignored, except those in `keepLabels`.
 */
export function readTopLevel(doc: Doc, what: string, paths: Map<string, string>, ignored: IgnoredField[], keepLabels: readonly string[] = []): { name: unknown; labels: Doc } {
  for (const key of Object.keys(doc)) {
    if (key === 'status') ignored.push({ path: 'status', why: `the status is written by Cairn, not read from the ${what}` });
    else if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(key)) ignored.push({ path: keyPath('', key), why: `not a field of a ${what}` });
  }
  if (doc.metadata === undefined) throw invalidJob('metadata.name', `is required: the job's name`);
  const meta = objectAt(doc.metadata, 'metadata');
  paths.set('name', 'metadata.name');
  let labels: Doc = {};
  for (const key of Object.keys(meta)) {
    if (key === 'name') continue;
    if (key === 'labels') {
      labels = objectAt(meta.labels, 'metadata.labels');
      for (const label of Object.keys(labels)) {
        if (!keepLabels.includes(label)) ignored.push({ path: keyPath('metadata.labels', label), why: 'Cairn jobs carry no labels' });
      }
    } else if (key === 'namespace') {
      ignored.push({ path: 'metadata.namespace', why: 'Cairn has no namespaces: a job\'s name is unique in the cluster' });
    } else {
      ignored.push({ path: keyPath('metadata', key), why: 'only metadata.name (and the cairn.io/kind label) is read' });
    }
  }
  return { name: meta.name, labels };
}
