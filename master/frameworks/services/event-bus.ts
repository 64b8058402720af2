// Marathon's event bus: every event goes to each open `/v2/events` stream as a server-sent
// event (`event: <eventType>`, `data: <json>`), the shape tools built on Marathon read.
// Each event goes out with the principal that owns its app, so a stream sends a caller only
// the events of apps it may view.

export type MarathonEvent = { eventType: string; timestamp: string } & Record<string, unknown>;

/** An event and the principal owning its app (undefined: owned by nobody, or no app). */
export type EventListener = (e: MarathonEvent, owner: string | undefined) => void;

/** The app an event is about, whatever its shape. */
export function eventAppId(e: MarathonEvent): string | undefined {
  if (typeof e.appId === 'string') return e.appId;
  const def = e.appDefinition as { id?: unknown } | undefined;
  if (typeof def?.id === 'string') return def.id;
  // A deployment's plan (Marathon's DeploymentPlan): the app of its first action.
  const app = (e.plan as { steps?: { actions?: { app?: unknown }[] }[] } | undefined)?.steps?.[0]?.actions?.[0]?.app;
  return typeof app === 'string' ? app : undefined;
}

export class EventBus {
  private readonly listeners = new Set<EventListener>();
  /**
   * The last owner each app was known to have: an app's last events (its stop's deployment,
   * its tasks' kills) come after its record is gone, and still belong to its owner.
   */
  private readonly known = new Map<string, string | undefined>();

  private ownerOf: (appId: string) => string | undefined = () => undefined;

  /** Where an app's owner is read (the store); what `knowOwner` remembered is the fallback. */
  readOwnersFrom(ownerOf: (appId: string) => string | undefined): void {
    this.ownerOf = ownerOf;
  }

  /** Remembers an app's owner before its record changes or goes. */
  knowOwner(appId: string, owner: string | undefined): void {
    this.known.set(appId, owner);
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(eventType: string, fields: Record<string, unknown>, now = new Date()): void {
    const e: MarathonEvent = { eventType, timestamp: now.toISOString(), ...fields };
    const appId = eventAppId(e);
    const owner = appId === undefined ? undefined : (this.ownerOf(appId) ?? this.known.get(appId));
    for (const l of [...this.listeners]) {
      try {
        l(e, owner);
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
