// The tuning REST API, on every master: reads answer from the replicated store; submissions,
// stops, resumes and deletions go to the leader's runtime. A document is parsed and checked
// before anything else, wherever it arrives, so bad input is refused (400 naming the field)
// with nothing created. Experiments have owners, with the rules of apps and jobs
// (the host's ObjectAccess).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FrameworkRoutesEnv, OwnerAction } from '../../../shared/framework-host/contract.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { sendHttpError } from '../../../shared/http-errors.ts';
import { serveObjectEvents, type SendEvent } from '../../../shared/framework-host/object-events.ts';
import { acceptYamlBodies } from '../../../shared/framework-host/yaml-bodies.ts';
import { badRequest } from '../../../shared/errors.ts';
import { experimentKey, EXPERIMENT_KEY_PREFIX, isSettled, trialKeyPrefix, type ExperimentRecord, type TrialRecord } from './record.ts';
import { freshSeed, type TuningRuntime } from './runtime.ts';
import { MAX_TRIAL_COUNT, parseExperimentDocument } from './spec-parse.ts';
import { experimentSummary, experimentView, trialView } from './views.ts';
import { checkTrialEnv, experimentAdmission } from './experiment-limits.ts';
import { nothingLeft } from './resume-refusal.ts';


function notFound(reply: FastifyReply, name: string): FastifyReply {
  return reply.code(404).send({ code: 'CAIRN_UNKNOWN_EXPERIMENT', message: `no experiment '${name}'`, field: 'name' });
}

export function registerTuningRoutes(app: FastifyInstance, env: FrameworkRoutesEnv<TuningRuntime>): void {
  const { access } = env;
  const recordOf = (name: string) => env.store.get<JsonValue>(experimentKey(name)) as unknown as ExperimentRecord | undefined;
  const trialsOf = (name: string) => env.store.entries<JsonValue>(trialKeyPrefix(name)).map(([, v]) => v as unknown as TrialRecord);
  const requireOn = (req: FastifyRequest, action: OwnerAction, r: ExperimentRecord) =>
    access.require(req.principal, action, `experiment '${r.spec.name}'`, r.owner, 'name');
  /**
   * The experiment the route names, when the caller may do `action` on it; otherwise 404
   * is answered (undefined) or 403 thrown (the master's error handler answers it).
   */
  const experimentFor = (req: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply, action: OwnerAction): ExperimentRecord | undefined => {
    const r = recordOf(req.params.name);
    if (!r) {
      notFound(reply, req.params.name);
      return undefined;
    }
    requireOn(req, action, r);
    return r;
  };

  void app.register(async (sub) => {
    acceptYamlBodies(sub, 2 * 1024 * 1024);

    sub.post('/api/v1/experiments', async (req: FastifyRequest, reply: FastifyReply) => {
      let parsed;
      try {
        parsed = parseExperimentDocument(req.body, req.headers['content-type'], { seed: freshSeed() });
        if (parsed.spec.priorityClass !== undefined) {
          // By the class's own name (in any case, or an alias); the default class is no class:
          // the experiment's framework then needs no label.
          const priorityClass = env.priorityClasses.stored(parsed.spec.priorityClass, 'spec.priorityClassName');
          parsed = { ...parsed, spec: { ...parsed.spec, priorityClass } };
        }
        checkTrialEnv(parsed.spec, env.quotas.limits);
        access.requireCreate(req.principal, parsed.spec.role, 'spec.role');
        // Its trials' jobs and frameworks then carry the class: checked here, against its owner.
        access.requireClass(req.principal, parsed.spec.priorityClass, env.priorityClasses.defaultClass, 'spec.priorityClassName');
        const old = recordOf(parsed.spec.name);
        if (old && isSettled(old, trialsOf(old.spec.name))) requireOn(req, 'teardown_frameworks', old);
      } catch (err) {
        return sendHttpError(reply, err);
      }
      const runtime = env.leading(req, reply);
      if (!runtime) return reply;
      const owner = access.ownerFor(req.principal);
      const spec = parsed.spec;
      let r;
      try {
        r = await env.quotas.admit(experimentAdmission(env.quotas, owner, spec), () => runtime.submit(spec, parsed.ignored, owner));
      } catch (err) {
        return sendHttpError(reply, err);
      }
      if (r === 'exists') {
        return reply.code(409).send({ code: 'CAIRN_EXPERIMENT_EXISTS', message: `an experiment named '${parsed.spec.name}' is still running: stop or delete it first`, field: 'metadata.name' });
      }
      return reply.code(201).send({ name: r.spec.name, seed: r.spec.seed, ignored: r.ignored });
    });
  });

  app.get('/api/v1/experiments', async (req) => ({
    experiments: env.store.entries<JsonValue>(EXPERIMENT_KEY_PREFIX)
      .map(([, v]) => v as unknown as ExperimentRecord)
      .filter((r) => access.may(req.principal, 'view_tasks', r.owner))
      .map((r) => experimentSummary(r, trialsOf(r.spec.name))),
  }));

  app.get<{ Params: { name: string } }>('/api/v1/experiments/:name', async (req, reply) => {
    const r = experimentFor(req, reply, 'view_tasks');
    if (!r) return reply;
    return experimentView(r, trialsOf(r.spec.name));
  });

  // The experiment's story as server-sent events: `condition` (a phase change, with its
  // reason), `trial` (a trial created or changed), then `finished` once it has ended and none
  // of its trials runs, or `removed` when it is deleted or submitted again by someone the
  // caller may not view. A stream opened later starts with every condition and trial so far.
  app.get<{ Params: { name: string } }>('/api/v1/experiments/:name/events', async (req, reply) => {
    const name = req.params.name;
    const first = experimentFor(req, reply, 'view_tasks');
    if (!first) return reply;
    let conditions = 0;
    const trials = new Map<number, string>();
    const emit = (send: SendEvent, r: ExperimentRecord) => {
      for (const c of r.conditions.slice(conditions)) send('condition', { experiment: name, ...c });
      conditions = r.conditions.length;
      for (const t of trialsOf(name)) {
        const v = trialView(r, t);
        const text = JSON.stringify(v);
        if (trials.get(t.index) === text) continue;
        trials.set(t.index, text);
        send('trial', { experiment: name, ...v });
      }
    };
    const over = (send: SendEvent, r: ExperimentRecord) => {
      if (!isSettled(r, trialsOf(name))) return false;
      send('finished', { experiment: name, phase: r.phase, reason: r.reason, message: r.message });
      return true;
    };
    const prefix = trialKeyPrefix(name);
    serveObjectEvents(req, reply, {
      first: (send) => {
        emit(send, first);
        return over(send, first);
      },
      watch: (changed) => env.store.onChange((keys) => {
        if (keys.some((k) => k === experimentKey(name) || k.startsWith(prefix))) changed();
      }),
      next: (send) => {
        const r = recordOf(name);
        if (!r || (r.uid !== first.uid && !access.may(req.principal, 'view_tasks', r.owner))) {
          send('removed', { experiment: name });
          return true;
        }
        // Submitted again under the name: its story starts over.
        if (r.uid !== first.uid && r.conditions.length < conditions) {
          conditions = 0;
          trials.clear();
        }
        emit(send, r);
        return over(send, r);
      },
    }, env.audit);
  });

  app.post<{ Params: { name: string } }>('/api/v1/experiments/:name/stop', async (req, reply) => {
    const r = experimentFor(req, reply, 'kill_tasks');
    if (!r) return reply;
    const runtime = env.leading(req, reply);
    if (!runtime) return reply;
    if (!(await runtime.stopExperiment(req.params.name))) {
      return reply.code(409).send({ code: 'CAIRN_BAD_REQUEST', message: `experiment '${req.params.name}' is not running (${r.phase})`, field: 'name' });
    }
    return { name: req.params.name, phase: 'Stopped' };
  });

  app.post<{ Params: { name: string }; Body: unknown }>('/api/v1/experiments/:name/resume', async (req, reply) => {
    const r = experimentFor(req, reply, 'teardown_frameworks');
    if (!r) return reply;
    const limits = resumeLimits(req.body);
    const runtime = env.leading(req, reply);
    if (!runtime) return reply;
    const out = await runtime.resume(req.params.name, limits);
    if (out === 'unknown') return notFound(reply, req.params.name);
    if (out === 'running') return reply.code(409).send({ code: 'CAIRN_BAD_REQUEST', message: `experiment '${req.params.name}' is running already`, field: 'name' });
    if (out === 'not-resumable') {
      return reply.code(409).send({
        code: 'CAIRN_BAD_REQUEST', field: 'spec.resumePolicy',
        message: `experiment '${req.params.name}' has resumePolicy Never: once ended (${r.reason}) it is not resumed; submit it again, or with resumePolicy LongRunning`,
      });
    }
    if (out === 'nothing-left') {
      const { message, field } = nothingLeft(r, trialsOf(r.spec.name), limits);
      return reply.code(409).send({ code: 'CAIRN_BAD_REQUEST', message: `experiment '${req.params.name}' ${message}`, field });
    }
    return { name: req.params.name, phase: 'Running' };
  });

  app.delete<{ Params: { name: string } }>('/api/v1/experiments/:name', async (req, reply) => {
    if (!experimentFor(req, reply, 'teardown_frameworks')) return reply;
    const runtime = env.leading(req, reply);
    if (!runtime) return reply;
    if (!(await runtime.remove(req.params.name))) return notFound(reply, req.params.name);
    return { name: req.params.name, deleted: true };
  });
}

function resumeLimits(body: unknown): { maxTrialCount?: number; maxFailedTrialCount?: number } {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('body', 'must be {maxTrialCount, maxFailedTrialCount}');
  const out: { maxTrialCount?: number; maxFailedTrialCount?: number } = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (k !== 'maxTrialCount' && k !== 'maxFailedTrialCount') throw badRequest(k, 'is not a resume setting (maxTrialCount, maxFailedTrialCount)');
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_TRIAL_COUNT) throw badRequest(k, `must be a whole number from 0 to ${MAX_TRIAL_COUNT}, got ${JSON.stringify(v)}`);
    out[k] = v;
  }
  return out;
}
