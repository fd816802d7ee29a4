import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NOTIFY_PAYLOAD_LIMIT, type Database } from '../../platform/db/database.js';
import { anyMatch } from './topic-selector.js';

/**
 * The Mercure hub built into the property service (decision 0038): subscribers hold a
 * server-sent-events stream each; every update goes through the database's signal (PostgreSQL
 * NOTIFY on every instance, in commit order; SQLite: this process), and each process hands the
 * updates it hears to its own subscribers and keeps the last ones for `Last-Event-ID`. One path:
 * an update published here reaches this process's subscribers the same way as one from another
 * instance, so every instance has the same history in the same order.
 */

export interface MercureUpdate {
  /** Unique across instances (`urn:uuid:…`), the SSE `id`. */
  readonly id: string;
  readonly topics: readonly string[];
  readonly data: string;
  /** Private updates reach only subscribers whose token's `mercure.subscribe` matches one of the topics. */
  readonly private: boolean;
  readonly type?: string;
  readonly retry?: number;
}

export interface Subscriber {
  /** The topic selectors of the subscription (`topic` query parameters). */
  readonly selectors: readonly string[];
  /** The token's `mercure.subscribe` selectors ([] for an anonymous subscriber: public updates only). */
  readonly authorized: readonly string[];
}

export interface MercureHubOptions {
  readonly database: Pick<Database<unknown>, 'db' | 'notifyIn' | 'listen'>;
  readonly log: { warn(obj: object, msg: string): void };
  /** Updates kept for reconnection with Last-Event-ID. */
  readonly historySize?: number;
  readonly heartbeatMs?: number;
  /** Bytes waiting for one subscriber beyond which it is disconnected (a client that does not read). */
  readonly maxBufferedBytes?: number;
}

export interface MercureHub {
  start(): Promise<void>;
  /** Publishes an update to every instance; resolves to its id once the signal is sent. */
  publish(update: Omit<MercureUpdate, 'id'> & { readonly id?: string }): Promise<string>;
  /** Streams to `res` (headers already sent): the missed updates after `lastEventId`, then live ones. */
  attach(res: ServerResponse, subscriber: Subscriber, lastEventId: string | undefined): void;
  /** The id of the most recent update this process knows (`earliest` before the first). */
  lastEventId(): string;
  readonly subscriberCount: () => number;
  close(): Promise<void>;
}

export const MERCURE_SIGNAL = 'property_mercure';

export function encodeEvent(update: MercureUpdate): string {
  let out = `id: ${update.id}\n`;
  if (update.type) out += `event: ${update.type}\n`;
  if (update.retry !== undefined) out += `retry: ${update.retry}\n`;
  for (const line of update.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

export function canReceive(subscriber: Subscriber, update: MercureUpdate): boolean {
  if (!anyMatch(subscriber.selectors, update.topics)) return false;
  return !update.private || anyMatch(subscriber.authorized, update.topics);
}

export function createMercureHub(options: MercureHubOptions): MercureHub {
  const historySize = options.historySize ?? 1000;
  const maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
  const history: MercureUpdate[] = [];
  const subscribers = new Map<ServerResponse, Subscriber>();
  let stopListening: (() => Promise<void>) | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  const send = (res: ServerResponse, text: string) => {
    if (res.writableEnded || res.destroyed) return;
    res.write(text);
    if (res.writableLength > maxBuffered) res.destroy();
  };

  const dispatch = (update: MercureUpdate) => {
    history.push(update);
    if (history.length > historySize) history.splice(0, history.length - historySize);
    let encoded: string | undefined;
    for (const [res, subscriber] of subscribers) {
      if (!canReceive(subscriber, update)) continue;
      encoded ??= encodeEvent(update);
      send(res, encoded);
    }
  };

  const onSignal = (payload?: string) => {
    if (!payload) return; // a reconnect of the listener: updates sent meanwhile are lost to this process
    try {
      const update = JSON.parse(payload) as MercureUpdate;
      if (typeof update.id === 'string' && Array.isArray(update.topics) && typeof update.data === 'string')
        dispatch(update);
    } catch (err) {
      options.log.warn({ err }, 'mercure: unreadable update signal ignored');
    }
  };

  // At most one signal statement in flight per process: the updates published while it runs go
  // out together in the next one, in their order. On PostgreSQL each NOTIFY statement is a commit
  // of its own, and every commit that notifies takes the server's one notify lock until it is
  // flushed: one statement per turn of the event loop (the first design) meant hundreds of such
  // commits a second under 50 writing connections, queued on that lock and holding pooled
  // connections the writes wait for (decision 0047, "Write cost").
  let queued: { payload: string; resolve: () => void; reject: (err: unknown) => void }[] = [];
  let sending = false;
  const flush = () => {
    sending = true;
    // One turn first: the updates of the writes that committed in the same turn join this one.
    setImmediate(() => {
      const batch = queued;
      queued = [];
      options.database
        .notifyIn(
          options.database.db as never,
          MERCURE_SIGNAL,
          batch.map((q) => q.payload),
        )
        .then(
          () => batch.forEach((q) => q.resolve()),
          (err: unknown) => batch.forEach((q) => q.reject(err)),
        )
        .finally(() => {
          sending = false;
          if (queued.length) flush();
        });
    });
  };
  const signal = (payload: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      queued.push({ payload, resolve, reject });
      if (!sending) flush();
    });

  return {
    async start() {
      stopListening ??= await options.database.listen(MERCURE_SIGNAL, onSignal);
      heartbeat ??= setInterval(() => {
        for (const res of subscribers.keys()) send(res, ':\n\n');
      }, options.heartbeatMs ?? 15_000);
      heartbeat.unref();
    },
    async publish(input) {
      const update: MercureUpdate = { ...input, id: input.id ?? `urn:uuid:${randomUUID()}` };
      const payload = JSON.stringify(update);
      if (Buffer.byteLength(payload) > NOTIFY_PAYLOAD_LIMIT)
        throw new RangeError(`a Mercure update of ${Buffer.byteLength(payload)} bytes does not fit a database signal`);
      await signal(payload);
      return update.id;
    },
    attach(res, subscriber, lastEventId) {
      subscribers.set(res, subscriber);
      const socket = res.socket;
      res.on('close', () => {
        subscribers.delete(res);
        // A client that went away may leave a half-closed socket that shutdown would wait for.
        socket?.destroy();
      });
      if (lastEventId !== undefined) {
        const from = lastEventId === 'earliest' ? 0 : history.findIndex((u) => u.id === lastEventId) + 1;
        // An id this process does not know (too old, or never sent): nothing to replay.
        if (from > 0 || lastEventId === 'earliest')
          for (const update of history.slice(from)) if (canReceive(subscriber, update)) send(res, encodeEvent(update));
      }
    },
    lastEventId: () => history.at(-1)?.id ?? 'earliest',
    subscriberCount: () => subscribers.size,
    async close() {
      if (heartbeat) clearInterval(heartbeat);
      heartbeat = undefined;
      // Closed outright: a stream has no natural end, and shutdown must not wait for a client to read.
      for (const res of subscribers.keys()) res.destroy();
      subscribers.clear();
      await stopListening?.();
      stopListening = undefined;
    },
  };
}
