// `POST /api/v1/scheduler`: Mesos v1's scheduler API over HTTP. SUBSCRIBE holds the
// response open as a RecordIO event stream; every other call is answered 202 once it has
// been validated and taken (or 4xx with the field at fault, having changed nothing).

import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { STREAM_ID_HEADER } from '../../shared/mesos-v1.ts';
import { EventStream } from '../event-stream.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import { auditLine } from '../auth/http-hooks.ts';
import { authorizeSchedulerCall } from '../auth/scheduler-auth.ts';
import { toHttpError } from '../../shared/http-errors.ts';
import { parseSchedulerCall } from '../scheduler-calls.ts';
import { secretAccess } from '../secrets/secret-access.ts';

export function registerSchedulerApi(app: FastifyInstance, ctx: MasterContext): void {
  const secrets = secretAccess(ctx);
  app.post('/api/v1/scheduler', async (req, reply) => {
    // Only the leader runs the scheduler API; frameworks are sent there (Mesos does the same).
    const master = leaderOrRedirect(ctx, req, reply);
    if (!master) return reply;
    const accept = req.headers.accept;
    if (accept && !/application\/json|\*\/\*|recordio/.test(accept)) {
      return reply.code(406).send({ code: 'CAIRN_BAD_REQUEST', message: 'Accept: only application/json is served', field: 'Accept' });
    }
    let call;
    try {
      call = secrets.requireForCall(req.principal, authorizeSchedulerCall(ctx.auth, ctx.registry, req.principal, parseSchedulerCall(req.body, ctx.quotas.limits), ctx.priorityClasses));
    } catch (err) {
      master.metrics.badRequests++;
      const { status, body } = toHttpError(err);
      auditLine(ctx.audit, req, { call: (req.body as { type?: unknown } | null)?.type, status, refused: body.code, why: body.message });
      return reply.code(status).send(body);
    }
    // Acknowledgements are the bulk of the traffic and change only delivery state.
    if (call.type !== 'ACKNOWLEDGE') auditLine(ctx.audit, req, { call: call.type, frameworkId: call.type === 'SUBSCRIBE' ? call.framework.id : call.frameworkId });
    if (call.type !== 'SUBSCRIBE') {
      try {
        const streamId = req.headers[STREAM_ID_HEADER];
        master.handleCall(call, typeof streamId === 'string' ? streamId : undefined);
      } catch (err) {
        master.metrics.badRequests++;
        const { status, body } = toHttpError(err);
        return reply.code(status).send(body);
      }
      return reply.code(202).send();
    }
    // SUBSCRIBE: take over the raw response and keep it open as the event stream.
    reply.hijack();
    const res = reply.raw;
    const streamId = randomUUID();
    const stream = new EventStream(streamId, res, master.log, { name: call.framework.name, principal: req.principal?.name, ip: req.ip });
    // Headers are only set here; they go out with the first event (SUBSCRIBED), which is
    // sent once the subscription is durable. Until then an error can still become a 4xx.
    res.statusCode = 200;
    res.setHeader('content-type', 'application/json');
    res.setHeader('mesos-stream-id', streamId);
    res.setHeader('cache-control', 'no-cache');
    res.socket?.setNoDelay(true);
    try {
      stream.frameworkId = await master.subscribe(call.framework, stream);
    } catch (err) {
      master.metrics.badRequests++;
      const { status, body } = toHttpError(err);
      if (res.headersSent) {
        stream.end();
        return;
      }
      res.statusCode = status;
      res.removeHeader('mesos-stream-id');
      res.end(JSON.stringify(body));
    }
  });
}
