// The services framework as it runs on the master (master/frameworks/services/runtime.ts) on
// the framework runtime, driven through a fake transport and clock: an app's instance record
// is durable before the ACCEPT that launches it, and while it waits with no offer coming the
// framework revives again every REVIVE_AGAIN_MS.

import { describe, expect, it } from 'vitest';
import { ServicesRuntime } from '../../master/frameworks/services/runtime.ts';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { REVIVE_AGAIN_MS } from '../../master/frameworks/services/offer-policy.ts';
import { fakeOffer, fakeWorld, flush, launchedTaskId } from '../harness/fake-scheduler.ts';

function setup() {
  const w = fakeWorld('marathon');
  return { ...w, service: new ServicesRuntime(w.env, w.io) };
}

describe('the services framework on the framework runtime', () => {
  it('revives while an instance waits and no offer comes, and records the instance before the ACCEPT', async () => {
    const { log, clock, store, transports, service } = setup();
    try {
      await service.changes.createApp(parseApp({ id: '/web', cmd: 'sleep 100', cpus: 0.5, mem: 64, instances: 1 }), false, '127.0.0.1', '/v2/apps');
      expect(transports).toHaveLength(1);
      transports[0]!.accept('fw-s');
      await flush();
      // Its rounds ask for offers; no REVIVE on subscribing.
      const t = transports[0]!;
      const revives = () => t.calls.filter((c) => c.type === 'REVIVE').length;
      expect(t.calls[0]!.type).toBe('RECONCILE');
      await flush();
      expect(revives()).toBe(1);
      clock.advance(REVIVE_AGAIN_MS - 1_000);
      await flush();
      expect(revives()).toBe(1);
      clock.advance(1_000);
      await flush();
      expect(revives()).toBe(2);

      const release = store.hold();
      t.emit('offers', [fakeOffer('o1', 'fw-s')]);
      await flush();
      expect(t.calls.map((c) => c.type)).not.toContain('ACCEPT');
      release();
      await flush();
      const accept = log.indexOf('ACCEPT');
      expect(accept).toBeGreaterThan(-1);
      const launched = launchedTaskId(t.calls.find((c) => c.type === 'ACCEPT'))!;
      expect(log.indexOf(`put instance/${launched}`)).toBeGreaterThan(-1);
      expect(log.indexOf(`put instance/${launched}`)).toBeLessThan(accept);
    } finally {
      service.stop();
    }
  });
});
