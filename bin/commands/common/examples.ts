// Examples at the end of every command's `--help`, as kubectl prints them. Kept here, by
// command path, and added once the program is built, so each command's help has some;
// `run` writes its own with its other notes.

import type { Command } from 'commander';

export const EXAMPLES: Record<string, readonly string[]> = {
  '': ['cairn up', 'cairn run -- echo hello', 'cairn tasks --state running', 'cairn task TASK_ID', 'source <(cairn completion bash)'],
  up: ['cairn up', 'cairn up --resources "cpus:4;mem:8192" --data-dir /tmp/cairn', 'cairn up --masters 3 --port 5050'],
  master: ['cairn master --data-dir /var/lib/cairn/master', 'cairn master --host 0.0.0.0 --id 1 --peers 1=http://m1:5050,2=http://m2:5050,3=http://m3:5050 --secret-file /etc/cairn/secret'],
  agent: ['cairn agent --master http://m1:5050 --work-dir /var/lib/cairn/agent', 'cairn agent --master http://m1:5050 --resources "cpus:8;mem:32768;gpus:2" --attributes "rack:r1"'],
  'agent drain': ['cairn agent drain gpu-host-3', 'cairn agent drain gpu-host-3 --deadline 10m'],
  'agent undrain': ['cairn agent undrain gpu-host-3'],
  agents: ['cairn agents', 'cairn agents -o wide', 'cairn agents -o json | jq -r \'.[] | select(.draining) | .hostname\''],
  tasks: ['cairn tasks', 'cairn tasks --state running,staging --agent gpu-host-3', 'cairn tasks --framework cairn-run:train --limit 0 -o yaml', 'cairn tasks --state failed -o wide'],
  task: ['cairn task train-0-k3x9', 'cairn task train-0-k3x9 -o yaml'],
  state: ['cairn state', 'cairn state | jq \'.agents | length\''],
  top: ['cairn top', 'cairn top --once', 'cairn top --interval 5s'],
  members: ['cairn members', 'cairn members --master http://10.0.0.5:5051 -o json'],
  masters: ['cairn masters', 'cairn masters add 4=http://m4:5050', 'cairn masters remove 3'],
  'masters list': ['cairn masters list', 'cairn masters list -o json'],
  'masters add': ['cairn masters add 4=http://m4:5050'],
  'masters replace': ['cairn masters replace 2 4=http://m4:5050'],
  'masters remove': ['cairn masters remove 3'],
  logs: ['cairn logs train-0-k3x9', 'cairn logs -f train-0-k3x9', 'cairn logs --stderr train-0-k3x9', 'cairn logs mnist/worker-3'],
  kill: ['cairn kill train-0-k3x9'],
  teardown: ['cairn teardown 6f1c2c1e-0c8e-4b43-9d4c-1d2a3b4c5d6e-0001'],
  completion: ['source <(cairn completion bash)', 'cairn completion zsh > "${fpath[1]}/_cairn"'],
  version: ['cairn version'],
  attach: ['cairn attach train-0-k3x9 train-1-p2m4'],
};

/** Adds the lines to the end of the command's help, under "Examples:". */
export function withExampleLines(cmd: Command, lines: readonly string[]): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  ${l}`).join('\n')}`);
}

/** `withExamples(cmd, key)` for a command family's own table of examples, by key. */
export function examplesFrom(table: Readonly<Record<string, readonly string[]>>): (cmd: Command, key: string) => Command {
  return (cmd, key) => withExampleLines(cmd, table[key]!);
}

/** Adds each command's examples (those named here) to the end of its help. */
export function addExamples(program: Command): void {
  const visit = (cmd: Command, path: string) => {
    const lines = EXAMPLES[path];
    if (lines) withExampleLines(cmd, lines);
    for (const c of cmd.commands) visit(c, path === '' ? c.name() : `${path} ${c.name()}`);
  };
  visit(program, '');
}
