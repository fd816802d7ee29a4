import { NOTIFY_PAYLOAD_LIMIT, type Database } from '../../platform/db/database.js';
import type { InboxDatabase } from '../schema/database.js';
import { findEventPayloads, type StoredEvent } from '../events/event.repository.js';
import type { PublishEvents } from '../events/event.service.js';

/**
 * The real-time feed of committed events, across every process on the database (decision 0015).
 *
 * Publishing happens inside the transaction that writes the events (`events/event.service.ts`
 * calls `publish`): one signal per ≤ 7,900 bytes of event summaries (id, organization, pod, inbox,
 * type; never the payload, which may be a megabyte) through `Database.notifyIn`. On PostgreSQL that
 * is a NOTIFY in the writer's transaction: delivered to every listening process at commit, in
 * commit order, exactly once per listening connection, and never for a rolled-back transaction or
 * savepoint. On SQLite (one process) the signal is given once the writer's transaction has ended.
 *
 * A listening process keeps the summaries its subscribers may want, reads those events' payloads
 * from the events table (the very rows webhooks deliver), and hands them on in the order of the
 * signals, skipping ids that are not there (rolled back on SQLite).
 */
export interface FeedEventSummary {
  readonly eventId: string;
  readonly organizationId: string;
  readonly podId: string | null;
  readonly inboxId: string | null;
  readonly eventType: string;
}

export interface FeedEvent extends FeedEventSummary {
  /** The stored JSON body, as webhooks deliver it. */
  readonly payload: string;
}

export interface FeedConsumer {
  /** Whether some subscriber of this process may want the event (else its payload is not read). */
  wants(summary: FeedEventSummary): boolean;
  deliver(events: readonly FeedEvent[]): void;
}

export interface EventFeed {
  readonly publish: PublishEvents;
  /**
   * Hands committed events to `consumer` (the WebSocket server, the MCP door's waiters); the first
   * consumer starts the listening. Resolves to the function that removes the consumer again.
   */
  consume(consumer: FeedConsumer): Promise<() => void>;
  close(): Promise<void>;
}

export const TOPIC = 'inbox_events';

type Row = [eventId: string, organizationId: string, podId: string | null, inboxId: string | null, eventType: string];

/** Summaries packed into signals of at most NOTIFY_PAYLOAD_LIMIT bytes each. */
export function packSummaries(events: readonly FeedEventSummary[]): string[] {
  const chunks: string[] = [];
  let rows: string[] = [];
  let bytes = 2;
  for (const e of events) {
    const row = JSON.stringify([e.eventId, e.organizationId, e.podId, e.inboxId, e.eventType] satisfies Row);
    const size = Buffer.byteLength(row) + 1;
    if (size + 2 > NOTIFY_PAYLOAD_LIMIT) throw new Error(`event summary of ${size} bytes does not fit a signal`);
    if (bytes + size > NOTIFY_PAYLOAD_LIMIT) {
      chunks.push(`[${rows.join(',')}]`);
      rows = [];
      bytes = 2;
    }
    rows.push(row);
    bytes += size;
  }
  if (rows.length) chunks.push(`[${rows.join(',')}]`);
  return chunks;
}

function unpack(payload: string): FeedEventSummary[] {
  const rows = JSON.parse(payload) as Row[];
  return rows.map(([eventId, organizationId, podId, inboxId, eventType]) => ({
    eventId,
    organizationId,
    podId,
    inboxId,
    eventType,
  }));
}

export function createEventFeed(
  database: Pick<Database<InboxDatabase>, 'db' | 'notifyIn' | 'listen'>,
  log: { warn(o: object, m: string): void; error(o: object, m: string): void },
): EventFeed {
  let stop: (() => Promise<void>) | undefined;
  let listening: Promise<void> | undefined;
  let closed = false;
  const consumers = new Set<FeedConsumer>();
  // Reads start at once, in parallel; deliveries follow the order of the signals.
  let chain: Promise<void> = Promise.resolve();

  const publish: PublishEvents = async (trx, events: readonly StoredEvent[]) => {
    for (const chunk of packSummaries(events)) await database.notifyIn(trx, TOPIC, chunk);
  };

  function onSignal(payload: string | undefined): void {
    if (closed) return;
    if (payload === undefined) {
      log.warn(
        {},
        'realtime: the event feed reconnected; events committed meanwhile were not pushed to WebSocket or MCP clients (webhooks still deliver them)',
      );
      return;
    }
    if (!payload || !consumers.size) return;
    let wanted: FeedEventSummary[];
    try {
      wanted = unpack(payload).filter((s) => [...consumers].some((c) => c.wants(s)));
    } catch (err) {
      log.error({ err }, 'realtime: unreadable event feed signal');
      return;
    }
    if (!wanted.length) return;
    const read = findEventPayloads(
      database.db,
      wanted.map((s) => s.eventId),
    );
    read.catch(() => undefined); // awaited in turn below; handled there
    chain = chain.then(async () => {
      try {
        const payloads = await read;
        const events = wanted.flatMap((s) => {
          const stored = payloads.get(s.eventId);
          return stored === undefined ? [] : [{ ...s, payload: stored }];
        });
        if (!events.length || closed) return;
        for (const consumer of consumers) {
          const mine = consumers.size === 1 ? events : events.filter((e) => consumer.wants(e));
          if (!mine.length) continue;
          try {
            consumer.deliver(mine);
          } catch (err) {
            log.error({ err }, 'realtime: a consumer of the event feed failed');
          }
        }
      } catch (err) {
        log.error({ err }, 'realtime: reading events for real-time clients failed');
      }
    });
  }

  return {
    publish,
    async consume(consumer) {
      if (closed) throw new Error('the event feed is closed');
      consumers.add(consumer);
      listening ??= database.listen(TOPIC, onSignal).then((unlisten) => {
        stop = unlisten;
      });
      try {
        await listening;
      } catch (err) {
        consumers.delete(consumer);
        listening = undefined;
        throw err;
      }
      return () => void consumers.delete(consumer);
    },
    async close() {
      closed = true;
      await stop?.();
      await chain;
    },
  };
}
