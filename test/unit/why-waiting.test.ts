// Why tasks wait: the sentences a framework says from the agents' totals and the offers it declined.

import { describe, expect, it } from 'vitest';
import { DeclinedOffers, explainUnfit, formatAmount, offerShortfall } from '../../shared/sdk/why-waiting.ts';
import { Resources } from '../../shared/resources.ts';
import type { AgentView } from '../../shared/master-state.ts';

function agent(id: string, resources: string, extra: Partial<AgentView> = {}): AgentView {
  return { id, hostname: `host-${id}`, ip: '10.0.0.1', url: 'http://10.0.0.1:5051', reachable: true, connected: true, registeredAtMs: 0, resources, used: '', offered: '', attributes: {}, isolation: '', draining: null, usage: null, ...extra };
}

const DRAINING = { sinceMs: 1, deadlineAtMs: null };

describe('explainUnfit: no agent could ever fit the task', () => {
  it('names the resource no agent has enough of, and the largest there is', () => {
    const agents = [agent('a', 'cpus:2;mem:1024'), agent('b', 'cpus:1;mem:4096')];
    expect(explainUnfit({ cpus: 64, mem: 32 }, agents)).toBe('no agent has 64 cpus; the largest has 2');
    expect(explainUnfit({ cpus: 1, mem: 8192 }, agents)).toBe('no agent has 8192 MiB of mem; the largest has 4096 MiB');
    expect(explainUnfit({ cpus: 0.5, mem: 32, disk: 100 }, agents)).toBe('no agent has 100 MiB of disk; none has any');
  });

  it('names gpus and ports as well, and every resource that is short', () => {
    const agents = [agent('a', 'cpus:2;mem:1024;gpus:1;ports:[31000-31001]')];
    expect(explainUnfit({ cpus: 1, mem: 32, gpus: 2 }, agents)).toBe('no agent has 2 gpus; the largest has 1');
    expect(explainUnfit({ cpus: 1, mem: 32, ports: 3 }, agents)).toBe('no agent has 3 ports; the largest has 2');
    expect(explainUnfit({ cpus: 8, mem: 2048 }, agents)).toBe('no agent has 8 cpus (the largest has 2) or 2048 MiB of mem (the largest has 1024 MiB)');
  });

  it('says when each resource exists but never all on one agent', () => {
    const agents = [agent('a', 'cpus:8;mem:1024'), agent('b', 'cpus:1;mem:16384')];
    expect(explainUnfit({ cpus: 4, mem: 8192 }, agents)).toBe('no agent has 4 cpus and 8192 MiB of mem together: host-a has 8 cpus and 1024 MiB of mem, host-b has 1 cpus and 16384 MiB of mem');
  });

  it('says when no agent is registered', () => {
    expect(explainUnfit({ cpus: 1, mem: 32 }, [])).toBe('no agent is registered with the master');
  });

  it('compares exact amounts: 0.3 cpus fit in 0.3', () => {
    expect(explainUnfit({ cpus: 0.3, mem: 32 }, [agent('a', 'cpus:0.3;mem:32')])).toBeUndefined();
  });
});

describe('explainUnfit: the agents that could fit it are not available', () => {
  it('says the agents that could fit it are draining or unreachable', () => {
    const small = agent('s', 'cpus:1;mem:1024');
    expect(explainUnfit({ cpus: 4, mem: 32 }, [small, agent('big', 'cpus:8;mem:1024', { draining: DRAINING })])).toBe('the 1 agent that could fit it is draining');
    expect(explainUnfit({ cpus: 4, mem: 32 }, [small, agent('b1', 'cpus:8;mem:1024', { reachable: false }), agent('b2', 'cpus:8;mem:1024', { reachable: false })])).toBe(
      'the 2 agents that could fit it are unreachable',
    );
    expect(explainUnfit({ cpus: 4, mem: 32 }, [agent('b1', 'cpus:8;mem:1024', { draining: DRAINING }), agent('b2', 'cpus:8;mem:1024', { reachable: false, draining: DRAINING })])).toBe(
      'the 2 agents that could fit it are draining (1) or unreachable (1)',
    );
  });

  it('has nothing to say when one that could fit it is available', () => {
    expect(explainUnfit({ cpus: 4, mem: 32 }, [agent('b1', 'cpus:8;mem:1024', { draining: DRAINING }), agent('b2', 'cpus:8;mem:1024')])).toBeUndefined();
    // A disconnected agent that is still reachable (its grace period) counts as available.
    expect(explainUnfit({ cpus: 4, mem: 32 }, [agent('b', 'cpus:8;mem:1024', { connected: false })])).toBeUndefined();
  });
});

describe('declined offers', () => {
  it('an offer lacks what is below the requirement', () => {
    const offer = Resources.parse('cpus:0.5;mem:32;ports:[31000-31000]').toMesos();
    expect(offerShortfall({ cpus: 1, mem: 32, ports: 2 }, offer)).toEqual(
      new Map([
        ['cpus', { free: 0.5, needed: 1 }],
        ['ports', { free: 1, needed: 2 }],
      ]),
    );
    expect(offerShortfall({ cpus: 0.5, mem: 32 }, offer).size).toBe(0);
  });

  it('says it once, then again only when it changes', () => {
    const d = new DeclinedOffers({ cpus: 0.1, mem: 512 });
    expect(d.add(Resources.parse('cpus:2;mem:32'))).toBe('waiting: every offer so far had too little mem: 32 MiB free, 512 MiB needed');
    expect(d.add(Resources.parse('cpus:2;mem:32'))).toBeUndefined();
    expect(d.add(Resources.parse('cpus:1;mem:32'))).toBeUndefined();
    expect(d.add(Resources.parse('cpus:2;mem:64'))).toBe('waiting: every offer so far had too little mem: at most 64 MiB free, 512 MiB needed');
    // An offer that would have fitted is not counted (it was not declined for its size).
    expect(d.add(Resources.parse('cpus:2;mem:1024'))).toBeUndefined();
    d.reset();
    expect(d.sentence()).toBeUndefined();
    expect(d.add(Resources.parse('cpus:2;mem:32'))).toBe('waiting: every offer so far had too little mem: 32 MiB free, 512 MiB needed');
  });

  it('names each resource some offer lacked when none lacked one in every offer', () => {
    const d = new DeclinedOffers({ cpus: 1, mem: 512 });
    d.add(Resources.parse('cpus:0.5;mem:1024'));
    expect(d.add(Resources.parse('cpus:4;mem:100'))).toBe('waiting: every offer so far was too small: too little cpus: 0.5 free, 1 needed, or too little mem: 100 MiB free, 512 MiB needed');
    const both = new DeclinedOffers({ cpus: 1, mem: 512 });
    expect(both.add(Resources.parse('cpus:0.5;mem:100'))).toBe('waiting: every offer so far had too little cpus: 0.5 free, 1 needed; and too little mem: 100 MiB free, 512 MiB needed');
  });

  it('formats amounts with their units', () => {
    expect(formatAmount('cpus', 0.1)).toBe('0.1 cpus');
    expect(formatAmount('mem', 512)).toBe('512 MiB of mem');
    expect(formatAmount('ports', 1)).toBe('1 port');
  });
});
