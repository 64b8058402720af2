// The holders of an agent's resources as a built-in framework reads them (ClusterView.holders):
// each running task with the name people know its object by, its framework, role and the
// class preemption would compare. The name comes from the framework that launched the task
// (its TaskOwnership.nameOf: an app's id, `job mnist`); a task of any other framework is
// `<framework> task <name>`. The class and preemptible rules are preemption's
// (master/leader/preemption.ts): a label may raise a task above its framework's class.

import { isTerminal } from '../../shared/agent-messages.ts';
import type { HostedFramework, ClusterHolder } from '../../shared/framework-host/contract.ts';
import { PREEMPTIBLE_LABEL, PRIORITY_CLASS_LABEL, type PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import type { RegistryStateMachine } from '../registry/state-machine.ts';

export function clusterHolders(state: RegistryStateMachine, frameworks: readonly HostedFramework[], classes: PriorityClasses, agentId: string): ClusterHolder[] {
  const out: ClusterHolder[] = [];
  for (const t of state.activeTasksOn(agentId)) {
    if (isTerminal(t.state) || t.state === 'TASK_UNREACHABLE') continue;
    const fw = state.frameworks.get(t.frameworkId);
    const fwName = fw?.name ?? t.frameworkId;
    // Its framework's class, as preemption reads it (master/leader/preemption.ts classOf).
    let priorityClass = classes.orDefault(fw?.priorityClass);
    let preemptible = true;
    for (const l of t.labels) {
      if (l.name === PRIORITY_CLASS_LABEL && classes.has(l.value) && classes.rank(l.value) > classes.rank(priorityClass)) priorityClass = classes.orDefault(l.value);
      else if (l.name === PREEMPTIBLE_LABEL && l.value === 'false') preemptible = false;
    }
    const owner = frameworks.find((f) => f.tasks?.runs(fwName));
    const name = owner?.tasks?.nameOf?.(t.labels) ?? `${fwName} task ${t.name || t.id}`;
    out.push({ taskId: t.id, name, framework: fwName, role: fw?.role ?? '*', priorityClass, preemptible, resources: t.resources });
  }
  return out;
}
