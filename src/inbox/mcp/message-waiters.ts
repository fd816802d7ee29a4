import { Gauge, type Registry } from 'prom-client';
import { SDK_EVENT_TYPES } from '../core/events.js';
import type { EventFeed, FeedEvent, FeedEventSummary } from '../realtime/event-feed.js';

/**
 * What `wait_for_message` waits on: the committed `message.received` events of an inbox, from the
 * real-time feed every process listens to (PostgreSQL NOTIFY across instances, in-process on
 * SQLite), so a message stored by any instance's SMTP listener wakes the waiting call at once.
 * Holds nothing while no one waits: the feed delivers to it only inboxes someone waits on.
 */
export interface MessageWaiters {
  /**
   * Resolves with the id of the next message received by the inbox, or undefined when `signal`
   * aborts first. Register before looking for what is there already, so nothing falls between.
   */
  next(organizationId: string, inboxId: string, signal: AbortSignal): Promise<string | undefined>;
}

const [MESSAGE_RECEIVED] = SDK_EVENT_TYPES;

type Resolve = (messageId: string | undefined) => void;

const keyOf = (organizationId: string, inboxId: string) => `${organizationId}\u0000${inboxId}`;

/** The received message's id of a stored `message.received` payload (the webhook body). */
function messageIdOf(event: FeedEvent): string | undefined {
  try {
    const body = JSON.parse(event.payload) as { message?: { message_id?: unknown } };
    return typeof body.message?.message_id === 'string' ? body.message.message_id : undefined;
  } catch {
    return undefined;
  }
}

/** `registry`: where `inbox_mcp_waiting_calls` is counted (the calls waiting now, every inbox). */
export function createMessageWaiters(feed: EventFeed, registry?: Registry): MessageWaiters {
  const waiting = new Map<string, Set<Resolve>>();
  let consuming: Promise<unknown> | undefined;
  if (registry)
    new Gauge({
      name: 'inbox_mcp_waiting_calls',
      help: 'MCP wait_for_message calls waiting for a message',
      registers: [registry],
      collect() {
        let calls = 0;
        for (const set of waiting.values()) calls += set.size;
        this.set(calls);
      },
    });

  const consumer = {
    wants: (s: FeedEventSummary) =>
      s.eventType === MESSAGE_RECEIVED && s.inboxId !== null && waiting.has(keyOf(s.organizationId, s.inboxId)),
    deliver(events: readonly FeedEvent[]) {
      for (const event of events) {
        if (event.inboxId === null) continue;
        const key = keyOf(event.organizationId, event.inboxId);
        const resolvers = waiting.get(key);
        const messageId = messageIdOf(event);
        if (!resolvers || messageId === undefined) continue;
        waiting.delete(key);
        for (const resolve of resolvers) resolve(messageId);
      }
    },
  };

  return {
    async next(organizationId, inboxId, signal) {
      if (signal.aborted) return undefined;
      const key = keyOf(organizationId, inboxId);
      let resolve!: Resolve;
      const arrived = new Promise<string | undefined>((r) => (resolve = r));
      const done: Resolve = (id) => {
        signal.removeEventListener('abort', onAbort);
        resolve(id);
      };
      const onAbort = () => {
        const set = waiting.get(key);
        set?.delete(done);
        if (set && !set.size) waiting.delete(key);
        done(undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const set = waiting.get(key) ?? new Set<Resolve>();
      set.add(done);
      waiting.set(key, set);
      consuming ??= feed.consume(consumer).catch((err: unknown) => {
        consuming = undefined;
        throw err;
      });
      await consuming;
      return arrived;
    },
  };
}
