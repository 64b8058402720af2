// Bounds on what an agent sends the master: ids, names and lists beyond their bound refuse
// the frame naming the field; an over-long status message is cut, not refused.

import { describe, expect, it } from 'vitest';
import { AGENT_FRAME_LIMITS, checkAgentFrame } from '../../shared/agent-frame-bounds.ts';
import type { Register, StatusUpdate } from '../../shared/agent-messages.ts';

const register = (over: Partial<Register> = {}): { register: Register } => ({
  register: { agentId: '', hostname: 'h', ip: '10.0.0.1', httpPort: 5051, resources: 'cpus:1', attributes: [], tasks: [], version: '1', ...over },
});
const update = (over: Partial<StatusUpdate> = {}): { statusUpdate: StatusUpdate } => ({
  statusUpdate: { uuid: new Uint8Array(16), taskId: 't', frameworkId: 'f', state: 'TASK_RUNNING', message: '', hasExitCode: false, exitCode: 0, timestampMs: 1, reason: '', ...over },
});
const long = (n: number) => 'x'.repeat(n);

describe('agent frame bounds', () => {
  it('takes frames within the bounds', () => {
    expect(() => checkAgentFrame(register({ hostname: long(AGENT_FRAME_LIMITS.name), tasks: [{ taskId: long(255), frameworkId: 'f', state: 'TASK_RUNNING', resources: 'cpus:1' }] }))).not.toThrow();
    expect(() => checkAgentFrame({ pong: { sentMs: 1 } })).not.toThrow();
  });

  it('refuses over-long strings and lists, naming the field', () => {
    for (const [frame, field] of [
      [register({ agentId: long(256) }), 'register.agentId'],
      [register({ hostname: long(100_000) }), 'register.hostname'],
      [register({ version: long(100_000) }), 'register.version'],
      [register({ resources: long(AGENT_FRAME_LIMITS.resources + 1) }), 'register.resources'],
      [register({ attributes: [{ name: 'rack', value: long(AGENT_FRAME_LIMITS.text + 1) }] }), 'register.attributes[0].value'],
      [register({ attributes: Array.from({ length: 257 }, (_, i) => ({ name: `a${i}`, value: '' })) }), 'register.attributes'],
      [register({ tasks: [{ taskId: long(300), frameworkId: 'f', state: 'TASK_RUNNING', resources: '' }] }), 'register.tasks[0].taskId'],
      [update({ taskId: long(300) }), 'statusUpdate.taskId'],
      [update({ reason: long(2000) }), 'statusUpdate.reason'],
    ] as const) {
      expect(() => checkAgentFrame(frame)).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FRAME', field }));
    }
  });

  it('cuts an over-long status message instead of refusing the update (it would be re-sent for ever)', () => {
    const u = update({ message: long(1_000_000) });
    checkAgentFrame(u);
    expect(u.statusUpdate.message).toHaveLength(AGENT_FRAME_LIMITS.text);
    expect(u.statusUpdate.message.endsWith('...')).toBe(true);
  });
});
