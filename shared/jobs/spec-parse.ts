// A job document as it arrives (text of JSON or YAML, or an already parsed body) to a checked
// JobSpec and the fields of it Cairn could not honour. The format is told by apiVersion and
// kind: Kubeflow's TFJob and PyTorchJob (kubeflow.org/v1), Volcano's Job
// (batch.volcano.sh/v1alpha1), or Cairn's own (no apiVersion, or cairn/v1; its `kind` is the
// job kind). Everything refused is CAIRN_INVALID_JOB naming the field (`body` for text that
// does not parse). Pure.

import { parseAllDocuments } from 'yaml';
import type { IgnoredField, JobSpec } from './model.ts';
import { JOB_KINDS } from './model.ts';
import { invalidJob, prefixLocator, type Locate } from './field-paths.ts';
import { isObject, type Doc, type Translated } from './k8s-document.ts';
import { isKubeflowKind, KUBEFLOW_API_VERSION, KUBEFLOW_KINDS, translateKubeflow } from './kubeflow-format.ts';
import { translateVolcano, VOLCANO_API_VERSION } from './volcano-format.ts';
import { CAIRN_JOB_API_VERSION, validateJobSpec } from './spec-validate.ts';

export interface ParsedJob {
  spec: JobSpec;
  ignored: IgnoredField[];
  /** Where a field of `spec` was written in the document (for errors found after parsing). */
  locate: Locate;
}

/** The largest job document read (a job of 10,000 replicas in YAML is far smaller). */
export const MAX_DOCUMENT_CHARS = 4 * 1024 * 1024;

/** 1-based line and column of a character offset, for messages about text. */
function lineOf(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const line = before.split('\n').length;
  return { line, col: offset - before.lastIndexOf('\n') };
}

/** Text of YAML (JSON is YAML) to a value; what does not parse is refused on `body` with its line. */
export function parseJobText(text: string, contentType?: string): unknown {
  if (text.length > MAX_DOCUMENT_CHARS) throw invalidJob('body', `is ${text.length} characters; a job document has at most ${MAX_DOCUMENT_CHARS}`);
  if (text.trim() === '') throw invalidJob('body', 'is empty: expected a job document (JSON or YAML)');
  if (contentType !== undefined && /\bjson\b/i.test(contentType)) {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      // V8's messages do not always give a position; the YAML parser (JSON is YAML) does.
      const yamlError = parseAllDocuments(text, { prettyErrors: false, merge: true });
      const first = Array.isArray(yamlError) ? yamlError.flatMap((d) => d.errors)[0] : undefined;
      if (first) {
        const { line, col } = lineOf(text, first.pos[0]);
        throw invalidJob('body', `is not valid JSON (line ${line}, column ${col}): ${first.message.split('\n')[0]}`);
      }
      const at = /position (\d+)/.exec((err as Error).message);
      const where = at ? (({ line, col }) => ` (line ${line}, column ${col})`)(lineOf(text, Number(at[1]))) : '';
      throw invalidJob('body', `is not valid JSON${where}: ${(err as Error).message}`);
    }
  }
  const docs = parseAllDocuments(text, { prettyErrors: false, merge: true });
  // Text of comments only is an empty stream; `---` alone is a document of nothing.
  const real = Array.isArray(docs) ? docs.filter((d) => d.contents !== null || d.errors.length > 0) : [];
  if (real.length === 0) throw invalidJob('body', 'holds no document: expected a job (JSON or YAML)');
  if (real.length > 1) throw invalidJob('body', `holds ${real.length} YAML documents: submit one job at a time`);
  const doc = real[0];
  const error = doc.errors[0];
  if (error) {
    const { line, col } = lineOf(text, error.pos[0]);
    throw invalidJob('body', `is not valid YAML (line ${line}, column ${col}): ${error.message.split('\n')[0]}`);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 }) as unknown;
  } catch (err) {
    // An alias bomb (aliases of aliases, expanding to millions of nodes) is refused here.
    throw invalidJob('body', `is not a YAML document Cairn reads: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** What the document is, by apiVersion and kind; a Cairn document goes through as it is. */
function translate(doc: Doc): Translated | undefined {
  const { apiVersion, kind } = doc;
  if (apiVersion === undefined || apiVersion === CAIRN_JOB_API_VERSION) {
    if (kind === 'Job' && apiVersion === undefined) {
      throw invalidJob('kind', `'Job' is Volcano's kind: give apiVersion ${VOLCANO_API_VERSION}; a Cairn job's kind is one of ${JOB_KINDS.join(', ')}`);
    }
    if (typeof kind === 'string' && isKubeflowKind(kind)) {
      throw invalidJob('apiVersion', `is required for a ${kind}: ${KUBEFLOW_API_VERSION}`);
    }
    return undefined;
  }
  if (apiVersion === KUBEFLOW_API_VERSION) {
    if (!isKubeflowKind(kind)) {
      throw invalidJob('kind', `${JSON.stringify(kind)} is not a ${KUBEFLOW_API_VERSION} kind Cairn runs (expected one of: ${Object.keys(KUBEFLOW_KINDS).join(', ')})`);
    }
    return translateKubeflow(doc, kind);
  }
  if (apiVersion === VOLCANO_API_VERSION) {
    if (kind !== 'Job') throw invalidJob('kind', `${JSON.stringify(kind)} is not a ${VOLCANO_API_VERSION} kind Cairn runs (expected Job)`);
    return translateVolcano(doc);
  }
  throw invalidJob(
    'apiVersion',
    `${JSON.stringify(apiVersion)} is not a job format Cairn reads (expected ${CAIRN_JOB_API_VERSION} or none, ${KUBEFLOW_API_VERSION} for a TFJob or PyTorchJob, ${VOLCANO_API_VERSION} for a Volcano Job)`,
  );
}

/**
 * A job document (text, or a value already parsed from JSON) as a checked JobSpec and the
 * fields of it Cairn could not honour. Throws CAIRN_INVALID_JOB naming the field.
 */
export function parseJobDocument(doc: string | unknown, contentType?: string): ParsedJob {
  const value = typeof doc === 'string' ? parseJobText(doc, contentType) : doc;
  if (!isObject(value)) {
    throw invalidJob('body', `must be a job document (an object), not ${value === null || value === undefined ? 'nothing' : Array.isArray(value) ? 'a list' : typeof value}`);
  }
  const foreign = translate(value);
  if (foreign === undefined) return parsedJob(validateJobSpec(value, '', prefixLocator('')), [], prefixLocator(''));
  return parsedJob(validateJobSpec(foreign.document, '', foreign.locate), foreign.ignored, foreign.locate);
}

/** `locate` is not enumerable: a parsed job compares and serialises as its spec and ignored fields. */
function parsedJob(spec: JobSpec, ignored: IgnoredField[], locate: Locate): ParsedJob {
  const p = { spec, ignored } as ParsedJob;
  Object.defineProperty(p, 'locate', { value: locate, enumerable: false });
  return p;
}
