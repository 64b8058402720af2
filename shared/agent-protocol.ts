// Typed encode/decode of the agent <-> master frames defined in proto/agent.proto.
// Decoding validates: a frame that is not exactly one known message is a CairnError
// (CAIRN_BAD_FRAME) naming what was wrong, never a half-read object.

import protobuf from 'protobufjs';
import { fileURLToPath } from 'node:url';
import { CairnError } from './errors.ts';
import type { AgentToMaster, MasterToAgent } from './agent-messages.ts';

export * from './agent-messages.ts';

const root = protobuf.loadSync(fileURLToPath(new URL('../proto/agent.proto', import.meta.url)));
const AgentToMasterType = root.lookupType('cairn.agent.AgentToMaster');
const MasterToAgentType = root.lookupType('cairn.agent.MasterToAgent');

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, bytes: Uint8Array as unknown as typeof String, defaults: true, arrays: true, oneofs: true };

function decode<T>(type: protobuf.Type, bytes: Uint8Array, what: string): T {
  let msg: protobuf.Message;
  try {
    msg = type.decode(bytes);
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FRAME', `undecodable ${what} frame: ${(err as Error).message}`, 'frame');
  }
  const obj = type.toObject(msg, TO_OBJECT) as Record<string, unknown>;
  const which = obj.msg;
  if (typeof which !== 'string') {
    throw new CairnError('CAIRN_BAD_FRAME', `${what} frame carries no message`, 'frame.msg');
  }
  return { [which]: obj[which] } as T;
}

export function encodeAgentToMaster(m: AgentToMaster): Uint8Array {
  return AgentToMasterType.encode(AgentToMasterType.fromObject(m)).finish();
}
export function decodeAgentToMaster(bytes: Uint8Array): AgentToMaster {
  return decode<AgentToMaster>(AgentToMasterType, bytes, 'agent');
}
export function encodeMasterToAgent(m: MasterToAgent): Uint8Array {
  return MasterToAgentType.encode(MasterToAgentType.fromObject(m)).finish();
}
export function decodeMasterToAgent(bytes: Uint8Array): MasterToAgent {
  return decode<MasterToAgent>(MasterToAgentType, bytes, 'master');
}
