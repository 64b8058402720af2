// What the host hands a built-in framework (FrameworkEnv), in the whole-cluster simulation: its
// store, the registry of the master it runs on, the simulation's priority classes and clock,
// no HTTP (its transport is the simulator's) and a silent log.

import pino from 'pino';
import type { FrameworkEnv, ClusterAgent, ClusterTask } from '../../shared/framework-host/contract.ts';
import type { FrameworkStore } from '../../shared/framework-host/store.ts';
import { DEFAULT_LEADER_CONFIG } from '../../master/leader/config.ts';
import type { SimMaster } from './cluster-master.ts';

/** Made before any run: pino reads the host's clock when made. */
const SILENT = pino({ level: 'silent' });

/** `master()`: the master whose registry the framework reads (none: an empty cluster). */
export function simEnv(name: string, store: FrameworkStore, master: () => SimMaster | undefined, now: () => number): FrameworkEnv {
  return {
    name, store,
    cluster: {
      tasks: () => (master()?.state.tasks ?? new Map()) as ReadonlyMap<string, ClusterTask>,
      agents: () => (master()?.state.agents ?? new Map()) as ReadonlyMap<string, ClusterAgent>,
      holders: () => [],
    },
    priorityClasses: DEFAULT_LEADER_CONFIG.priorityClasses,
    schedulerOptions: () => {
      throw new Error('the simulation passes its own transport');
    },
    agentFetch: () => undefined,
    domain: 'cairn',
    log: SILENT,
    now,
    api: () => undefined,
  };
}
