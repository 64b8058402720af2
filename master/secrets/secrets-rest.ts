// The REST routes of stored credentials (secrets), which apps (`container.docker.pullConfig`)
// and jobs (`imagePullSecrets`) name to pull images from private registries:
//   POST   /api/v1/secrets        {name, dockerConfig: {auths: {...}}}  stores (or replaces one's own)
//   GET    /api/v1/secrets        {secrets: [{name}]}: the names the caller may use, nothing else
//   DELETE /api/v1/secrets/:name  removes one (names with '/' go URL-encoded)
// Writes go to the leader (replicated like every registry change). No route answers a
// secret's content: it leaves the master only on the launch frame of a task that pulls with it.

import type { FastifyInstance } from 'fastify';
import { dockerConfigJson, parseDockerConfig } from '../../shared/docker-auth.ts';
import { CairnError } from '../../shared/errors.ts';
import { sendHttpError as fail } from '../../shared/http-errors.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import { checkSecretName, secretAccess } from './secret-access.ts';
import { objectKey } from '../sharing/object-quota.ts';

export function registerSecretRoutes(app: FastifyInstance, ctx: MasterContext): void {
  const access = secretAccess(ctx);
  const secrets = () => ctx.registry.state.secrets;

  app.get('/api/v1/secrets', async (req) => ({ secrets: access.usable(req.principal).map((s) => ({ name: s.name })) }));

  app.post<{ Body: unknown }>('/api/v1/secrets', async (req, reply) => {
    try {
      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new CairnError('CAIRN_BAD_REQUEST', 'must be {"name": ..., "dockerConfig": {"auths": {...}}}', 'body');
      const { name: rawName, dockerConfig, ...rest } = body as Record<string, unknown>;
      const unknown = Object.keys(rest)[0];
      if (unknown !== undefined) throw new CairnError('CAIRN_BAD_REQUEST', 'is not a field of a secret (name, dockerConfig)', unknown);
      const name = checkSecretName(rawName, 'name');
      const config = dockerConfigJson(parseDockerConfig(dockerConfig, 'dockerConfig'));
      const owner = access.ownerFor(req.principal);
      const existing = secrets().get(name);
      if (existing && existing.owner !== owner) throw theirs(name, existing.owner);
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      const secret = { name, owner, dockerConfig: config, createdAtMs: Date.now() };
      // A secret counts towards its owner's objects (sharing/object-quota.ts), as an app does.
      const bytes = ctx.quotas.sizeOf(secret);
      await ctx.quotas.admit({ owner, key: objectKey.secret(name), bytesAfter: () => bytes, what: `secret '${name}'`, field: 'name' }, () => ctx.registry.submit({ type: 'secret_set', secret }));
      // Another principal may have stored the name first (the log kept theirs).
      const stored = secrets().get(name);
      if (stored?.owner !== owner) throw theirs(name, stored?.owner ?? '');
      return reply.code(existing ? 200 : 201).send({ name });
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.delete<{ Params: { name: string } }>('/api/v1/secrets/:name', async (req, reply) => {
    try {
      const name = checkSecretName(req.params.name, 'name');
      access.require(req.principal, name, (m) => new CairnError('CAIRN_UNKNOWN_SECRET', m, 'name'));
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      await ctx.registry.submit({ type: 'secret_removed', name });
      return { name };
    } catch (err) {
      return fail(reply, err);
    }
  });
}

function theirs(name: string, owner: string): CairnError {
  return new CairnError('CAIRN_FORBIDDEN', `the secret name '${name}' is taken by principal '${owner}': choose another name`, 'name');
}
