// The host of built-in frameworks on a real master with authentication on: a toy framework
// subscribes as the built-in principal through the scheduler API, keeps state in its
// replicated store, serves routes on the master, and is stopped when the master stops.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { BUILTIN_PRINCIPAL } from '../../master/builtin-principal.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import type { FrameworkEnv, HostedFramework, FrameworkInstance, FrameworkRoutesEnv } from '../../master/framework-host/host.ts';
import { SchedulerClient } from '../../shared/sdk/scheduler-client.ts';
import { silentLogger } from '../../shared/logger.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { TEST_USER, authFetch } from '../harness/credentials.ts';

class Toy implements FrameworkInstance {
  readonly client: SchedulerClient;
  frameworkId = '';
  stopped = false;
  constructor(readonly env: FrameworkEnv) {
    this.client = new SchedulerClient(env.schedulerOptions({ user: 'root', name: 'toy', failover_timeout: 3600 }));
    this.client.on('subscribed', (id) => {
      this.frameworkId = id;
      void env.store.put('framework-id', id);
    });
    void this.client.subscribe().catch(() => {});
  }
  stop(): void {
    this.stopped = true;
    this.client.close();
  }
}

const instances: Toy[] = [];
const toy: HostedFramework<Toy> = {
  name: 'toy',
  start: (env) => {
    const t = new Toy(env);
    instances.push(t);
    return t;
  },
  routes: (app: FastifyInstance, env: FrameworkRoutesEnv<Toy>) => {
    app.get('/toy/state', async () => ({ frameworkId: env.store.get('framework-id') ?? null, keys: env.store.entries().map(([k]) => k) }));
    app.post('/toy/things/:name', async (req, reply) => {
      const t = env.leading(req, reply);
      if (!t) return reply;
      const name = (req.params as { name: string }).name;
      await env.store.write([{ key: `thing/${name}`, value: { name, by: t.frameworkId } }]);
      return reply.code(201).send({ name });
    });
  },
};

let master: MasterHandle;
let dir: string;

beforeEach(async () => {
  dir = tempDir();
  instances.length = 0;
  const credentials = parseCredentials(JSON.stringify({ credentials: [TEST_USER] }), 'test');
  master = await startMaster({ auth: MasterAuth.on({ credentials }), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), frameworks: [toy as HostedFramework] });
});

afterEach(async () => {
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('built-in framework host', () => {
  it('subscribes a built-in framework as the built-in principal and keeps its state in the registry', async () => {
    await waitFor('the toy framework subscribed', () => (instances[0]?.frameworkId ?? '') !== '', 20_000);
    const fw = master.context.registry.state.frameworks.get(instances[0]!.frameworkId)!;
    expect(fw).toMatchObject({ name: 'toy', principal: BUILTIN_PRINCIPAL });
    await waitFor('its framework id stored', () => master.context.registry.state.builtin.get('toy')?.get('framework-id') === instances[0]!.frameworkId, 20_000);

    const post = await authFetch(`${master.url}/toy/things/a`, { method: 'POST' });
    expect(post.status).toBe(201);
    const state = await (await authFetch(`${master.url}/toy/state`)).json();
    expect(state).toEqual({ frameworkId: instances[0]!.frameworkId, keys: ['framework-id', 'thing/a'] });
    // Values read back are frozen: a framework cannot change the registry behind its back.
    expect(() => { (master.context.registry.state.builtin.get('toy')!.get('thing/a') as { name: string }).name = 'x'; }).toThrow();
  });

  it('survives in a snapshot, and nobody without a credential reaches its routes', async () => {
    await waitFor('the toy framework subscribed', () => (instances[0]?.frameworkId ?? '') !== '', 20_000);
    expect((await fetch(`${master.url}/toy/things/b`, { method: 'POST' })).status).toBe(401);
    expect((await authFetch(`${master.url}/toy/things/b`, { method: 'POST' })).status).toBe(201);
    const snap = master.context.registry.state.snapshot();
    expect(snap.builtin?.toy?.['thing/b']).toMatchObject({ name: 'b' });
    expect(snap.builtin?.toy?.['thing/a']).toBeUndefined();
  });

  it('stops its instances when the master stops', async () => {
    await waitFor('the toy framework started', () => instances.length === 1, 20_000);
    await master.stop();
    expect(instances[0]!.stopped).toBe(true);
  });
});
