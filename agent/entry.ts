// The agent daemon's entry: all that a command line (`cairn agent`, `cairn up`) may use of the
// agent to start one: startAgent, its options and the agent's own credential file. Everything
// else of agent/ is the agent's own; the defaults its flags show are in shared/agent-defaults.ts.
// The import rule `cli-imports-only-daemon-entries` keeps it so.

export { startAgent, type AgentHandle, type AgentOptions } from './agent.ts';
export { loadAgentCredential, type AgentCredential } from './credential.ts';
