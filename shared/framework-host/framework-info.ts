// The FrameworkInfo a built-in framework subscribes with: its name, GPU capability (training
// wants GPUs: without it the master offers no agent that has any), and its role and priority
// class when they are not the defaults. The runtime adds the framework id and failover timeout.

import type { FrameworkInfo } from '../mesos-v1.ts';
import { PRIORITY_CLASS_LABEL } from '../sharing/priority-classes.ts';

export function hostedFrameworkInfo(name: string, role = '*', priorityClass?: string): FrameworkInfo {
  return {
    name,
    user: '',
    capabilities: [{ type: 'GPU_RESOURCES' }],
    ...(role !== '*' ? { role } : {}),
    ...(priorityClass !== undefined ? { labels: { labels: [{ key: PRIORITY_CLASS_LABEL, value: priorityClass }] } } : {}),
  };
}
