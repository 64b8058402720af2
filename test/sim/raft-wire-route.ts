// Sends a simulated message through the real wire codec (handshake once, then encode,
// authenticate, number, decode), so the simulation also exercises proto/raft.proto and
// shared/raft/wire.ts on real traffic. One session carries every message, in the order sent.

import { RaftWire } from '../../shared/raft/wire.ts';
import type { Message } from '../../shared/raft/types.ts';

const wire = new RaftWire({ clusterId: 'sim', secret: 'simulation-secret-0123456789' });
const { frame: hello, dialing } = wire.hello(1);
const { welcome, session: listener } = wire.accept(hello, 2);
const dialer = dialing.welcome(welcome);

export function wireRoundTrip(m: Message): Message {
  const out = listener.decode(dialer.encode([m]));
  if (out.length !== 1) throw new Error(`wire round trip returned ${out.length} messages`);
  return out[0];
}
