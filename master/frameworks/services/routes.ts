// Marathon's REST API on every master: a follower passes each /v2 request on to the leader
// and its answer back, as Marathon's followers do (leader-proxy.ts); the leader answers
// reads from the store and registry and makes changes through its service. Answers carry
// exactly the fields of Marathon 1.9's types (marathon-shape.ts); Cairn's extras come with
// `?cairn=true`, and the fields an app was given that Cairn ignores are listed in the
// `Cairn-Ignored-Fields` header. Bodies are read as text and parsed here, so malformed JSON gets Marathon's error shape
// like every other refusal. Status codes as Marathon's: 201 created, 200 with
// `{deploymentId, version}` for a change, 404 unknown, 409 exists or locked, 422 invalid.
// Every app has an owner (the host's ObjectAccess): listings, the queue, deployments, tasks and the
// event stream show a caller only the apps it may view; another's app is a 403, as another
// framework's task is on the master's own API.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkJsonDepth } from '../../../shared/json-body.ts';
import type { FrameworkRoutesEnv, OwnerAction } from '../../../shared/framework-host/contract.ts';
import { toHttpError } from '../../../shared/http-errors.ts';
import { CairnError } from '../../../shared/errors.ts';
import type { ClusterTask } from '../../../shared/framework-host/contract.ts';
import { MarathonError, unknownApp } from './app-errors.ts';
import { appToJson } from './app-json.ts';
import { normaliseAppId, parseApp, type ParsedApp } from './app-parse.ts';
import { PREEMPTIBLE_LABEL, PRIORITY_CLASS_LABEL, type PriorityClasses } from '../../../shared/sharing/priority-classes.ts';
import type { StoredApp } from './app-model.ts';
import { sseFrame } from './event-bus.ts';
import { boundedWriter } from '../../../shared/bounded-stream.ts';
import { matchesLabelSelector } from './label-selector.ts';
import { requirePullSecret } from './pull-config.ts';
import { ServicesRecords, type DeploymentRecord, type InstanceRecord } from './records.ts';
import type { ServicesRuntime } from './runtime.ts';
import { appJson, deploymentJson, queueItemJson, servicePortsOf, taskJson, type TaskFacts } from './views.ts';
import { marathonApp, queryBool, queryList, queryOne, wantsCairn, type Query } from './marathon-shape.ts';
import { hostPort, marathonInfo } from './info.ts';
import { registerGroupRoutes } from './groups.ts';
import { registerLeaderProxy } from './leader-proxy.ts';
import { builtinLabelRefusal } from '../../../shared/framework-host/task-labels.ts';
import { appAdmission } from './app-quota.ts';
import { appWaitReason } from './queue-why.ts';

/** Cairn's error code beside Marathon's error body. */
export const CAIRN_ERROR_CODE_HEADER = 'cairn-error-code';
/** The fields of an app that Cairn keeps but does not honour, comma-separated. */
export const IGNORED_FIELDS_HEADER = 'cairn-ignored-fields';


interface ListingIndex {
  instances: Map<string, InstanceRecord[]>;
  deployments: Map<string, DeploymentRecord[]>;
}


/**
 * An app's class is its label `cairn.priority-class` (its tasks carry it): it ranks them
 * against preemptors. It must be a class of the cluster's; `cairn.preemptible` is true or false.
 */
function checkAppClass(parsed: ParsedApp, classes: PriorityClasses, may: (priorityClass: string, field: string) => void): void {
  const cls = parsed.app.labels[PRIORITY_CLASS_LABEL];
  if (cls !== undefined && !classes.has(cls)) {
    throw new CairnError('CAIRN_BAD_REQUEST', `unknown priority class '${cls.slice(0, 64)}' (classes: ${classes.names.join(', ')}; highest first)`, `labels/${PRIORITY_CLASS_LABEL}`);
  }
  // A class keeps the app's tasks from preemptors below it: its creator must be allowed it.
  if (cls !== undefined) may(classes.canonical(cls)!, `labels/${PRIORITY_CLASS_LABEL}`);
  // The app's labels are its tasks': none may pass for a built-in's mark (auth/task-labels.ts).
  for (const name of Object.keys(parsed.app.labels)) {
    const refused = builtinLabelRefusal(name);
    if (refused !== undefined) throw new CairnError('CAIRN_BAD_REQUEST', refused, `labels/${name}`);
  }
  const p = parsed.app.labels[PREEMPTIBLE_LABEL];
  if (p !== undefined && p !== 'true' && p !== 'false') {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be true or false, got '${p.slice(0, 64)}'`, `labels/${PREEMPTIBLE_LABEL}`);
  }
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  if (err instanceof MarathonError) return reply.code(err.status).send(err.body());
  if (err instanceof CairnError) {
    // Marathon's shape; Cairn's code goes in a header.
    const { status, body } = toHttpError(err);
    return reply.code(status).header(CAIRN_ERROR_CODE_HEADER, body.code).send({ message: body.message, details: [{ path: `/${err.field ?? ''}`, errors: [err.message] }] });
  }
  throw err;
}

/** The body as JSON, or a 400 in Marathon's shape naming what is wrong with it. */
function readJson(req: FastifyRequest): unknown {
  const text = typeof req.body === 'string' ? req.body : Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  if (text.trim() === '') throw new MarathonError(400, 'Invalid JSON', [{ path: '/', errors: ['the body is empty; an app JSON is expected'] }]);
  try {
    checkJsonDepth(text);
    return JSON.parse(text);
  } catch (err) {
    throw new MarathonError(400, 'Invalid JSON', [{ path: '/', errors: [(err as Error).message] }]);
  }
}

/**
 * The fields of the app Cairn does not honour: always in a header (which a strict client
 * does not read), and in the body as `ignoredFields` for `?cairn=true`.
 */
function withIgnored(reply: FastifyReply, q: Query, body: Record<string, unknown>, parsed: ParsedApp): Record<string, unknown> {
  if (parsed.ignored.length === 0) return body;
  void reply.header(IGNORED_FIELDS_HEADER, parsed.ignored.join(','));
  return wantsCairn(q) ? { ...body, ignoredFields: parsed.ignored } : body;
}

export function registerMarathonRoutes(root: FastifyInstance, env: FrameworkRoutesEnv<ServicesRuntime>): void {
  const records = new ServicesRecords(env.store);
  const { access, secrets } = env;
  const mayView = (req: FastifyRequest, owner: string | undefined) => access.may(req.principal, 'view_tasks', owner);
  /** The app's owner, also for an app being deleted (its deployment still holds it). */
  const ownerOfApp = (appId: string): string | undefined => {
    const s = records.app(appId);
    if (s) return s.owner;
    const d = records.deployments().find((x) => x.appId === appId);
    return d?.target?.owner ?? d?.previous?.owner;
  };
  const requireOn = (req: FastifyRequest, action: OwnerAction, appId: string, owner: string | undefined) =>
    access.require(req.principal, action, `app '${appId}'`, owner, 'id');

  const instances = (appId?: string): InstanceRecord[] =>
    records.instances().filter((r) => appId === undefined || r.appId === appId);
  const facts = (list: InstanceRecord[]): TaskFacts[] => {
    const tasks = env.cluster.tasks();
    return list.map((record) => ({ record, task: tasks.get(record.taskId) as ClusterTask | undefined }))
      // A task that has ended is no longer one of the app's tasks, though its record waits for the next round.
      .filter((f) => f.task === undefined || !['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_GONE', 'TASK_DROPPED'].includes(f.task.state));
  };
  const waitingOf = (appId: string): number => env.instance()?.queue().get(appId)?.waiting ?? 0;
  /**
   * One app's answer; `index` (built once for a whole listing) saves a walk over the store per
   * app. `embed`: what Marathon's `embed=` adds (tasks, lastTaskFailure); `cairn`: Cairn's extras.
   */
  const renderApp = (s: StoredApp, embed: { tasks: boolean; failure: boolean }, cairn: boolean, index?: ListingIndex) => {
    const deployments = index ? index.deployments.get(s.app.id) ?? [] : records.deployments().filter((d) => d.appId === s.app.id);
    const mine = index ? index.instances.get(s.app.id) ?? [] : instances(s.app.id);
    const lastTaskFailure = embed.failure ? records.lastFailure(s.app.id) : undefined;
    return appJson(s, facts(mine), deployments, embed.tasks, { cairn, waiting: waitingOf(s.app.id), ...(lastTaskFailure ? { lastTaskFailure } : {}) });
  };
  const taskView = (f: TaskFacts, s: StoredApp | undefined) => taskJson(f, (s?.app.healthChecks.length ?? 0) > 0, s ? servicePortsOf(s) : []);
  const listingIndex = (): ListingIndex => {
    const index: ListingIndex = { instances: new Map(), deployments: new Map() };
    for (const r of records.instances()) {
      const list = index.instances.get(r.appId);
      if (list) list.push(r);
      else index.instances.set(r.appId, [r]);
    }
    for (const d of records.deployments()) index.deployments.set(d.appId, [...(index.deployments.get(d.appId) ?? []), d]);
    return index;
  };

  root.register(async (app) => {
    // A follower hands every /v2 request to the leader, as Marathon's followers do.
    registerLeaderProxy(app, env.leadership);
    // This scope takes its bodies as text: malformed JSON is answered in Marathon's shape.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

    app.get('/ping', async (_req, reply) => reply.type('text/plain').send('pong'));

    app.get('/v2/info', async (req, reply) => {
      try {
        const i = env.instance();
        const body = marathonInfo({
          leading: i !== undefined,
          selfUrl: env.leadership.selfUrl(),
          leaderUrl: i ? env.leadership.selfUrl() : env.leadership.leaderUrl(),
          frameworkId: records.frameworkId(),
          masterUrls: env.leadership.masterUrls(),
        });
        return wantsCairn(req.query as Query) ? { ...body, cairn: { leading: i !== undefined, subscribed: i?.connected ?? false } } : body;
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.get('/v2/leader', async (_req, reply) => {
      const leader = env.instance() ? env.leadership.selfUrl() : env.leadership.leaderUrl();
      if (!leader) return reply.code(404).send({ message: 'There is no leader' });
      return { leader: hostPort(leader) };
    });

    registerGroupRoutes(app, {
      apps: (req) => records.apps().filter((s) => mayView(req, s.owner)),
      render: (s, index) => renderApp(s, { tasks: false, failure: false }, false, index as ListingIndex),
      index: listingIndex,
    });

    app.get('/v2/apps', async (req, reply) => {
      try {
        const q = req.query as Query;
        const embed = queryList(q, 'embed');
        const want = {
          tasks: embed.includes('apps.tasks') || embed.includes('app.tasks'),
          failure: embed.includes('apps.lastTaskFailure') || embed.includes('apps.failures') || embed.includes('app.lastTaskFailure'),
        };
        const cairn = wantsCairn(q);
        const [id, cmd, label] = [queryOne(q, 'id'), queryOne(q, 'cmd'), queryOne(q, 'label')];
        let apps = records.apps().filter((s) => mayView(req, s.owner));
        if (id) apps = apps.filter((s) => s.app.id.includes(id));
        if (cmd) apps = apps.filter((s) => (s.app.cmd ?? '').includes(cmd));
        if (label) apps = apps.filter((s) => matchesLabelSelector(s.app.labels, label));
        const index = listingIndex();
        return { apps: apps.map((s) => renderApp(s, want, cairn, index)) };
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.post('/v2/apps', async (req, reply) => {
      try {
        const raw = readJson(req);
        const parsed = parseApp(raw, undefined, env.quotas.limits);
        checkAppClass(parsed, env.priorityClasses, (c, field) => access.requireClass(req.principal, c, env.priorityClasses.defaultClass, field));
        requirePullSecret(parsed.app, secrets, req.principal);
        // Services subscribe in the default role: an app is created in it.
        access.requireCreate(req.principal, '*', 'role');
        const svc = env.leading(req, reply);
        if (!svc) return reply;
        const q = req.query as Query;
        const owner = access.ownerFor(req.principal);
        const r = await env.quotas.admit(appAdmission(env.quotas, owner, parsed.app, undefined), () => svc.changes.createApp(parsed, queryBool(q, 'force', false), req.ip, req.url, owner));
        const body = { ...renderApp(r.stored!, { tasks: true, failure: false }, wantsCairn(q)), deployments: [{ id: r.deploymentId }] };
        return reply.code(201).header('location', `/v2/apps${parsed.app.id}`).header('marathon-deployment-id', r.deploymentId).send(withIgnored(reply, q, body, parsed));
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.get('/v2/tasks', async (req) => {
      const q = req.query as Query;
      // Marathon's `status` filter, repeatable: running, staging, ...
      const wanted = queryList(q, 'status').map((v) => `TASK_${v.toUpperCase()}`);
      const apps = new Map(records.apps().filter((s) => mayView(req, s.owner)).map((s) => [s.app.id, s]));
      const list = facts(instances().filter((r) => apps.has(r.appId))).filter((f) => wanted.length === 0 || wanted.includes(f.task?.state ?? 'TASK_STAGING'));
      return { tasks: list.map((f) => taskView(f, apps.get(f.record.appId))) };
    });

    app.get('/v2/deployments', async (req) => records.deployments().filter((d) => mayView(req, ownerOfApp(d.appId))).map(deploymentJson));

    app.get('/v2/deployments/:id', async (req, reply) => {
      try {
        const d = records.deployment((req.params as { id: string }).id);
        if (!d) return reply.code(404).send({ message: `DeploymentPlan ${(req.params as { id: string }).id} does not exist` });
        requireOn(req, 'view_tasks', d.appId, ownerOfApp(d.appId));
        return deploymentJson(d);
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.delete('/v2/deployments/:id', async (req, reply) => {
      try {
        const d = records.deployment((req.params as { id: string }).id);
        if (d) requireOn(req, 'teardown_frameworks', d.appId, ownerOfApp(d.appId));
        const svc = env.leading(req, reply);
        if (!svc) return reply;
        const r = await svc.changes.deleteDeployment((req.params as { id: string }).id, queryBool(req.query as Query, 'force', false));
        if (!r) return reply.code(202).send();
        return reply.code(200).header('marathon-deployment-id', r.deploymentId).send({ deploymentId: r.deploymentId, version: r.version });
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.get('/v2/queue', async (req, reply) => {
      try {
        const cairn = wantsCairn(req.query as Query);
        const svc = env.leading(req, reply);
        if (!svc) return reply;
        const nowMs = svc.now();
        const queue = [];
        for (const s of records.apps()) {
          if (!mayView(req, s.owner)) continue;
          const f = svc.queue().get(s.app.id);
          if (!f || f.waiting === 0) continue;
          const item = queueItemJson(s, f, svc.queueCounters(s.app.id), nowMs, cairn);
          // Cairn's sentence of what is short and who holds it, beside the decline counts.
          const why = cairn ? appWaitReason(s.app, env.cluster, env.priorityClasses) : undefined;
          queue.push(why === undefined ? item : { ...item, why });
        }
        return { queue };
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.get('/v2/events', async (req, reply) => {
      const svc = env.leading(req, reply);
      if (!svc) return reply;
      // `event_type` as often as the caller likes (Marathon's way), or comma-separated.
      const types = queryList(req.query as Query, 'event_type');
      const wanted = types.length > 0 ? new Set(types) : undefined;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.write(': connected\n\n');
      // As Marathon: a stream's first event says it is attached.
      if (!wanted || wanted.has('event_stream_attached')) {
        res.write(sseFrame({ eventType: 'event_stream_attached', timestamp: new Date().toISOString(), remoteAddress: req.ip }));
      }
      // Whether this caller may view an owner's apps, decided once per owner for the stream.
      const viewable = new Map<string | undefined, boolean>();
      // A subscriber that stops reading is cut off past a bounded backlog, naming it.
      const write = boundedWriter(res, env.audit, () => ({ path: '/v2/events', principal: req.principal?.name, ip: req.ip }));
      const off = svc.bus.subscribe((e, owner) => {
        if (wanted && !wanted.has(e.eventType)) return;
        let ok = viewable.get(owner);
        if (ok === undefined) viewable.set(owner, (ok = mayView(req, owner)));
        if (ok) write(sseFrame(e));
      });
      // A comment now and then keeps proxies from closing an idle stream.
      const keepAlive = setInterval(() => write(': keep-alive\n\n'), 15_000);
      const done = () => {
        clearInterval(keepAlive);
        off();
      };
      res.on('close', done);
      res.on('error', done);
      return reply;
    });

    // Everything under /v2/apps/<id...>[/restart|/tasks[/<taskId>]|/versions[/<v>]]: ids nest.
    const route = (req: FastifyRequest): { appId: string; rest: string[] } => {
      const tail = (req.params as { '*': string })['*'];
      const parts = tail.split('/').filter((p) => p !== '');
      const cut = parts.findIndex((p, i) => i > 0 && (p === 'restart' || p === 'tasks' || p === 'versions'));
      const idParts = cut === -1 ? parts : parts.slice(0, cut);
      const rest = cut === -1 ? [] : parts.slice(cut).map(decodeURIComponent);
      const appId = normaliseAppId(idParts.map(decodeURIComponent).join('/'));
      if (appId === undefined) throw new MarathonError(404, `App '/${idParts.join('/')}' does not exist`);
      return { appId, rest };
    };

    app.get('/v2/apps/*', async (req, reply) => {
      try {
        const tail = (req.params as { '*': string })['*'];
        if (tail === '*' || tail.endsWith('/*')) {
          // Marathon's `GET /v2/apps/team/*`: every app under /team.
          const group = normaliseAppId(tail.slice(0, -1)) ?? '';
          const index = listingIndex();
          const cairn = wantsCairn(req.query as Query);
          return { apps: records.apps().filter((a) => a.app.id.startsWith(`${group}/`) && mayView(req, a.owner)).map((a) => renderApp(a, { tasks: true, failure: true }, cairn, index)) };
        }
        const { appId, rest } = route(req);
        const s = records.app(appId);
        if (!s) throw unknownApp(appId);
        requireOn(req, 'view_tasks', appId, s.owner);
        // A single app embeds its tasks and last failure, as Marathon's does.
        if (rest.length === 0) return { app: renderApp(s, { tasks: true, failure: true }, wantsCairn(req.query as Query)) };
        if (rest[0] === 'tasks' && rest.length === 1) {
          return { tasks: facts(instances(appId)).map((f) => taskView(f, s)) };
        }
        if (rest[0] === 'versions' && rest.length === 1) return { versions: records.versions(appId).reverse() };
        if (rest[0] === 'versions' && rest.length === 2) {
          const v = records.version(appId, rest[1]!);
          if (!v) return reply.code(404).send({ message: `App '${appId}' does not exist in version ${rest[1]}` });
          return marathonApp({ ...appToJson(v), version: rest[1] });
        }
        return reply.code(404).send({ message: `no route GET ${req.url}` });
      } catch (err) {
        return sendError(reply, err);
      }
    });

    const change = async (req: FastifyRequest, reply: FastifyReply, partial: boolean) => {
      const { appId, rest } = route(req);
      if (rest.length > 0) return reply.code(404).send({ message: `no route ${req.method} ${req.url}` });
      const q = req.query as Query;
      const raw = readJson(req);
      const existing = records.app(appId);
      if (partial && !existing) throw unknownApp(appId);
      // PUT in Marathon 1.x is a partial update unless partialUpdate=false; PATCH always is.
      const merge = existing && (partial || queryBool(q, 'partialUpdate', true)) && typeof raw === 'object' && raw !== null && !Array.isArray(raw);
      const body = merge ? { ...appToJson(existing.app), ...(raw as Record<string, unknown>) } : raw;
      const parsed = parseApp(body, appId, env.quotas.limits);
      checkAppClass(parsed, env.priorityClasses, (c, field) => access.requireClass(req.principal, c, env.priorityClasses.defaultClass, field));
      requirePullSecret(parsed.app, secrets, req.principal);
      // Changing (scaling too) is what tearing the app down could do; a new one is a creation.
      const authorize = (current: StoredApp | undefined) => {
        if (current) requireOn(req, 'teardown_frameworks', appId, current.owner);
        else access.requireCreate(req.principal, '*', 'role');
      };
      authorize(existing);
      const svc = env.leading(req, reply);
      if (!svc) return reply;
      const owner = access.ownerFor(req.principal);
      const r = await env.quotas.admit(appAdmission(env.quotas, owner, parsed.app, existing), () => svc.changes.putApp(parsed, queryBool(q, 'force', false), req.ip, req.url, owner, authorize));
      return reply.code(r.created ? 201 : 200).header('marathon-deployment-id', r.deploymentId).send(withIgnored(reply, q, { deploymentId: r.deploymentId, version: r.version }, parsed));
    };
    app.put('/v2/apps/*', async (req, reply) => {
      try {
        return await change(req, reply, false);
      } catch (err) {
        return sendError(reply, err);
      }
    });
    app.patch('/v2/apps/*', async (req, reply) => {
      try {
        return await change(req, reply, true);
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.post('/v2/apps/*', async (req, reply) => {
      try {
        const { appId, rest } = route(req);
        if (rest.length !== 1 || rest[0] !== 'restart') return reply.code(404).send({ message: `no route POST ${req.url}` });
        const s = records.app(appId);
        if (!s) throw unknownApp(appId);
        requireOn(req, 'teardown_frameworks', appId, s.owner);
        const svc = env.leading(req, reply);
        if (!svc) return reply;
        const r = await svc.changes.restartApp(appId, queryBool(req.query as Query, 'force', false));
        return reply.code(200).header('marathon-deployment-id', r.deploymentId).send({ deploymentId: r.deploymentId, version: r.version });
      } catch (err) {
        return sendError(reply, err);
      }
    });

    app.delete('/v2/apps/*', async (req, reply) => {
      try {
        const { appId, rest } = route(req);
        const q = req.query as Query;
        const s = records.app(appId);
        if (!s) throw unknownApp(appId);
        if (rest.length === 0) {
          requireOn(req, 'teardown_frameworks', appId, s.owner);
          const svc = env.leading(req, reply);
          if (!svc) return reply;
          // Marathon 1.9 deletes over a running deployment unless told force=false.
          const r = await svc.changes.deleteApp(appId, queryBool(q, 'force', true));
          return reply.code(200).header('marathon-deployment-id', r.deploymentId).send({ deploymentId: r.deploymentId, version: r.version });
        }
        if (rest[0] === 'tasks' && rest.length <= 2) {
          const scale = queryBool(q, 'scale', false);
          const force = queryBool(q, 'force', false);
          requireOn(req, 'kill_tasks', appId, s.owner);
          // Killing with scale changes the app's instance count too.
          if (scale) requireOn(req, 'teardown_frameworks', appId, s.owner);
          const svc = env.leading(req, reply);
          if (!svc) return reply;
          const r = await svc.changes.killTasks(appId, rest.length === 2 ? [rest[1]!] : 'all', scale, force, queryOne(q, 'host'));
          if (r.deployment) return reply.code(200).send({ deploymentId: r.deployment.deploymentId, version: r.deployment.version });
          const tasks = r.killed.map((record) => taskView({ record, task: env.cluster.tasks().get(record.taskId) }, records.app(appId) ?? s));
          return rest.length === 2 ? { task: tasks[0] } : { tasks };
        }
        return reply.code(404).send({ message: `no route DELETE ${req.url}` });
      } catch (err) {
        return sendError(reply, err);
      }
    });
  });
}
