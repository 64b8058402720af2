// The jobs REST API, on every master: reads (list, one job, its events) answer from the
// replicated store; submissions and deletions go to the leader's engine. A document is
// parsed and checked before anything else, wherever it arrives, so bad input is refused
// (4xx naming the field) with nothing created. Every job has an owner (the host's ObjectAccess):
// the list shows a caller only the jobs it may view; another's job is a 403, as another
// framework's task is on the master's own API.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FrameworkRoutesEnv, Caller, OwnerAction, SecretUse } from '../../../shared/framework-host/contract.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { sendHttpError } from '../../../shared/http-errors.ts';
import { serveObjectEvents, type SendEvent } from '../../../shared/framework-host/object-events.ts';
import { acceptYamlBodies } from '../../../shared/framework-host/yaml-bodies.ts';
import { isFinished, jobView, type JobRecord } from './record.ts';
import type { JobView } from '../../../shared/jobs/model.ts';
import { jobKey, JOB_KEY_PREFIX, type JobsRuntime } from './runtime.ts';
import { parseJobDocument, type ParsedJob } from '../../../shared/jobs/spec-parse.ts';
import { invalidJob } from '../../../shared/jobs/field-paths.ts';
import type { JobSpec } from '../../../shared/jobs/model.ts';
import type { PriorityClasses } from '../../../shared/sharing/priority-classes.ts';
import { checkJobEnv, jobAdmission } from './job-limits.ts';
import { CairnError } from '../../../shared/errors.ts';
import { neverFitsAnyAgent } from '../../../shared/sdk/never-fits.ts';


/**
 * The job's class must be one of the cluster's (in any case, or an alias), kept by its own
 * name; the default class is kept as no class, so that its tasks go through the role's one
 * subscription as they did before classes.
 */
function resolveClass(spec: JobSpec, classes: PriorityClasses): void {
  if (spec.priorityClass === undefined) return;
  const c = classes.canonical(spec.priorityClass);
  if (c === undefined) throw invalidJob('priorityClassName', classes.unknownMessage(spec.priorityClass));
  if (c === classes.defaultClass) delete spec.priorityClass;
  else spec.priorityClass = c;
}

/** Every credential a replica pulls with must exist and be the submitter's to use; refused naming where it was written. */
function requireImagePullSecrets(parsed: ParsedJob, secrets: SecretUse, principal: Caller): void {
  parsed.spec.groups.forEach((g, i) => (g.template.imagePullSecrets ?? []).forEach((name, j) => {
    secrets.require(principal, name, (message) => invalidJob(parsed.locate(`groups[${i}].template.imagePullSecrets[${j}]`), message));
  }));
}

/**
 * A replica bigger than every agent can never start: refused (422, naming the largest agent)
 * unless `?allowUnschedulable=true`, which submits it to wait for a bigger agent; then the
 * sentences come back as warnings.
 */
function neverFitting(parsed: ParsedJob, env: FrameworkRoutesEnv<JobsRuntime>, query: unknown): string[] {
  const raw = (query as Record<string, unknown> | undefined)?.allowUnschedulable;
  if (raw !== undefined && raw !== 'true' && raw !== 'false') throw new CairnError('CAIRN_BAD_REQUEST', `must be true or false, got '${String(raw).slice(0, 32)}'`, 'allowUnschedulable');
  const agents = [...env.cluster.agents().values()];
  const out: string[] = [];
  parsed.spec.groups.forEach((g, i) => {
    const t = g.template;
    const why = neverFitsAnyAgent({ cpus: t.cpus, mem: t.memMb, disk: t.diskMb, gpus: t.gpus, ports: t.ports }, agents);
    if (why === undefined) return;
    const message = `each ${g.name} replica ${why}`;
    if (raw !== 'true') throw new CairnError('CAIRN_UNSCHEDULABLE', `${message}; it can never start (submit with allowUnschedulable=true to let it wait for a bigger agent)`, parsed.locate(`groups[${i}].template`));
    out.push(`${parsed.locate(`groups[${i}].template`)}: ${message}`);
  });
  if (out.length > 0) parsed.spec.allowUnschedulable = true;
  return out;
}

function notFound(reply: FastifyReply, name: string): FastifyReply {
  return reply.code(404).send({ code: 'CAIRN_UNKNOWN_JOB', message: `no job '${name}'`, field: 'name' });
}

function recordOf(env: FrameworkRoutesEnv<JobsRuntime>, name: string): JobRecord | undefined {
  return env.store.get<JsonValue>(jobKey(name)) as unknown as JobRecord | undefined;
}

export function registerJobRoutes(app: FastifyInstance, env: FrameworkRoutesEnv<JobsRuntime>): void {
  const { access, secrets } = env;
  const requireOn = (req: FastifyRequest, action: OwnerAction, r: JobRecord) =>
    access.require(req.principal, action, `job '${r.spec.name}'`, r.owner, 'name');

  // YAML bodies arrive as text and are parsed with the job (only on these routes).
  void app.register(async (sub) => {
    acceptYamlBodies(sub, 4 * 1024 * 1024);

    sub.post('/api/v1/jobs', async (req: FastifyRequest, reply: FastifyReply) => {
      let parsed;
      let unschedulable: string[] = [];
      try {
        parsed = parseJobDocument(req.body, req.headers['content-type']);
        checkJobEnv(parsed, env.quotas.limits);
        resolveClass(parsed.spec, env.priorityClasses);
        // The rule a framework subscribing in the job's role meets: its tasks run in that role.
        access.requireCreate(req.principal, parsed.spec.role, 'role');
        access.requireClass(req.principal, parsed.spec.priorityClass, env.priorityClasses.defaultClass, 'priorityClassName');
        requireImagePullSecrets(parsed, secrets, req.principal);
        unschedulable = neverFitting(parsed, env, req.query);
        // A finished job of the name is replaced by this one: that is deleting it.
        const old = recordOf(env, parsed.spec.name);
        if (old && isFinished(old)) requireOn(req, 'teardown_frameworks', old);
      } catch (err) {
        return sendHttpError(reply, err);
      }
      const engine = env.leading(req, reply);
      if (!engine) return reply;
      const owner = access.ownerFor(req.principal);
      let r;
      try {
        r = await env.quotas.admit(jobAdmission(env.quotas, owner, parsed), () => engine.submit(parsed.spec, parsed.ignored, owner));
      } catch (err) {
        return sendHttpError(reply, err);
      }
      if (r === 'exists') {
        return reply.code(409).send({ code: 'CAIRN_JOB_EXISTS', message: `a job named '${parsed.spec.name}' is still live: delete it or wait for it to finish`, field: 'name' });
      }
      return reply.code(201).send({ name: r.spec.name, ignored: r.ignored, ...(unschedulable.length > 0 ? { warnings: unschedulable } : {}) });
    });
  });

  app.get('/api/v1/jobs', async (req) => {
    const jobs: JobView[] = env.store.entries<JsonValue>(JOB_KEY_PREFIX)
      .map(([, v]) => v as unknown as JobRecord)
      .filter((r) => access.may(req.principal, 'view_tasks', r.owner))
      .map(jobView);
    return { jobs };
  });

  app.get<{ Params: { name: string } }>('/api/v1/jobs/:name', async (req, reply) => {
    const r = recordOf(env, req.params.name);
    if (!r) return notFound(reply, req.params.name);
    requireOn(req, 'view_tasks', r);
    return jobView(r);
  });

  app.delete<{ Params: { name: string } }>('/api/v1/jobs/:name', async (req, reply) => {
    const existing = recordOf(env, req.params.name);
    if (!existing) return notFound(reply, req.params.name);
    // Deleting kills every replica and forgets the job: tearing down what its owner runs.
    requireOn(req, 'teardown_frameworks', existing);
    const engine = env.leading(req, reply);
    if (!engine) return reply;
    if (!(await engine.remove(req.params.name))) return notFound(reply, req.params.name);
    return { name: req.params.name, deleted: true };
  });

  app.get<{ Params: { name: string } }>('/api/v1/jobs/:name/events', async (req, reply) => {
    const name = req.params.name;
    const first = recordOf(env, name);
    if (!first) return notFound(reply, name);
    requireOn(req, 'view_tasks', first);
    let conditions = 0;
    const replicas = new Map<string, string>();
    /** Conditions not yet sent, and replicas whose status changed since last sent. */
    const emit = (send: SendEvent, r: JobRecord) => {
      for (const c of r.conditions.slice(conditions)) send('condition', { job: name, ...c });
      conditions = r.conditions.length;
      for (const rep of r.replicas) {
        const key = `${rep.group}-${rep.index}`;
        const text = JSON.stringify(rep);
        if (replicas.get(key) === text) continue;
        replicas.set(key, text);
        send('replica', { job: name, ...rep });
      }
    };
    /** The story is over once the job has ended and nothing of it runs: the stream ends too. */
    const over = (send: SendEvent, r: JobRecord) => {
      if (!isFinished(r) || r.replicas.some((x) => x.state === 'Starting' || x.state === 'Running')) return false;
      send('finished', { job: name, phase: r.phase, message: r.message });
      return true;
    };
    serveObjectEvents(req, reply, {
      first: (send) => {
        emit(send, first);
        return over(send, first);
      },
      watch: (changed) => env.store.onChange((keys) => {
        if (keys.includes(jobKey(name))) changed();
      }),
      next: (send) => {
        const r = recordOf(env, name);
        // Submitted again by a principal this caller may not view: the job it followed is gone.
        if (!r || (r.uid !== first.uid && !access.may(req.principal, 'view_tasks', r.owner))) {
          send('removed', { job: name });
          return true;
        }
        // A job submitted again under the name starts its story over.
        if (r.conditions.length < conditions) conditions = 0;
        emit(send, r);
        return over(send, r);
      },
    }, env.audit);
  });
}
