// Marathon's event bus: every event goes to each open `/v2/events` stream as a server-sent
// event (`event: <eventType>`, `data: <json>`), the shape tools built on Marathon read.

export type MarathonEvent = { eventType: string; timestamp: string } & Record<string, unknown>;

export class EventBus {
  private readonly listeners = new Set<(e: MarathonEvent) => void>();

  subscribe(listener: (e: MarathonEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(eventType: string, fields: Record<string, unknown>, now = new Date()): void {
    const e: MarathonEvent = { eventType, timestamp: now.toISOString(), ...fields };
    for (const l of [...this.listeners]) {
      try {
        l(e);
      } catch {
        // One broken stream must not keep the event from the others.
      }
    }
  }

  get size(): number {
    return this.listeners.size;
  }
}

/** One event as `text/event-stream` text. */
export function sseFrame(e: MarathonEvent): string {
  return `event: ${e.eventType}\ndata: ${JSON.stringify(e)}\n\n`;
}
