// The holders of an agent's resources as the built-in frameworks read them: named by the
// framework that launched them (an app's id, job NAME), else `<framework> task <name>`, with
// the class preemption compares (a task's label may raise it above its framework's) and
// whether it may be preempted at all.

import { describe, expect, it } from 'vitest';
import { clusterHolders } from '../../master/framework-host/cluster-holders.ts';
import { JOBS_FRAMEWORK } from '../../master/frameworks/jobs/framework.ts';
import { SERVICES_FRAMEWORK } from '../../master/frameworks/services/framework.ts';
import type { FrameworkRecord, TaskRecord } from '../../master/registry/commands.ts';
import type { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';

function fw(id: string, name: string, extra: Partial<FrameworkRecord> = {}): FrameworkRecord {
  return { id, name, user: '', role: '*', principal: '', failoverTimeoutS: 0, registeredAtMs: 0, ...extra };
}

function task(id: string, frameworkId: string, labels: [string, string][], state: TaskRecord['state'] = 'TASK_RUNNING'): TaskRecord {
  return {
    id, name: `name-${id}`, frameworkId, agentId: 'a1', resources: 'cpus:0.2;mem:32', state, message: '', launchedAtMs: 0, updatedAtMs: 0, killGraceMs: 0,
    command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: labels.map(([name, value]) => ({ name, value })),
  };
}

describe('clusterHolders', () => {
  it('names each task by its object, with its class and whether it may be preempted', () => {
    const frameworks = new Map([
      ['f1', fw('f1', 'marathon')],
      ['f2', fw('f2', 'jobs', { role: 'ml', priorityClass: 'iteration' })],
      ['f3', fw('f3', 'cairn-run:train')],
    ]);
    const tasks = [
      task('t1', 'f1', [['cairn.marathon.app', '/dev/web'], ['cairn.priority-class', 'production'], ['cairn.preemptible', 'false']]),
      task('t2', 'f2', [['cairn.job', 'mnist'], ['cairn.priority-class', 'research']]),
      task('t3', 'f3', []),
      task('t4', 'f3', [], 'TASK_UNREACHABLE'),
    ];
    const state = { frameworks, activeTasksOn: (agentId: string) => (agentId === 'a1' ? tasks : []) } as unknown as RegistryStateMachine;
    const holders = clusterHolders(state, [SERVICES_FRAMEWORK, JOBS_FRAMEWORK], new PriorityClasses(), 'a1');
    expect(holders).toEqual([
      { taskId: 't1', name: '/dev/web', framework: 'marathon', role: '*', priorityClass: 'production', preemptible: false, resources: 'cpus:0.2;mem:32' },
      // A label names a lower class than its framework's: the framework's holds.
      { taskId: 't2', name: 'job mnist', framework: 'jobs', role: 'ml', priorityClass: 'iteration', preemptible: true, resources: 'cpus:0.2;mem:32' },
      { taskId: 't3', name: 'cairn-run:train task name-t3', framework: 'cairn-run:train', role: '*', priorityClass: 'research', preemptible: true, resources: 'cpus:0.2;mem:32' },
    ]);
    expect(clusterHolders(state, [], new PriorityClasses(), 'nowhere')).toEqual([]);
  });
});
