// A stand-in for a host's upstream resolver, on loopback: answers A queries for the names it
// is given and NXDOMAIN for the rest, and counts what it was asked. Tests point the task
// resolver at it (--dns-resolvers), so names outside the zone are "forwarded" without a
// packet leaving the machine.

import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';

export class StandInDns {
  readonly asked: string[] = [];
  private constructor(private readonly socket: dgram.Socket, readonly port: number, readonly host: string) {}

  /** `host`: where it listens (loopback, or a test bridge's own address for namespaces). */
  static async start(records: Record<string, string>, host = '127.0.0.1'): Promise<StandInDns> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, host, () => resolve()));
    const self = new StandInDns(socket, socket.address().port, host);
    socket.on('message', (msg, rinfo) => {
      let q: dnsPacket.Packet;
      try {
        q = dnsPacket.decode(msg);
      } catch {
        return;
      }
      const question = q.questions?.[0];
      if (!question) return;
      const name = question.name.toLowerCase().replace(/\.$/, '');
      self.asked.push(`${question.type} ${name}`);
      const address = records[name];
      const answers = address !== undefined && question.type === 'A' ? [{ name: question.name, type: 'A' as const, ttl: 5, data: address }] : [];
      const reply = dnsPacket.encode({
        id: q.id,
        type: 'response',
        flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (address === undefined ? 3 : 0),
        questions: q.questions,
        answers,
      });
      socket.send(reply, rinfo.port, rinfo.address);
    });
    return self;
  }

  get address(): string {
    return `${this.host}:${this.port}`;
  }

  close(): void {
    this.socket.close();
  }
}
