// Task specs for tests that drive an executor or an agent directly (below the scheduler API),
// and reading a streamed (NDJSON) answer line by line.

import type { TaskInfo } from '../../shared/agent-protocol.ts';

/** A shell task of framework `fw-1` with 0.1 cpus and 32 MiB; `extra` replaces any field. */
export function shellTask(id: string, script: string, extra: Partial<TaskInfo> = {}): TaskInfo {
  return {
    taskId: id,
    frameworkId: 'fw-1',
    name: id,
    resources: 'cpus:0.1;mem:32',
    command: { shell: true, value: script, arguments: [], environment: [] },
    killGraceMs: 0,
    labels: [],
    ...extra,
  };
}

/** The JSON lines of a streamed response body, each parsed as it arrives; throws if it ends mid-line. */
export async function* ndjsonLines<T>(body: AsyncIterable<Uint8Array>): AsyncGenerator<T> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const part of body) {
    pending += decoder.decode(part, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line !== '') yield JSON.parse(line) as T;
  }
  // Every line a server sends ends with a newline; a stream cut inside one is an error.
  if (pending !== '') throw new Error(`the stream ended inside a line: ${pending.slice(0, 200)}`);
}
