// The Mesos TaskInfo for one replica the engine launches: its command or container, its
// environment (the kind's contract, then the template's own), and labels naming its job,
// group and index so the agent gives it the job's shared directory. Pure.

import type { TaskInfoJson } from '../../../shared/mesos-v1.ts';
import type { TaskLaunch } from './engine.ts';

export { policyExitCode } from '../../../shared/jobs/exit-code.ts';

/** Labels every replica's task carries; the agent reads JOB_LABEL to give it CAIRN_JOB_DIR. */
export const JOB_LABEL = 'cairn.job';
export const GROUP_LABEL = 'cairn.job.group';
export const INDEX_LABEL = 'cairn.job.index';

/** Parameter servers and ps-lite schedulers are stopped, not waited for: a short grace. */
const KILL_GRACE_NS = 3e9;

export function taskInfoFor(t: TaskLaunch, agentId: string): TaskInfoJson {
  const variables = Object.entries(t.env).map(([name, value]) => ({ name, value }));
  const tpl = t.template;
  // No command with an image: the image's own entrypoint, given the args alone (as Kubernetes' args).
  const command =
    tpl.image && tpl.command === ''
      ? { shell: false, value: '', arguments: tpl.args ?? [], environment: { variables } }
      : tpl.args
        ? { shell: false, value: tpl.command, arguments: [tpl.command, ...tpl.args], environment: { variables } }
        : { shell: true, value: tpl.command, environment: { variables } };
  const info: TaskInfoJson = {
    name: t.name,
    task_id: { value: t.taskId },
    agent_id: { value: agentId },
    resources: t.resources,
    command,
    labels: { labels: [{ key: JOB_LABEL, value: t.job }, { key: GROUP_LABEL, value: t.group }, { key: INDEX_LABEL, value: String(t.index) }] },
    kill_policy: { grace_period: { nanoseconds: KILL_GRACE_NS } },
  };
  if (tpl.image) {
    info.container = {
      type: 'DOCKER',
      // Host networking: the replica listens on the ports it was given, at the agent's address.
      docker: { image: tpl.image, network: 'HOST', ...(tpl.imagePullSecrets?.length ? { pull_secrets: tpl.imagePullSecrets } : {}) },
      volumes: tpl.volumes.map((v) => ({ host_path: v.hostPath, container_path: v.containerPath, mode: v.mode })),
    };
  }
  return info;
}
