// The agent's own HTTP endpoint: health, task logs read straight from sandboxes (the
// master's log API and `cairn logs` fetch from here), usage samples, and drain.

import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { AddressInfo } from 'node:net';
import { CairnError } from '../shared/errors.ts';
import type { MembersJson } from '../shared/gossip/cluster.ts';
import { isTerminal } from '../shared/agent-protocol.ts';
import type { ProcessExecutor } from './executors/process/executor.ts';
import type { UsageSampler } from './usage/sampler.ts';
import { parseDrainRequest } from './drain.ts';
import { LOG_STREAMS, MAX_LOG_READ_BYTES, type LogStream } from './executors/process/sandbox.ts';

export interface AgentHttpOptions {
  host: string;
  port: number;
  executor: ProcessExecutor;
  agentId: () => string | undefined;
  /** The gossip view (GET /api/v1/members); undefined when the agent runs no gossip member. */
  members?: () => MembersJson | undefined;
  /** More of /health (isolation, draining). */
  health?: () => Record<string, unknown>;
  /** Usage samples; without, the usage routes answer 404. */
  usage?: UsageSampler;
  /** Draining; without, the drain routes answer 404. */
  drain?: {
    start(deadlineAtMs: number | null): Promise<unknown>;
    stop(): Promise<void>;
    report(): unknown;
  };
}

export interface AgentHttpServer {
  /** The port actually bound (differs from the option when that was 0). */
  port: number;
  close(): Promise<void>;
}

function sendError(reply: FastifyReply, status: number, err: CairnError): FastifyReply {
  return reply.code(status).send({ code: err.code, message: err.message, field: err.field });
}

function badQuery(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_REQUEST', message, field);
}

/** A non-negative integer query parameter, or undefined when absent. */
function intParam(value: unknown, field: string, min: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) {
    throw badQuery(field, `must be an integer >= ${min}, got '${String(value)}'`);
  }
  return Number(value);
}

export function buildAgentHttp(opts: Omit<AgentHttpOptions, 'host' | 'port'>): FastifyInstance {
  const app = Fastify({ logger: false });

  app.get('/health', async () => ({ status: 'ok', agentId: opts.agentId() ?? null, ...(opts.health?.() ?? {}) }));

  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>('/api/v1/tasks/:id/logs', async (req, reply) => {
    let stream: LogStream;
    let offset: number;
    let length: number;
    try {
      const s = req.query.stream ?? 'stdout';
      if (typeof s !== 'string' || !(LOG_STREAMS as readonly string[]).includes(s)) {
        throw badQuery('stream', `must be stdout or stderr, got '${String(s)}'`);
      }
      stream = s as LogStream;
      offset = intParam(req.query.offset, 'offset', 0) ?? 0;
      // Larger requests are served in 1 MiB pieces; the caller pages with nextOffset.
      length = Math.min(intParam(req.query.length, 'length', 1) ?? MAX_LOG_READ_BYTES, MAX_LOG_READ_BYTES);
    } catch (err) {
      return sendError(reply, 400, err as CairnError);
    }
    try {
      return await opts.executor.readLog(req.params.id, stream, offset, length);
    } catch (err) {
      if (err instanceof CairnError) return sendError(reply, err.code === 'CAIRN_UNKNOWN_TASK' ? 404 : 400, err);
      throw err;
    }
  });

  app.get('/api/v1/members', async (_req, reply) => {
    const view = opts.members?.();
    return view ?? sendError(reply, 404, new CairnError('CAIRN_GOSSIP_OFF', 'this agent runs no gossip member (it needs --secret-file)'));
  });

  app.post('/api/v1/drain', async (req, reply) => {
    if (!opts.drain) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'this agent cannot be drained'));
    let deadlineAtMs: number | null;
    try {
      ({ deadlineAtMs } = parseDrainRequest(req.body, Date.now()));
    } catch (err) {
      if (err instanceof CairnError) return sendError(reply, 400, err);
      throw err;
    }
    return { draining: await opts.drain.start(deadlineAtMs) };
  });

  app.delete('/api/v1/drain', async (_req, reply) => {
    if (!opts.drain) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'this agent cannot be drained'));
    await opts.drain.stop();
    return { draining: false };
  });

  app.get('/api/v1/usage', async (_req, reply) => {
    if (!opts.usage) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'usage sampling is off on this agent'));
    if (opts.usage.current().timestampMs === 0) await opts.usage.sample();
    return opts.usage.current();
  });

  app.get<{ Params: { id: string } }>('/api/v1/tasks/:id/usage', async (req, reply) => {
    const id = req.params.id;
    if (!opts.usage) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'usage sampling is off on this agent'));
    let found = opts.usage.forTask(id);
    const snap = opts.executor.snapshot(id);
    if (!found && snap && !isTerminal(snap.state)) {
      // Launched since the last sample: take one now rather than answer "unknown".
      await opts.usage.sample();
      found = opts.usage.forTask(id);
    }
    if (!found) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_TASK', `no running task '${id}' on this agent`, 'taskId'));
    return found;
  });

  return app;
}

export async function startAgentHttp(opts: AgentHttpOptions): Promise<AgentHttpServer> {
  const app = buildAgentHttp(opts);
  await app.listen({ host: opts.host, port: opts.port });
  const port = (app.server.address() as AddressInfo).port;
  return { port, close: () => app.close() };
}
