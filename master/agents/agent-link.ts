// The master's end of one agent's WebSocket: typed sends and a close. What the agent's
// pings and frames mean is decided by the leader's core; this only carries frames.

import type { WebSocket } from 'ws';
import { encodeMasterToAgent, type MasterToAgent } from '../../shared/agent-protocol.ts';

export class AgentLink {
  /** `principal`: the agent credential the connection authenticated with ('' when none is asked). */
  constructor(readonly socket: WebSocket, readonly remoteAddress: string, readonly principal: string) {}

  get isOpen(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  send(msg: MasterToAgent): void {
    if (this.isOpen) this.socket.send(encodeMasterToAgent(msg));
  }

  close(code = 1000, reason = ''): void {
    if (this.isOpen) this.socket.close(code, reason);
  }
}
