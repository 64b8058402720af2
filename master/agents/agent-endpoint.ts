// `ws://master/api/v1/agent`: the agents' WebSocket. Each binary frame is one
// AgentToMaster protobuf message; anything else is refused with an error frame and the
// connection is closed, leaving the registry untouched.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { decodeAgentToMaster } from '../../shared/agent-protocol.ts';
import { checkAgentFrame } from '../../shared/agent-frame-bounds.ts';
import { CairnError } from '../../shared/errors.ts';
import { refuseUpgrade } from '../auth/http-hooks.ts';
import type { MasterContext } from '../context.ts';
import type { Master } from '../master.ts';
import { AgentLink } from './agent-link.ts';

export const AGENT_PATH = '/api/v1/agent';
/** Close code a follower uses; the close reason is the leader's URL (empty when unknown). */
export const NOT_LEADER_CLOSE_CODE = 4001;

export class AgentEndpoint {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });

  constructor(private readonly ctx: MasterContext) {
    this.wss.on('connection', (socket: WebSocket, req: IncomingMessage, principal: string) => {
      const link = new AgentLink(socket, req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '', principal);
      // Agents register with the leader only; a follower tells them where it is and hangs up.
      const master = ctx.master();
      if (!master) {
        const leader = ctx.leaderUrl() ?? '';
        link.send({ error: { code: 'CAIRN_NOT_LEADER', message: leader } });
        link.close(NOT_LEADER_CLOSE_CODE, leader.slice(0, 120));
        return;
      }
      master.agentConnected(link);
      socket.on('message', (data: RawData, isBinary: boolean) => this.onFrame(master, link, data, isBinary));
      socket.on('error', (err: Error) => master.log.debug({ err: err.message }, 'agent socket error'));
    });
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Only an agent's credential opens this socket; anything else is refused before the
    // upgrade, so a fake agent never sees a frame.
    let principal: string;
    try {
      principal = this.ctx.auth.authenticate(req.headers, 'agent').name;
    } catch (err) {
      this.ctx.audit.warn({ ip: req.socket.remoteAddress, path: AGENT_PATH, refused: (err as CairnError).code, why: (err as Error).message }, 'audit');
      refuseUpgrade(socket, err as CairnError);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req, principal));
  }

  private onFrame(master: Master, link: AgentLink, data: RawData, isBinary: boolean): void {
    let msg;
    try {
      if (!isBinary) throw new CairnError('CAIRN_BAD_FRAME', 'agent frames must be binary protobuf', 'frame');
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      msg = decodeAgentToMaster(bytes);
      checkAgentFrame(msg);
    } catch (err) {
      master.badAgentFrame(link, err instanceof CairnError ? err : new CairnError('CAIRN_BAD_FRAME', String(err), 'frame'));
      return;
    }
    // What a frame means (register first, then updates, pongs, usage) is the core's to judge.
    try {
      master.agentFrame(link, msg);
    } catch (err) {
      master.log.error({ err }, 'handling agent frame failed');
    }
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}
