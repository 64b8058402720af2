// Why an app's waiting instance does not start, for `GET /v2/queue?cairn=true` (`why`) and
// `cairn app queue`: one instance's resources against what every agent has free, naming who
// holds the rest and whether the app's class may preempt them (shared/sdk/why-queued.ts).
// The decline counts by reason (`waitingOn`) stay beside it: constraints and roles are theirs.

import type { ClusterView } from '../../../shared/framework-host/contract.ts';
import { roomAgents } from '../../../shared/framework-host/room-agents.ts';
import { explainQueued } from '../../../shared/sdk/why-queued.ts';
import { PRIORITY_CLASS_LABEL, type PriorityClasses } from '../../../shared/sharing/priority-classes.ts';
import { portCount, type AppDefinition } from './app-model.ts';

/** The sentence for one waiting instance of `app`; undefined when one would fit in what is free now. */
export function appWaitReason(app: AppDefinition, cluster: ClusterView, classes: PriorityClasses): string | undefined {
  const instance = { label: 'an instance', cpus: app.cpus, mem: app.mem, disk: app.disk, gpus: app.gpus, ports: portCount(app) };
  const name = classes.orDefault(app.labels[PRIORITY_CLASS_LABEL]);
  return explainQueued([instance], roomAgents(cluster), { name, rank: (c) => classes.rank(c) });
}
