// Sends a simulated message through the real wire codec (encode, authenticate, decode), so
// the simulation also exercises proto/raft.proto and shared/raft/wire.ts on real traffic.

import { RaftWire } from '../../shared/raft/wire.ts';
import type { Message } from '../../shared/raft/types.ts';

const wire = new RaftWire({ clusterId: 'sim', secret: 'simulation-secret-0123456789' });

export function wireRoundTrip(m: Message): Message {
  const out = wire.decode(wire.encode([m]));
  if (out.length !== 1) throw new Error(`wire round trip returned ${out.length} messages`);
  return out[0];
}
