// The master's end of one agent's WebSocket: typed sends and the liveness bookkeeping
// that decides when an agent has missed too many pings.

import type { WebSocket } from 'ws';
import { encodeMasterToAgent, type MasterToAgent } from '../../shared/agent-protocol.ts';

export class AgentLink {
  /** Set once the agent has registered over this socket. */
  agentId: string | undefined;
  /** Pings sent since the last pong. */
  missedPings = 0;
  private awaitingPong = false;

  constructor(readonly socket: WebSocket, readonly remoteAddress: string) {}

  get isOpen(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  send(msg: MasterToAgent): void {
    if (this.isOpen) this.socket.send(encodeMasterToAgent(msg));
  }

  /** Sends a ping; returns how many in a row have gone unanswered before this one. */
  ping(nowMs: number): number {
    if (this.awaitingPong) this.missedPings++;
    this.awaitingPong = true;
    this.send({ ping: { sentMs: nowMs } });
    return this.missedPings;
  }

  pong(): void {
    this.awaitingPong = false;
    this.missedPings = 0;
  }

  close(code = 1000, reason = ''): void {
    if (this.isOpen) this.socket.close(code, reason);
  }
}
