import { bearerKeyOf, CONSOLE_COOKIE, cookieOf } from '../http/auth.js';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Kysely } from 'kysely';
import { Counter, Gauge, type Registry } from 'prom-client';
import * as wsLibrary from 'ws';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import type { AppErrorKind } from '../../platform/errors/app-error.js';
import { nulPath } from '../../platform/http/nul.js';
import type { RateLimiter } from '../../platform/http/rate-limit.js';
import { existingKeyIds } from '../api-keys/api-key.repository.js';
import { type KeyOwner, holds } from '../core/scope.js';
import type { ApiKeyService } from '../api-keys/api-key.service.js';
import type { InboxDatabase } from '../schema/database.js';
import { ERROR_BY_KIND } from '../http/error-envelope.js';
import type { EventFeed, FeedEvent, FeedEventSummary } from './event-feed.js';
import {
  checkSubscription,
  FrameError,
  parseClientFrame,
  receives,
  subscribedFrame,
  type Subscription,
} from './subscription.service.js';

/**
 * Real-time events over WebSocket on the API's own port: `GET /v0` with `Upgrade: websocket`, as
 * the SDK's `client.websockets.connect()` opens it (`?api_key=…` or `Authorization: Bearer …`).
 * A protocol adapter, as `smtp.server.ts` is for SMTP: authentication and limits at the upgrade
 * (refusals are HTTP answers in the spec's error body), then per connection `subscribe` frames
 * answered by `subscribed` (or an `error` frame: the connection stays), and the events of the
 * feed that the key may see and the subscription asks for, as the exact bytes webhooks deliver.
 *
 * Every frame is framed once, however many clients receive it: an event's bytes go to each of its
 * clients' sockets as one prepared buffer (`textFrame`), one socket write per client.
 *
 * Connections are cheap and bounded: one heartbeat timer for all (ping, the idle check, and one
 * query for the keys of open connections that no longer exist),
 * a send buffer of at most `maxBufferedBytes` per client (a client that does not read is closed
 * with 1008 and its socket destroyed shortly after, never buffered without limit), connection
 * limits per process and per key, and on close a 1001 to every client.
 */
export interface RealtimeSettings {
  readonly maxConnections: number;
  readonly maxConnectionsPerKey: number;
  readonly pingIntervalMs: number;
  readonly idleTimeoutMs: number;
  readonly maxBufferedBytes: number;
}

export interface RealtimeDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly apiKeys: Pick<ApiKeyService, 'authenticate'>;
  /** The web console's sessions: a browser cannot set an Authorization header on a WebSocket. */
  readonly sessions?: { find(token: string): Promise<{ owner: KeyOwner } | undefined> };
  readonly limiter: RateLimiter;
  readonly feed: EventFeed;
  readonly log: { warn(o: object, m: string): void; error(o: object, m: string): void };
  readonly registry?: Registry;
}

export interface RealtimeStats {
  readonly connections: number;
  readonly subscribed: number;
  /** Connections ended by the server, by reason. */
  readonly closed: Readonly<Record<CloseReason, number>>;
}

export interface RealtimeServer {
  stats(): RealtimeStats;
  /** Refuses new upgrades and closes every connection with 1001 (destroyed after a grace period). */
  close(): Promise<void>;
  /**
   * Ends, with 1008, the connections of a key that was deleted or whose permissions changed: they
   * reconnect and authenticate anew. Keys deleted without this signal go at the next heartbeat.
   */
  dropKey(apiKeyId: string): void;
}

type CloseReason = 'slow' | 'idle' | 'shutdown' | 'flood' | 'key';

/** Close codes (RFC 6455, section 7.4.1). */
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_POLICY = 1008;
/** A client frame larger than this is a protocol error (ws closes with 1009). */
const MAX_FRAME_BYTES = 64 * 1024;
/** Frames of one client waiting for their answer; beyond, the client is flooding. */
const MAX_PENDING_FRAMES = 32;
/** Time a closing client has to answer the close frame before its socket is destroyed. */
const CLOSE_GRACE_MS = 1_000;

interface Client {
  readonly ws: WebSocket;
  /** The connection's socket, as handed to ws at the upgrade: prepared frames are written to it. */
  readonly socket: Duplex;
  readonly owner: KeyOwner;
  subscription: Subscription | null;
  lastSeen: number;
  pending: number;
  chain: Promise<void>;
}

const STATUS_TEXT: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};

/** `ws`'s own framing: its Sender's public static `frame` (exported by ws, not declared by @types/ws). */
const frameOf = (
  wsLibrary as unknown as {
    Sender: {
      frame(
        data: Buffer,
        options: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean },
      ): Buffer[];
    };
  }
).Sender.frame;

/**
 * A server-to-client text frame (unmasked, final, uncompressed) as the bytes on the wire, framed
 * once and written as they are to every client that receives it. Writing it to the socket puts
 * exactly what `ws.send(text)` would: this server never compresses (`perMessageDeflate: false`)
 * nor sends Blobs, so ws's Sender never queues and writes each of its frames (pings, close) whole
 * at the moment it is asked, between ours; and what waits in the socket counts in
 * `ws.bufferedAmount` all the same.
 */
export function textFrame(text: string): Buffer {
  return Buffer.concat(
    frameOf(Buffer.from(text), { fin: true, opcode: 0x01, mask: false, readOnly: false, rsv1: false }),
  );
}

/** An HTTP answer to an upgrade request that is refused, in the spec's error body. */
function refuse(
  socket: Duplex,
  kind: AppErrorKind,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const { status, type } = ERROR_BY_KIND[kind];
  const body = JSON.stringify({ error: { type, message, details: { code } } });
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
    );
  }
  setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
}

/** Whether an upgrade comes from a page of this server (its Origin names the host it connects to). */
function sameOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (!origin || !request.headers.host) return false;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/** The key of an upgrade request: `?api_key=` (what the SDK sends when given one) or the Bearer header. */
function keyOf(request: IncomingMessage, url: URL): { key?: string; problem?: string } {
  const query = url.searchParams.get('api_key');
  if (query !== null) return query ? { key: query } : { problem: 'api_key is empty.' };
  return bearerKeyOf(request.headers.authorization);
}

export function attachRealtime(server: Server, deps: RealtimeDeps, settings: RealtimeSettings): RealtimeServer {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const clients = new Set<Client>();
  const byOrganization = new Map<string, Set<Client>>();
  const perKey = new Map<string, number>();
  const closed: Record<CloseReason, number> = { slow: 0, idle: 0, shutdown: 0, flood: 0, key: 0 };
  let closing = false;
  let subscribed = 0;

  const metrics = deps.registry
    ? {
        connections: new Gauge({
          name: 'inbox_websocket_connections',
          help: 'open WebSocket connections (real-time events)',
          registers: [deps.registry],
          collect() {
            this.set(clients.size);
          },
        }),
        frames: new Counter({
          name: 'inbox_websocket_event_frames_total',
          help: 'event frames sent to WebSocket clients',
          registers: [deps.registry],
        }),
        disconnects: new Counter({
          name: 'inbox_websocket_disconnects_total',
          help: 'WebSocket connections the server ended, by reason (slow, idle, flood, shutdown, key)',
          labelNames: ['reason'],
          registers: [deps.registry],
        }),
      }
    : undefined;

  function end(client: Client, reason: CloseReason, code: number, text: string): void {
    closed[reason]++;
    metrics?.disconnects.inc({ reason });
    if (client.ws.readyState === WebSocket.OPEN) client.ws.close(code, text);
    // A client that does not read never sees the close frame: its socket goes after the grace.
    setTimeout(() => client.ws.terminate(), reason === 'idle' ? 0 : CLOSE_GRACE_MS).unref();
  }

  /** Writes a frame of `textFrame`; whether it was written (not when closing, nor to a client whose buffer is full: that one is ended). */
  function send(client: Client, frame: Buffer): boolean {
    const { ws } = client;
    if (ws.readyState !== WebSocket.OPEN) return false;
    if (ws.bufferedAmount > settings.maxBufferedBytes) {
      end(client, 'slow', CLOSE_POLICY, 'send buffer full: the client does not read its events');
      return false;
    }
    client.socket.write(frame);
    return true;
  }

  function errorFrame(client: Client, name: string, message: string): void {
    send(client, textFrame(JSON.stringify({ type: 'error', name, message })));
  }

  async function onFrame(client: Client, data: RawData, isBinary: boolean): Promise<void> {
    try {
      if (isBinary) throw new FrameError('ValidationError', 'Frames are JSON text, not binary.');
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString('utf8')
        : Buffer.from(data as ArrayBuffer).toString('utf8');
      const frame = parseClientFrame(text);
      // As in a request body: the ids reach SQL, where PostgreSQL fails on a NUL that SQLite compares.
      if (nulPath(frame))
        throw new FrameError('ValidationError', 'The frame contains a NUL character (U+0000), which no field accepts.');
      const subscription = await checkSubscription(deps.db, client.owner, frame);
      if (!client.subscription) subscribed++;
      // A new subscribe frame replaces the filters in force.
      client.subscription = subscription;
      send(client, textFrame(subscribedFrame(subscription)));
    } catch (err) {
      if (err instanceof FrameError) return errorFrame(client, err.errorName, err.message);
      deps.log.error({ err }, 'realtime: handling a client frame failed');
      errorFrame(client, 'InternalServerError', 'The frame could not be handled; try again.');
    }
  }

  function onConnection(ws: WebSocket, socket: Duplex, owner: KeyOwner): void {
    const client: Client = {
      ws,
      socket,
      owner,
      subscription: null,
      lastSeen: Date.now(),
      pending: 0,
      chain: Promise.resolve(),
    };
    clients.add(client);
    perKey.set(owner.apiKeyId, (perKey.get(owner.apiKeyId) ?? 0) + 1);
    let organization = byOrganization.get(owner.organizationId);
    if (!organization) byOrganization.set(owner.organizationId, (organization = new Set()));
    organization.add(client);
    ws.on('pong', () => (client.lastSeen = Date.now()));
    ws.on('message', (data, isBinary) => {
      client.lastSeen = Date.now();
      if (client.pending >= MAX_PENDING_FRAMES)
        return end(client, 'flood', CLOSE_POLICY, 'too many frames awaiting an answer');
      client.pending++;
      // One frame at a time per client: acknowledgements come in the order of the frames.
      client.chain = client.chain.then(() => onFrame(client, data, isBinary)).finally(() => client.pending--);
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      clients.delete(client);
      if (client.subscription) subscribed--;
      const n = (perKey.get(owner.apiKeyId) ?? 1) - 1;
      if (n > 0) perKey.set(owner.apiKeyId, n);
      else perKey.delete(owner.apiKeyId);
      organization.delete(client);
      if (!organization.size) byOrganization.delete(owner.organizationId);
    });
  }

  async function onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== '/v0' && url.pathname !== '/v0/')
      return refuse(
        socket,
        'not_found',
        'ROUTE_NOT_FOUND',
        `No WebSocket endpoint at ${url.pathname}; connect to /v0.`,
      );
    if (closing) return refuse(socket, 'unavailable', 'SHUTTING_DOWN', 'The server is shutting down; connect again.');
    const { key, problem } = keyOf(request, url);
    if (problem) return refuse(socket, 'unauthenticated', 'MALFORMED_API_KEY', problem);
    const session = key === undefined ? cookieOf(request.headers.cookie, CONSOLE_COOKIE) : undefined;
    let owner: KeyOwner | undefined;
    if (session !== undefined && deps.sessions) {
      // The web console: its session cookie, from its own page only. A browser always names the
      // page's origin on a WebSocket handshake, and another site's page must not ride the cookie.
      if (!sameOrigin(request))
        return refuse(
          socket,
          'forbidden',
          'CROSS_ORIGIN',
          'A console session connects only from the console page of this server.',
        );
      owner = (await deps.sessions.find(session))?.owner;
      if (!owner)
        return refuse(socket, 'unauthenticated', 'SESSION_EXPIRED', 'The console session has ended: sign in again.');
    } else {
      if (!key)
        return refuse(
          socket,
          'unauthenticated',
          'MISSING_API_KEY',
          'Missing API key: send ?api_key=<key> or Authorization: Bearer <key>.',
        );
      owner = await deps.apiKeys.authenticate(key);
      if (!owner) return refuse(socket, 'unauthenticated', 'INVALID_API_KEY', 'Invalid API key.');
    }
    const rate = await deps.limiter.hit(owner.apiKeyId);
    if (!rate.allowed)
      return refuse(
        socket,
        'rate_limited',
        'RATE_LIMIT_EXCEEDED',
        `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.resetSeconds} s.`,
        { 'Retry-After': String(rate.resetSeconds) },
      );
    // Events carry messages: a key that may not read messages may not subscribe to them.
    if (!holds(owner, 'messageRead'))
      return refuse(socket, 'forbidden', 'PERMISSION_DENIED', 'This API key lacks the messageRead permission.');
    if (closing) return refuse(socket, 'unavailable', 'SHUTTING_DOWN', 'The server is shutting down; connect again.');
    if (clients.size >= settings.maxConnections)
      return refuse(
        socket,
        'unavailable',
        'TOO_MANY_CONNECTIONS',
        `This server holds its maximum of ${settings.maxConnections} WebSocket connections; connect again later.`,
      );
    if ((perKey.get(owner.apiKeyId) ?? 0) >= settings.maxConnectionsPerKey) {
      return refuse(
        socket,
        'rate_limited',
        'TOO_MANY_CONNECTIONS',
        `This API key holds its maximum of ${settings.maxConnectionsPerKey} WebSocket connections on this server; close one first.`,
      );
    }
    if (socket.destroyed) return;
    wss.handleUpgrade(request, socket, head, (ws) => {
      // Checked again: other upgrades may have completed while this one was authenticated.
      if (
        closing ||
        clients.size >= settings.maxConnections ||
        (perKey.get(owner.apiKeyId) ?? 0) >= settings.maxConnectionsPerKey
      ) {
        ws.close(closing ? CLOSE_GOING_AWAY : 1013, closing ? 'server shutting down' : 'too many connections');
        return;
      }
      onConnection(ws, socket, owner);
    });
  }

  const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(request, socket, head).catch((err: unknown) => {
      deps.log.error({ err }, 'realtime: WebSocket upgrade failed');
      refuse(socket, 'internal', 'INTERNAL', 'Internal server error.');
    });
  };
  server.on('upgrade', upgrade);

  let sweeping = false;
  /**
   * Drops the connections of keys deleted without a signal: with their inbox, pod or organization
   * (cascades), by an agent sign-up's key rotation, or while the signal's listener was away.
   * One query per heartbeat for all connected keys (decision 0015).
   */
  async function sweepKeys(): Promise<void> {
    if (sweeping || closing || !perKey.size) return;
    sweeping = true;
    try {
      const connected = [...perKey.keys()];
      const existing = await existingKeyIds(deps.db, connected);
      for (const apiKeyId of connected) if (!existing.has(apiKeyId)) dropKey(apiKeyId);
    } catch (err) {
      if (closing) return;
      deps.log.warn(
        { err },
        'realtime: checking the keys of open connections failed; trying again at the next heartbeat',
      );
    } finally {
      sweeping = false;
    }
  }

  const heartbeat = setInterval(() => {
    const now = Date.now();
    for (const client of clients) {
      if (now - client.lastSeen > settings.idleTimeoutMs) end(client, 'idle', CLOSE_GOING_AWAY, 'idle timeout');
      else if (client.ws.readyState === WebSocket.OPEN) client.ws.ping();
    }
    void sweepKeys();
  }, settings.pingIntervalMs);
  heartbeat.unref();

  function dropKey(apiKeyId: string): void {
    for (const client of clients)
      if (client.owner.apiKeyId === apiKeyId && client.ws.readyState === WebSocket.OPEN)
        end(client, 'key', CLOSE_POLICY, 'API key deleted or changed');
  }

  const consumer = {
    wants(summary: FeedEventSummary): boolean {
      const organization = byOrganization.get(summary.organizationId);
      if (!organization) return false;
      // The same test as deliver's: an event no client receives costs no payload read.
      for (const client of organization)
        if (client.subscription && receives(client.owner, client.subscription, summary)) return true;
      return false;
    },
    deliver(events: readonly FeedEvent[]): void {
      for (const event of events) {
        const organization = byOrganization.get(event.organizationId);
        if (!organization) continue;
        // Framed once for every client that receives it.
        let frame: Buffer | undefined;
        let sent = 0;
        for (const client of organization) {
          if (!client.subscription || !receives(client.owner, client.subscription, event)) continue;
          frame ??= textFrame(event.payload);
          if (send(client, frame)) sent++;
        }
        if (sent) metrics?.frames.inc(sent);
      }
    },
  };
  const consuming = deps.feed
    .consume(consumer)
    .catch((err: unknown) =>
      deps.log.error({ err }, 'realtime: listening to the event feed failed; WebSocket clients receive no events'),
    );

  return {
    stats: () => ({ connections: clients.size, subscribed, closed: { ...closed } }),
    async close() {
      if (closing) return;
      closing = true;
      clearInterval(heartbeat);
      await consuming;
      const all = [...clients];
      const gone = all.map(
        (client) =>
          new Promise<void>((resolve) =>
            client.ws.readyState === WebSocket.CLOSED ? resolve() : client.ws.once('close', () => resolve()),
          ),
      );
      for (const client of all) end(client, 'shutdown', CLOSE_GOING_AWAY, 'server shutting down');
      await Promise.all(gone);
      server.off('upgrade', upgrade);
      wss.close();
    },
    dropKey,
  };
}
