// Marathon's groups, read-only: `/v2/groups` and `/v2/groups/{id}` answer `GroupInfo`
// (types/group.raml) built from the apps' paths — app `/dev/web/api` lies in group `/dev/web`,
// which lies in `/dev`, which lies in the root `/`. A group's version is its newest app's.
// Cairn has no group documents of its own: groups are not created, changed or deleted here.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { StoredApp } from './app-model.ts';
import { normaliseAppId } from './app-parse.ts';

const EPOCH = new Date(0).toISOString();

export interface GroupSource {
  /** The apps the caller may view. */
  apps(req: FastifyRequest): StoredApp[];
  /** One app as a group lists it; `index` is what `index()` built for the whole answer. */
  render(s: StoredApp, index: unknown): Record<string, unknown>;
  index(): unknown;
}

const parentOf = (id: string): string => id.slice(0, id.lastIndexOf('/')) || '/';

/** The group `id` (normalised, `/` for the root) and everything under it; undefined when there is nothing there. */
export function groupJson(id: string, apps: StoredApp[], render: (s: StoredApp) => Record<string, unknown>): Record<string, unknown> | undefined {
  const prefix = id === '/' ? '/' : `${id}/`;
  const inside = apps.filter((s) => s.app.id.startsWith(prefix));
  if (inside.length === 0 && id !== '/') return undefined;
  const build = (gid: string): Record<string, unknown> => {
    const children = new Set<string>();
    const own: StoredApp[] = [];
    for (const s of inside) {
      const parent = parentOf(s.app.id);
      if (parent === gid) own.push(s);
      else if (gid === '/' || parent.startsWith(`${gid}/`)) {
        // The child group of gid on the way to the app's parent.
        const rest = parent.slice(gid === '/' ? 1 : gid.length + 1);
        children.add(`${gid === '/' ? '' : gid}/${rest.split('/')[0]}`);
      }
    }
    const under = inside.filter((s) => gid === '/' || s.app.id.startsWith(`${gid}/`));
    const version = under.reduce((v, s) => (s.version > v ? s.version : v), EPOCH);
    return {
      id: gid,
      apps: own.map(render),
      groups: [...children].sort().map(build),
      pods: [],
      dependencies: [],
      version,
      enforceRole: false,
    };
  };
  return build(id);
}

export function registerGroupRoutes(app: FastifyInstance, src: GroupSource): void {
  const answer = (req: FastifyRequest, raw: string) => {
    const id = raw === '' || raw === '/' ? '/' : normaliseAppId(raw);
    const index = src.index();
    const g = id === undefined ? undefined : groupJson(id, src.apps(req), (s) => src.render(s, index));
    return g;
  };
  app.get('/v2/groups', async (req) => answer(req, '/'));
  app.get('/v2/groups/*', async (req, reply) => {
    const raw = (req.params as { '*': string })['*'];
    const g = answer(req, raw);
    if (!g) return reply.code(404).send({ message: `Group '/${raw.replace(/^\/+/, '')}' does not exist` });
    return g;
  });
}
