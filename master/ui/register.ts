// The web dashboard's part of a master: its static files, the event stream, the paginated
// reads and the one-time login links. server.ts calls registerUi once per master; followers
// serve all of it from their copy of the registry.

import type { FastifyInstance } from 'fastify';
import type { MasterContext } from '../context.ts';
import { registerEventsRoute, UiEventHub } from './events.ts';
import { LoginLinks, registerLoginLinks } from './login-links.ts';
import { registerPagedReads } from './paged-reads.ts';
import { registerStaticUi } from './static-files.ts';

export interface UiHandle {
  events: UiEventHub;
  links: LoginLinks;
}

export function registerUi(app: FastifyInstance, ctx: MasterContext): UiHandle {
  registerStaticUi(app);
  const events = new UiEventHub(ctx);
  registerEventsRoute(app, events);
  registerPagedReads(app, ctx);
  const links = registerLoginLinks(app, ctx);
  return { events, links };
}
