import type { AgentMail } from 'agentmail';
import nodemailer from 'nodemailer';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { createHook, storedPayload } from '../support/inbox-webhooks.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { eventsOf, organization, secretOf } from './fixtures.js';
import { simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/**
 * Real-time events over WebSocket, through the official SDK's `client.websockets.connect()`
 * (agentmail 0.5.27) and, where the SDK cannot say it (no key, raw bytes, a client that stops
 * reading), the `ws` client it is built on.
 */

/** A frame as the SDK hands it over (its camelCase names). */
type Frame = Record<string, unknown> & { type: string; eventType?: string; eventId?: string };
type SdkSocket = Awaited<ReturnType<ReturnType<InboxTestServer['client']>['websockets']['connect']>>;

/** An SDK socket and every frame it received, with waits that end on a frame, not on a clock. */
interface Listener {
  readonly socket: SdkSocket;
  readonly frames: Frame[];
  readonly closes: { code: number }[];
  readonly errors: Error[];
  next(predicate: (f: Frame) => boolean, timeoutMs?: number): Promise<Frame>;
  subscribe(request?: Omit<AgentMail.websockets.Subscribe, 'type'>): Promise<Frame>;
}

const open: { close(): void }[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

function waitUntil<T>(check: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = () => {
      const value = check();
      if (value !== undefined) return resolve(value);
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(poll, 5);
    };
    poll();
  });
}

async function listen(server: InboxTestServer, key: string, args: { apiKey?: string } = {}): Promise<Listener> {
  const socket = await server.client(key).websockets.connect({ reconnectAttempts: 1, ...args });
  open.push(socket);
  const frames: Frame[] = [];
  const closes: { code: number }[] = [];
  const errors: Error[] = [];
  socket.on('message', (m) => frames.push(m as Frame));
  socket.on('close', (e) => closes.push({ code: (e as { code: number }).code }));
  socket.on('error', (e) => errors.push(e));
  await socket.waitForOpen();
  let seen = 0;
  const listener: Listener = {
    socket,
    frames,
    closes,
    errors,
    async next(predicate, timeoutMs) {
      // Frames in order: each call looks past the frames earlier calls consumed.
      const found = await waitUntil(
        () => {
          const i = frames.findIndex((f, idx) => idx >= seen && predicate(f));
          return i < 0 ? undefined : i;
        },
        'a frame',
        timeoutMs,
      );
      seen = found + 1;
      return frames[found] as Frame;
    },
    async subscribe(request = {}) {
      socket.sendSubscribe({ type: 'subscribe', ...request });
      return listener.next((f) => f.type === 'subscribed' || f.type === 'error');
    },
  };
  return listener;
}

/** A raw client (the `ws` package the SDK uses) with the bytes of each text frame. */
async function rawClient(
  server: InboxTestServer,
  key: string,
  options: { autoPong?: boolean } = {},
): Promise<{ ws: WebSocket; texts: string[] }> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v0?api_key=${key}`, options);
  open.push({ close: () => ws.terminate() });
  const texts: string[] = [];
  ws.on('message', (data, binary) => {
    if (!binary) texts.push(data.toString());
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, texts };
}

/** The HTTP answer to an upgrade that is refused. */
function refused(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: { error: { type: string; message: string; details: { code: string } } } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => reject(new Error('the upgrade was accepted')));
    ws.on('error', () => undefined);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
    });
  });
}

async function smtpSend(server: InboxTestServer, from: string, to: string, subject: string): Promise<void> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: smtpPort(server),
    secure: false,
    ignoreTLS: true,
    name: 'mta.sender.example',
  });
  try {
    await transport.sendMail({ envelope: { from, to: [to] }, raw: simpleMessage({ from, to, subject }) });
  } finally {
    transport.close();
  }
}

/** The inbox an event frame is about (message, send, delivery, bounce, reject). */
const inboxOf = (f: Frame): string | undefined => {
  const body = f as unknown as Record<string, { inboxId?: string } | undefined>;
  return (
    body.message?.inboxId ??
    body.send?.inboxId ??
    body.delivery?.inboxId ??
    body.bounce?.inboxId ??
    body.reject?.inboxId
  );
};

const isEvent = (type: string, inboxId?: string) => (f: Frame) =>
  f.type === 'event' &&
  f.eventType === type &&
  (inboxId === undefined ||
    (f as { message?: { inboxId?: string }; send?: { inboxId?: string } }).message?.inboxId === inboxId ||
    (f as { send?: { inboxId?: string } }).send?.inboxId === inboxId);

describe.each(dialects)('%s: real-time events over WebSocket', (dialect) => {
  it('an API send and an inbound SMTP mail arrive as event frames with the event_id and payload of the stored event and of the webhook delivery', async () => {
    const server = await startInboxServer({ dialect });
    const receiver = await startWebhookReceiver();
    try {
      const org = await organization(server, ['ws-sender', 'ws-recipient']);
      const [sender, recipient] = org.inboxes as [string, string];
      await createHook(
        server,
        receiver,
        { key: org.key, organizationId: org.organizationId, podId: '', inboxId: recipient },
        '/hook',
        { event_types: ['message.received'] },
      );
      const sdk = await listen(server, org.key);
      expect(await sdk.subscribe()).toEqual({ type: 'subscribed' });
      const raw = await rawClient(server, org.key);
      raw.ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
      await waitUntil(() => (raw.texts.length ? true : undefined), 'subscribed');
      expect(JSON.parse(raw.texts[0] as string)).toEqual({ type: 'subscribed', event_types: ['message.received'] });

      // By API.
      const sent = await org.client.inboxes.messages.send(sender, {
        to: [recipient],
        subject: 'Over the socket',
        text: 'Hello in real time.',
      });
      const sentFrame = await sdk.next(isEvent('message.sent'));
      const receivedFrame = await sdk.next(isEvent('message.received', recipient));
      const [storedSent] = await eventsOf(server, { type: 'message.sent', inboxId: sender });
      const [storedReceived] = await eventsOf(server, { type: 'message.received', inboxId: recipient });
      expect(sentFrame).toMatchObject({
        eventId: storedSent.event_id,
        send: { inboxId: sender, messageId: sent.messageId },
      });
      expect(receivedFrame).toMatchObject({
        eventId: storedReceived.event_id,
        message: { inboxId: recipient, subject: 'Over the socket' },
        thread: { inboxId: recipient },
      });
      // The raw bytes are the stored payload, the one webhooks deliver.
      await waitUntil(() => (raw.texts.length >= 2 ? true : undefined), 'the raw event frame');
      expect(raw.texts[1]).toBe(await storedPayload(server, storedReceived.event_id));
      await receiver.waitFor(1, 10_000);
      expect(receiver.received[0]?.headers['svix-id']).toBe(storedReceived.event_id);
      expect(receiver.received[0]?.body).toBe(raw.texts[1]);

      // By SMTP.
      await smtpSend(server, 'someone@sender.example', recipient, 'Through the MX');
      const smtpFrame = await sdk.next(
        (f) =>
          isEvent('message.received', recipient)(f) &&
          (f as { message?: { subject?: string } }).message?.subject === 'Through the MX',
      );
      const stored = (await eventsOf(server, { type: 'message.received', inboxId: recipient })).find(
        (e) => e.message.subject === 'Through the MX',
      );
      expect(smtpFrame.eventId).toBe(stored.event_id);
      await waitUntil(() => (raw.texts.length >= 3 ? true : undefined), 'the raw SMTP frame');
      expect(raw.texts[2]).toBe(await storedPayload(server, stored.event_id));
      await receiver.waitFor(2, 10_000);
      expect(receiver.received.map((r) => r.headers['svix-id'])).toContain(stored.event_id);
      expect(server.service.realtime?.stats()).toMatchObject({ connections: 2, subscribed: 2 });
    } finally {
      await receiver.stop();
      await server.close();
    }
  });

  it('subscription filters: event types, inbox ids and pod ids; a new subscribe frame replaces the filters', async () => {
    const server = await startInboxServer({ dialect });
    try {
      const org = await organization(server, ['f-a', 'f-b', 'f-c']);
      const [a, b, c] = org.inboxes as [string, string, string];
      const byInbox = await listen(server, org.key, { apiKey: org.key });
      expect(await byInbox.subscribe({ eventTypes: ['message.received'], inboxIds: [b.toUpperCase()] })).toEqual({
        type: 'subscribed',
        eventTypes: ['message.received'],
        inboxIds: [b],
      });
      const pod = (await org.client.inboxes.get(a)).podId;
      const byPod = await listen(server, org.key);
      expect(await byPod.subscribe({ podIds: [pod], eventTypes: ['message.sent'] })).toEqual({
        type: 'subscribed',
        podIds: [pod],
        eventTypes: ['message.sent'],
      });
      const everything = await listen(server, org.key);
      await everything.subscribe();

      await org.client.inboxes.messages.send(a, { to: [b, c], subject: 'one', text: '1' });
      await org.client.inboxes.messages.send(a, { to: [c], subject: 'two', text: '2' });
      // Frames follow commit order: once the catch-all client has the second send's last event, the filtered ones have theirs.
      await everything.next(
        (f) =>
          isEvent('message.received', c)(f) && (f as { message?: { subject?: string } }).message?.subject === 'two',
      );
      await byPod.next(
        (f) =>
          f.type === 'event' &&
          (f as { send?: { inboxId?: string } }).send?.inboxId === a &&
          byPod.frames.filter((x) => x.type === 'event').length === 2,
      );
      const filtered = byInbox.frames.filter((f) => f.type === 'event');
      expect(filtered.map((f) => [f.eventType, inboxOf(f)])).toEqual([['message.received', b]]);
      expect(byPod.frames.filter((f) => f.type === 'event').map((f) => f.eventType)).toEqual([
        'message.sent',
        'message.sent',
      ]);
      const all = everything.frames.filter((f) => f.type === 'event').map((f) => f.eventType);
      expect(all.filter((t) => t === 'message.received')).toHaveLength(3);
      expect(all.filter((t) => t === 'message.sent')).toHaveLength(2);

      // Replacing the subscription: now only inbox c.
      expect(await byInbox.subscribe({ inboxIds: [c] })).toEqual({ type: 'subscribed', inboxIds: [c] });
      await org.client.inboxes.messages.send(a, { to: [b, c], subject: 'three', text: '3' });
      const next = await byInbox.next((f) => f.type === 'event');
      expect(next).toMatchObject({ eventType: 'message.received', message: { inboxId: c, subject: 'three' } });
    } finally {
      await server.close();
    }
  });

  it('bad frames get an error frame and the connection stays; unknown and foreign ids are refused alike', async () => {
    const server = await startInboxServer({ dialect });
    try {
      const org = await organization(server, ['bad-frames']);
      const other = await organization(server, ['foreign']);
      const sdk = await listen(server, org.key);
      // Bytes the SDK's typed methods cannot produce, written on the SDK's own connection.
      const raw = sdk.socket as unknown as { socket: { send(data: string | Buffer): void } };
      const errorOf = async (send: () => void) => {
        send();
        return sdk.next((f) => f.type === 'error' || f.type === 'subscribed');
      };
      expect(await errorOf(() => raw.socket.send('not json'))).toEqual({
        type: 'error',
        name: 'ValidationError',
        message: 'The frame is not valid JSON.',
      });
      expect(await errorOf(() => raw.socket.send('[1,2]'))).toMatchObject({ type: 'error', name: 'ValidationError' });
      expect(await errorOf(() => raw.socket.send(JSON.stringify({ type: 'unsubscribe' })))).toMatchObject({
        type: 'error',
        name: 'ValidationError',
        message: expect.stringContaining('unknown frame type'),
      });
      expect(
        await errorOf(() => raw.socket.send(JSON.stringify({ type: 'subscribe', eventTypes: ['message.sent'] }))),
      ).toMatchObject({
        type: 'error',
        name: 'ValidationError',
        message: expect.stringContaining('eventTypes: unknown field'),
      });
      expect(await errorOf(() => raw.socket.send(Buffer.from('{"type":"subscribe"}')))).toMatchObject({
        type: 'error',
        name: 'ValidationError',
        message: expect.stringContaining('binary'),
      });
      expect(
        await errorOf(() =>
          sdk.socket.sendSubscribe({ type: 'subscribe', eventTypes: ['message.exploded' as AgentMail.EventType] }),
        ),
      ).toMatchObject({ type: 'error', name: 'ValidationError', message: expect.stringContaining('event_types') });
      // A NUL in an id would reach SQL (PostgreSQL fails on it, SQLite compares it): refused alike.
      for (const field of ['inbox_ids', 'pod_ids'])
        expect(
          await errorOf(() => raw.socket.send(JSON.stringify({ type: 'subscribe', [field]: ['a\u0000b@inbox.test'] }))),
        ).toEqual({
          type: 'error',
          name: 'ValidationError',
          message: 'The frame contains a NUL character (U+0000), which no field accepts.',
        });
      expect(
        await errorOf(() => raw.socket.send(JSON.stringify({ type: 'subscribe', inbox_ids: 'not-a-list' }))),
      ).toMatchObject({ type: 'error', name: 'ValidationError', message: expect.stringContaining('inbox_ids') });
      expect(
        await errorOf(() =>
          raw.socket.send(
            JSON.stringify({ type: 'subscribe', inbox_ids: Array.from({ length: 101 }, (_, i) => `x${i}@inbox.test`) }),
          ),
        ),
      ).toMatchObject({ type: 'error', message: expect.stringContaining('at most 100') });
      const foreign = (await errorOf(() =>
        sdk.socket.sendSubscribe({ type: 'subscribe', inboxIds: [other.inboxes[0] as string] }),
      )) as unknown as { message: string };
      const unknown = (await errorOf(() =>
        sdk.socket.sendSubscribe({ type: 'subscribe', inboxIds: ['nobody@inbox.test'] }),
      )) as unknown as { message: string };
      expect(foreign).toMatchObject({ type: 'error', name: 'NotFoundError' });
      expect(unknown).toMatchObject({ type: 'error', name: 'NotFoundError' });
      expect(foreign.message.replace(other.inboxes[0] as string, 'X')).toBe(
        unknown.message.replace('nobody@inbox.test', 'X'),
      );
      const otherPod = (await other.client.inboxes.get(other.inboxes[0] as string)).podId;
      expect(await errorOf(() => sdk.socket.sendSubscribe({ type: 'subscribe', podIds: [otherPod] }))).toMatchObject({
        type: 'error',
        name: 'NotFoundError',
      });
      // Still connected, and still nothing subscribed until a good frame comes.
      expect(await sdk.subscribe({ inboxIds: org.inboxes })).toEqual({ type: 'subscribed', inboxIds: org.inboxes });
      expect(sdk.closes).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('refuses upgrades without a valid key with the spec error body, and answers 404 off /v0', async () => {
    const server = await startInboxServer({ dialect, env: { INBOX_WS_MAX_CONNECTIONS_PER_KEY: '1' } });
    try {
      const org = await organization(server);
      const base = `${server.url.replace('http', 'ws')}`;
      expect(await refused(`${base}/v0`)).toEqual({
        status: 401,
        body: {
          error: { type: 'authentication_error', message: expect.any(String), details: { code: 'MISSING_API_KEY' } },
        },
      });
      expect(await refused(`${base}/v0?api_key=am_wrong`)).toMatchObject({
        status: 401,
        body: { error: { details: { code: 'INVALID_API_KEY' } } },
      });
      expect(await refused(`${base}/v0`, { authorization: 'Bearer am_wrong' })).toMatchObject({
        status: 401,
        body: { error: { details: { code: 'INVALID_API_KEY' } } },
      });
      expect(await refused(`${base}/v0`, { authorization: 'Basic abc' })).toMatchObject({
        status: 401,
        body: { error: { details: { code: 'MALFORMED_API_KEY' } } },
      });
      expect(await refused(`${base}/v0/inboxes?api_key=${org.key}`)).toMatchObject({
        status: 404,
        body: { error: { type: 'not_found' } },
      });
      // The SDK with a bad key: connect() (which waits for the socket to open) fails with the 401.
      await expect(server.client('am_wrong').websockets.connect({ reconnectAttempts: 1 })).rejects.toMatchObject({
        message: expect.stringContaining('401'),
      });
      // One connection per key here: the second is refused with 429.
      const first = await listen(server, org.key);
      await first.subscribe();
      expect(await refused(`${base}/v0?api_key=${org.key}`)).toMatchObject({
        status: 429,
        body: { error: { type: 'rate_limit_exceeded', details: { code: 'TOO_MANY_CONNECTIONS' } } },
      });
    } finally {
      await server.close();
    }
  });

  it('a key never sees the events of another organization', async () => {
    const server = await startInboxServer({ dialect });
    try {
      const one = await organization(server, ['iso-one', 'iso-one-b']);
      const two = await organization(server, ['iso-two', 'iso-two-b']);
      const l1 = await listen(server, one.key);
      const l2 = await listen(server, two.key);
      await l1.subscribe();
      await l2.subscribe();
      await one.client.inboxes.messages.send(one.inboxes[0] as string, {
        to: [one.inboxes[1] as string],
        subject: 'org one',
        text: 'one',
      });
      await l1.next(isEvent('message.received'));
      await two.client.inboxes.messages.send(two.inboxes[0] as string, {
        to: [two.inboxes[1] as string],
        subject: 'org two',
        text: 'two',
      });
      await l2.next(isEvent('message.received'));
      // In commit order: had org one's events been pushed to org two's client, they came before.
      const inboxesOf = (l: Listener) => l.frames.filter((f) => f.type === 'event').map(inboxOf);
      expect(inboxesOf(l2).length).toBeGreaterThan(0);
      for (const inbox of inboxesOf(l2)) expect(two.inboxes).toContain(inbox);
      for (const inbox of inboxesOf(l1)) expect(one.inboxes).toContain(inbox);
    } finally {
      await server.close();
    }
  });

  it('scoped keys: an inbox key sees only its inbox and may not name another; a key without messageRead may not connect', async () => {
    const server = await startInboxServer({ dialect });
    try {
      const org = await organization(server, ['scope-a', 'scope-b']);
      const [a, b] = org.inboxes as [string, string];
      const created = (await org.client.inboxes.apiKeys.create(a, { name: 'inbox a' })) as unknown as {
        apiKey: string;
      };
      const scoped = await listen(server, created.apiKey);
      expect(await scoped.subscribe({ inboxIds: [b] })).toMatchObject({ type: 'error', name: 'NotFoundError' });
      expect(await scoped.subscribe()).toEqual({ type: 'subscribed' });
      const whole = await listen(server, org.key);
      await whole.subscribe();
      await org.client.inboxes.messages.send(b, { to: [a], subject: 'b to a', text: 'hi' });
      await org.client.inboxes.messages.send(a, { to: [b], subject: 'a to b', text: 'hi' });
      await whole.next((f) => isEvent('message.received', b)(f));
      await scoped.next((f) => isEvent('message.sent', a)(f));
      // Commit order: the organization key has seen everything, so the inbox key has had its chance at all of it.
      await whole.next((f) => f.type === 'event' && whole.frames.filter((x) => x.type === 'event').length >= 4);
      const inboxesOf = scoped.frames.filter((f) => f.type === 'event').map(inboxOf);
      expect(inboxesOf.length).toBeGreaterThan(0);
      expect(new Set(inboxesOf)).toEqual(new Set([a]));
      expect(new Set(whole.frames.filter((f) => f.type === 'event').map(inboxOf))).toEqual(new Set([a, b]));

      const blind = (await org.client.apiKeys.create({
        name: 'no messages',
        permissions: { inboxRead: true },
      })) as unknown as { apiKey: string };
      expect(await refused(`${server.url.replace('http', 'ws')}/v0?api_key=${blind.apiKey}`)).toMatchObject({
        status: 403,
        body: { error: { type: 'permission_error', details: { code: 'PERMISSION_DENIED' } } },
      });
    } finally {
      await server.close();
    }
  });

  it('a deleted key, or one whose permissions changed, loses its open connections at once (1008); the deleted one may not reconnect', async () => {
    const server = await startInboxServer({ dialect });
    try {
      const org = await organization(server, ['revoke-a']);
      const doomed = secretOf(await org.client.apiKeys.create({ name: 'doomed' }));
      const narrowed = await org.client.apiKeys.create({ name: 'narrowed' });
      const other = secretOf(await org.client.apiKeys.create({ name: 'bystander' }));
      const [d, n, o] = await Promise.all([
        rawClient(server, doomed),
        rawClient(server, secretOf(narrowed)),
        rawClient(server, other),
      ]);
      const closeOf = (ws: WebSocket) =>
        new Promise<{ code: number; reason: string }>((resolve) =>
          ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
        );
      const [dClosed, nClosed] = [closeOf(d.ws), closeOf(n.ws)];
      const me = await server.client(doomed).auth.me();
      await org.client.apiKeys.delete(me.apiKeyId as string);
      expect(await dClosed).toEqual({ code: 1008, reason: 'API key deleted or changed' });
      await org.client.apiKeys.update(narrowed.apiKeyId, { permissions: { inboxRead: true, messageRead: true } });
      expect((await nClosed).code).toBe(1008);
      expect(await refused(`${server.url.replace('http', 'ws')}/v0?api_key=${doomed}`)).toMatchObject({
        status: 401,
        body: { error: { details: { code: 'INVALID_API_KEY' } } },
      });
      // Other keys' connections stay.
      expect(o.ws.readyState).toBe(WebSocket.OPEN);
      expect(server.service.realtime?.stats().closed.key).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('keys deleted with their inbox or pod (no key signal) lose their connections at the next heartbeat (1008)', async () => {
    const server = await startInboxServer({
      dialect,
      env: { INBOX_WS_PING_INTERVAL_MS: '100', INBOX_WS_IDLE_TIMEOUT_MS: '60000' },
    });
    try {
      const org = await organization(server);
      const pod = await org.client.pods.create({ name: 'doomed-pod' });
      const inbox = (await org.client.inboxes.create({ username: 'doomed-inbox' })).inboxId;
      const [inboxKey, podKey] = [
        secretOf(await org.client.inboxes.apiKeys.create(inbox, { name: 'i' })),
        secretOf(await org.client.pods.apiKeys.create(pod.podId, { name: 'p' })),
      ];
      const [i, p, o] = await Promise.all([
        rawClient(server, inboxKey),
        rawClient(server, podKey),
        rawClient(server, org.key),
      ]);
      const closeOf = (ws: WebSocket) =>
        new Promise<{ code: number; reason: string }>((resolve) =>
          ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
        );
      const [iClosed, pClosed] = [closeOf(i.ws), closeOf(p.ws)];
      // Heartbeats pass while the keys exist: nothing is dropped.
      const pings = (ws: WebSocket, n: number) =>
        new Promise<void>((resolve) => {
          let seen = 0;
          ws.on('ping', () => ++seen === n && resolve());
        });
      await pings(i.ws, 3);
      expect(server.service.realtime?.stats().closed.key).toBe(0);
      await org.client.inboxes.delete(inbox);
      expect(await iClosed).toEqual({ code: 1008, reason: 'API key deleted or changed' });
      await org.client.pods.delete(pod.podId);
      expect(await pClosed).toEqual({ code: 1008, reason: 'API key deleted or changed' });
      await pings(o.ws, 2);
      expect(o.ws.readyState).toBe(WebSocket.OPEN);
      expect(server.service.realtime?.stats().closed.key).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('disconnects a client that stops reading (close code 1008 at the server, never an unbounded buffer)', async () => {
    const server = await startInboxServer({ dialect, env: { INBOX_WS_MAX_BUFFERED_BYTES: '65536' } });
    try {
      const org = await organization(server, [
        'slow-0',
        'slow-1',
        'slow-2',
        'slow-3',
        'slow-4',
        'slow-5',
        'slow-6',
        'slow-7',
      ]);
      const reader = await listen(server, org.key);
      await reader.subscribe({ eventTypes: ['message.sent'] });
      const slow = await rawClient(server, org.key);
      slow.ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
      await waitUntil(() => (slow.texts.length ? true : undefined), 'subscribed');
      const closed = new Promise<number>((resolve) => slow.ws.once('close', (code) => resolve(code)));
      // Stop reading: the kernel buffers fill, then the server's send buffer.
      (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const text = 'x'.repeat(300 * 1024);
      for (let i = 0; i < 4 && !server.service.realtime?.stats().closed.slow; i++) {
        await org.client.inboxes.messages.send(org.inboxes[0] as string, {
          to: org.inboxes.slice(1),
          subject: `big ${i}`,
          text,
        });
        await reader.next(isEvent('message.sent'));
      }
      await waitUntil(() => server.service.realtime?.stats().closed.slow || undefined, 'the slow client to be dropped');
      await waitUntil(
        () => (server.service.realtime?.stats().connections === 1 ? true : undefined),
        'the connection to be gone',
      );
      (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      expect([1006, 1008]).toContain(await closed);
      // The reader that keeps up is unaffected.
      expect(reader.closes).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('heartbeats: a client that answers no ping is dropped after the idle timeout; one that answers stays', async () => {
    const server = await startInboxServer({
      dialect,
      env: { INBOX_WS_PING_INTERVAL_MS: '100', INBOX_WS_IDLE_TIMEOUT_MS: '300' },
    });
    try {
      const org = await organization(server);
      const alive = await listen(server, org.key);
      await alive.subscribe();
      const mute = await rawClient(server, org.key, { autoPong: false });
      const gone = new Promise<number>((resolve) => mute.ws.once('close', (code) => resolve(code)));
      expect(await gone).toBe(1001);
      await waitUntil(
        () => (server.service.realtime?.stats().connections === 1 ? true : undefined),
        'the server to let go of the connection',
      );
      expect(server.service.realtime?.stats().closed).toMatchObject({ idle: 1 });
      expect(alive.closes).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('shutdown closes every connection with 1001 (going away)', async () => {
    const server = await startInboxServer({ dialect });
    let closedServer = false;
    try {
      const org = await organization(server);
      const a = await listen(server, org.key);
      const b = await rawClient(server, org.key);
      await a.subscribe();
      const rawClose = new Promise<number>((resolve) => b.ws.once('close', (code) => resolve(code)));
      await server.close();
      closedServer = true;
      expect(await rawClose).toBe(1001);
      await waitUntil(() => (a.closes.length ? true : undefined), 'the SDK close');
      expect(a.closes[0]?.code).toBe(1001);
      expect(server.service.realtime?.stats()).toMatchObject({ connections: 0, closed: { shutdown: 2 } });
    } finally {
      if (!closedServer) await server.close();
    }
  });
});

describe.runIf(dialects.includes('postgres'))('postgres: every instance sees every event', () => {
  it('a client of instance A receives what instance B commits by API and by SMTP, once each, in commit order', async () => {
    const database = createInboxTestDatabase('postgres');
    const a = await startInboxServer({ database, env: { INBOX_ROLES: 'api' } });
    const b = await startInboxServer({ database, env: { INBOX_ROLES: 'api,worker,smtp' } });
    try {
      const org = await organization(b, ['multi-a', 'multi-b']);
      const [x, y] = org.inboxes as [string, string];
      const onA = await listen(a, org.key);
      await onA.subscribe();
      await org.client.inboxes.messages.send(x, { to: [y], subject: 'from B by API', text: 'api' });
      await smtpSend(b, 'outside@sender.example', y, 'from B by SMTP');
      const last = await onA.next(
        (f) =>
          isEvent('message.received', y)(f) &&
          (f as { message?: { subject?: string } }).message?.subject === 'from B by SMTP',
      );
      const stored = await eventsOf(b);
      const frames = onA.frames.filter((f) => f.type === 'event').map((f) => f.eventId);
      // Every stored event once; the SMTP mail, committed after the API send, last.
      expect(new Set(frames)).toEqual(new Set(stored.map((e) => e.event_id as string)));
      expect(frames).toHaveLength(stored.length);
      expect(frames.at(-1)).toBe(last.eventId);

      // A key deleted through instance B loses its connection on instance A at once.
      const doomed = secretOf(await org.client.apiKeys.create({ name: 'doomed on A' }));
      const held = await rawClient(a, doomed);
      const closed = new Promise<number>((resolve) => held.ws.once('close', (code) => resolve(code)));
      await org.client.apiKeys.delete((await b.client(doomed).auth.me()).apiKeyId as string);
      expect(await closed).toBe(1008);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});
