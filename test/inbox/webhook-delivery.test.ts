import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { insertPod } from '../../src/inbox/pods/pod.repository.js';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { createHook, deliveryLog, emit, jobStates, newTenant, storedPayload } from '../support/inbox-webhooks.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Deliveries end to end: the outbox writes a job, the worker POSTs to a real receiver, which
 * verifies each signature with the `svix` and `standardwebhooks` libraries. The service runs
 * without its background worker on a fixed clock; `drain()` runs what is due, so retry
 * schedules are walked by advancing the clock, never by waiting.
 */

describe.each(dialects)('%s: webhook delivery', (dialect) => {
  const clock = fixedClock(new Date());
  let server: InboxTestServer;
  let receiver: WebhookReceiver;
  let path = 0;
  const nextPath = () => `/hook/${++path}`;
  const at = (p: string) => receiver.received.filter((r) => r.path === p);
  const drain = () => server.service.runtime.runner.drain();

  beforeAll(async () => {
    server = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api' } });
    receiver = await startWebhookReceiver({ now: () => clock.now().getTime() });
  });
  afterAll(async () => {
    await receiver.stop();
    await server.close();
  });
  afterEach(() => {
    // Every request any test caused verified with both libraries.
    for (const r of receiver.received) {
      expect(r.svix, r.path).toBe(true);
      expect(r.standard, r.path).toBe(true);
    }
  });

  it('POSTs the stored bytes once, signed for svix and Standard Webhooks, and logs the attempt', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, { status: 200, body: 'thanks' });
    const eventId = await emit(server, tenant, 'message.received');
    expect(await drain()).toBe(1);

    const [req, ...more] = at(p);
    expect(more).toHaveLength(0);
    expect(req?.method).toBe('POST');
    expect(req?.body).toBe(await storedPayload(server, eventId));
    expect(JSON.parse(req?.body ?? '')).toMatchObject({
      type: 'event',
      event_type: 'message.received',
      event_id: eventId,
    });
    const h = req?.headers ?? {};
    expect(h['content-type']).toBe('application/json');
    expect(h['user-agent']).toMatch(/^inbox-service-webhooks\//);
    expect(Number(h['content-length'])).toBe(Buffer.byteLength(req?.body ?? ''));
    expect([h['svix-id'], h['webhook-id']]).toEqual([eventId, eventId]);
    expect(h['svix-timestamp']).toBe(String(Math.floor(clock.now().getTime() / 1000)));
    expect(h['webhook-timestamp']).toBe(h['svix-timestamp']);
    expect(h['svix-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(h['webhook-signature']).toBe(h['svix-signature']);
    expect(JSON.stringify(h)).not.toContain(hook.secret.slice('whsec_'.length));

    const log = await deliveryLog(server, tenant.key, hook.webhook_id);
    expect(log.body).toEqual({
      count: 1,
      limit: 50,
      deliveries: [
        {
          webhook_id: hook.webhook_id,
          event_id: eventId,
          event_type: 'message.received',
          attempt: 1,
          outcome: 'delivered',
          status_code: 200,
          duration_ms: expect.any(Number),
          response: 'thanks',
          created_at: clock.now().toISOString(),
        },
      ],
    });
    expect(await jobStates(server, hook.webhook_id)).toEqual(['done']);
    expect(await drain()).toBe(0);
  });

  it('delivers to an IPv6 literal URL', async (context) => {
    const v6 = await startWebhookReceiver({ now: () => clock.now().getTime(), host: '::1' }).catch(() => undefined);
    if (!v6) return context.skip();
    try {
      const tenant = await newTenant(server);
      const res = await fetch(`${server.url}/v0/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://[::1]:${v6.port}/v6?x=1` }),
      });
      const hook = (await res.json()) as { secret: string };
      v6.trust('/v6', hook.secret);
      await emit(server, tenant);
      await drain();
      expect(v6.received.map((r) => [r.path, r.status, r.svix, r.standard])).toEqual([['/v6', 200, true, true]]);
    } finally {
      await v6.stop();
    }
  });

  it('a wrong secret fails both verifiers (the receiver really checks)', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    await createHook(server, receiver, tenant, p);
    const other = await createHook(server, receiver, await newTenant(server), nextPath());
    receiver.trust(p, other.secret);
    await emit(server, tenant);
    await drain();
    const [req] = at(p);
    expect(req?.svix).toMatch(/signature/i);
    expect(req?.standard).toMatch(/signature/i);
    receiver.received.splice(receiver.received.indexOf(req as never), 1);
  });

  it('filters: event_types, inbox_ids, pod_ids (either matches), and disabled webhooks get nothing', async () => {
    const tenant = await newTenant(server);
    const sdk = server.client(tenant.key);
    const inboxB = (await sdk.inboxes.create()).inboxId;
    const podB = '0f0f0f0f-0000-4000-8000-000000000001';
    await insertPod(server.service.database.db, {
      id: podB,
      organizationId: tenant.organizationId,
      name: 'b',
      createdAt: clock.now().toISOString(),
    });
    const paths = {
      all: nextPath(),
      sent: nextPath(),
      inboxB: nextPath(),
      podB: nextPath(),
      either: nextPath(),
      disabled: nextPath(),
    };
    await createHook(server, receiver, tenant, paths.all);
    await createHook(server, receiver, tenant, paths.sent, { event_types: ['message.sent'] });
    await createHook(server, receiver, tenant, paths.inboxB, { inbox_ids: [inboxB] });
    await createHook(server, receiver, tenant, paths.podB, { pod_ids: [podB] });
    await createHook(server, receiver, tenant, paths.either, {
      inbox_ids: [inboxB],
      pod_ids: [podB],
      event_types: ['message.received'],
    });
    await createHook(server, receiver, tenant, paths.disabled, { enabled: false });

    const e1 = await emit(server, tenant, 'message.received'); // inbox A, default pod
    const e2 = await emit(server, tenant, 'message.sent', { inboxId: inboxB });
    const e3 = await emit(server, tenant, 'message.received', { inboxId: 'elsewhere@inbox.test', podId: podB });
    // Another organization's event reaches none of these webhooks.
    await emit(server, await newTenant(server), 'message.received');
    await drain();

    const got = (p: string) =>
      at(p)
        .map((r) => r.headers['svix-id'])
        .sort();
    expect(got(paths.all)).toEqual([e1, e2, e3].sort());
    expect(got(paths.sent)).toEqual([e2]);
    expect(got(paths.inboxB)).toEqual([e2]);
    expect(got(paths.podB)).toEqual([e3]);
    expect(got(paths.either)).toEqual([e3]);
    expect(got(paths.disabled)).toEqual([]);
  });

  it('a webhook deleted, disabled or re-filtered after the event gets nothing, and its job ends', async () => {
    const tenant = await newTenant(server);
    const [pDeleted, pDisabled, pFiltered] = [nextPath(), nextPath(), nextPath()];
    const deleted = await createHook(server, receiver, tenant, pDeleted);
    const disabled = await createHook(server, receiver, tenant, pDisabled);
    const filtered = await createHook(server, receiver, tenant, pFiltered);
    await emit(server, tenant);
    const sdk = server.client(tenant.key);
    await sdk.webhooks.delete(deleted.webhook_id);
    await fetch(`${server.url}/v0/webhooks/${disabled.webhook_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: false }),
    });
    await fetch(`${server.url}/v0/webhooks/${filtered.webhook_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event_types: ['message.bounced'] }),
    });
    expect(await drain()).toBe(3);
    expect([...at(pDeleted), ...at(pDisabled), ...at(pFiltered)]).toEqual([]);
    for (const hook of [deleted, disabled, filtered])
      expect(await jobStates(server, hook.webhook_id)).toEqual(['done']);
    clock.advance(86_400_000);
    expect(await drain()).toBe(0);
  });

  it('retries on 500 at 5 s and 5 min (±10 %), with the same svix-id and a fresh timestamp, until a 2xx', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, { status: 500, body: 'down' }, 503, 204);
    const eventId = await emit(server, tenant);
    const t0 = clock.now().getTime();
    await drain();
    expect(at(p)).toHaveLength(1);
    clock.advance(4_400);
    await drain();
    expect(at(p)).toHaveLength(1); // not before 4.5 s
    clock.advance(1_200);
    await drain();
    expect(at(p)).toHaveLength(2);
    clock.advance(269_000);
    await drain();
    expect(at(p)).toHaveLength(2); // not before 270 s after the second attempt
    clock.advance(62_000);
    await drain();
    expect(at(p)).toHaveLength(3);
    clock.advance(86_400_000);
    await drain();
    expect(at(p)).toHaveLength(3);

    expect(at(p).map((r) => r.headers['svix-id'])).toEqual([eventId, eventId, eventId]);
    const stamps = at(p).map((r) => Number(r.headers['svix-timestamp']));
    expect(stamps[0]).toBe(Math.floor(t0 / 1000));
    expect(stamps[1]).toBe(Math.floor((t0 + 5_600) / 1000));
    expect(stamps[2]).toBe(Math.floor((t0 + 336_600) / 1000));
    const log = await deliveryLog(server, tenant.key, hook.webhook_id, '?ascending=true');
    expect(
      log.body.deliveries.map((d: Record<string, unknown>) => [d.attempt, d.outcome, d.status_code, d.error ?? null]),
    ).toEqual([
      [1, 'retrying', 500, 'the receiver answered 500'],
      [2, 'retrying', 503, 'the receiver answered 503'],
      [3, 'delivered', 204, null],
    ]);
    expect(log.body.deliveries[0].response).toBe('down');
    expect(await jobStates(server, hook.webhook_id)).toEqual(['done']);
  });

  it.each([408, 429, 502, 504])('retries after %i', async (status) => {
    const tenant = await newTenant(server);
    const p = nextPath();
    await createHook(server, receiver, tenant, p);
    receiver.script(p, status);
    await emit(server, tenant);
    await drain();
    clock.advance(5_600);
    await drain();
    expect(at(p).map((r) => r.status)).toEqual([status, 200]);
  });

  it('honours Retry-After (seconds and HTTP date) when it asks for more than the backoff', async () => {
    const tenant = await newTenant(server);
    const [pSeconds, pDate] = [nextPath(), nextPath()];
    await createHook(server, receiver, tenant, pSeconds);
    await createHook(server, receiver, tenant, pDate);
    receiver.script(pSeconds, { status: 429, headers: { 'retry-after': '120' } });
    receiver.script(pDate, {
      status: 503,
      headers: { 'retry-after': new Date(clock.now().getTime() + 600_000).toUTCString() },
    });
    await emit(server, tenant);
    await drain();
    clock.advance(60_000);
    await drain();
    expect([at(pSeconds).length, at(pDate).length]).toEqual([1, 1]);
    clock.advance(61_000);
    await drain();
    expect([at(pSeconds).length, at(pDate).length]).toEqual([2, 1]);
    clock.advance(480_000);
    await drain();
    expect([at(pSeconds).length, at(pDate).length]).toEqual([2, 2]);
  });

  it.each([
    [400, 'client errors other than 408 and 429 are not retried'],
    [401, 'not retried'],
    [404, 'not retried'],
    [422, 'not retried'],
    [301, 'redirects are not followed'],
    [302, 'redirects are not followed'],
  ])('no retry after %i', async (status, reason) => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const target = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, { status, headers: status < 400 ? { location: receiver.url(target) } : {} });
    await emit(server, tenant);
    await drain();
    clock.advance(86_400_000);
    await drain();
    expect(at(p)).toHaveLength(1);
    expect(at(target)).toHaveLength(0);
    const [entry] = (await deliveryLog(server, tenant.key, hook.webhook_id)).body.deliveries;
    expect(entry).toMatchObject({ outcome: 'failed', status_code: status, error: expect.stringContaining(reason) });
    expect(await jobStates(server, hook.webhook_id)).toEqual(['dead']);
  });

  it('webhook-delivery: abort-message stops the retries of a message', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    await createHook(server, receiver, tenant, p);
    receiver.script(p, { status: 503, headers: { 'webhook-delivery': 'abort-message' } });
    await emit(server, tenant);
    await drain();
    clock.advance(86_400_000);
    await drain();
    expect(at(p)).toHaveLength(1);
  });

  it('410 Gone disables the webhook with a reason; later events are not sent; enabling again clears it', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, 410);
    await emit(server, tenant);
    await drain();
    const sdk = server.client(tenant.key);
    const disabled = (await (
      await fetch(`${server.url}/v0/webhooks/${hook.webhook_id}`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      })
    ).json()) as Record<string, unknown>;
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining('410') });
    await emit(server, tenant);
    clock.advance(86_400_000);
    await drain();
    expect(at(p)).toHaveLength(1);
    expect(await jobStates(server, hook.webhook_id)).toEqual(['dead']);

    const res = await fetch(`${server.url}/v0/webhooks/${hook.webhook_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
    const enabled = (await res.json()) as Record<string, unknown>;
    expect(enabled.enabled).toBe(true);
    expect(enabled.disabled_reason).toBeUndefined();
    expect((await sdk.webhooks.get(hook.webhook_id)).enabled).toBe(true);
    await emit(server, tenant);
    await drain();
    expect(at(p).map((r) => r.status)).toEqual([410, 200]);
  });

  it('after eight failed attempts over about 27.6 hours (5 s … 10 h) the job is dead', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, ...Array<number>(8).fill(500));
    await emit(server, tenant);
    await drain();
    for (const step of [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]) {
      clock.advance(step * 1.1 + 1);
      await drain();
    }
    expect(at(p)).toHaveLength(8);
    clock.advance(7 * 86_400_000);
    await drain();
    expect(at(p)).toHaveLength(8);
    const log = await deliveryLog(server, tenant.key, hook.webhook_id);
    expect(log.body.deliveries.map((d: { outcome: string }) => d.outcome)).toEqual([
      'failed',
      ...Array<string>(7).fill('retrying'),
    ]);
    expect(log.body.deliveries.map((d: { attempt: number }) => d.attempt)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
    expect(await jobStates(server, hook.webhook_id)).toEqual(['dead']);
  });

  it('connection errors are logged and retried', async () => {
    const tenant = await newTenant(server);
    const closed = await startWebhookReceiver();
    const port = closed.port;
    await closed.stop();
    const res = await fetch(`${server.url}/v0/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/gone` }),
    });
    const hook = (await res.json()) as { webhook_id: string };
    await emit(server, tenant);
    await drain();
    const [entry] = (await deliveryLog(server, tenant.key, hook.webhook_id)).body.deliveries;
    expect(entry).toMatchObject({ attempt: 1, outcome: 'retrying', error: expect.stringContaining('ECONNREFUSED') });
    expect(entry.status_code).toBeUndefined();
    expect(await jobStates(server, hook.webhook_id)).toEqual(['pending']);
    await server.client(tenant.key).webhooks.delete(hook.webhook_id);
  });

  it('reads at most a few KB of an answer and logs the first 1 KB, without NUL characters', async () => {
    const tenant = await newTenant(server);
    const [pBig, pBinary] = [nextPath(), nextPath()];
    const big = await createHook(server, receiver, tenant, pBig);
    const binary = await createHook(server, receiver, tenant, pBinary);
    receiver.script(pBig, { status: 200, body: 'x'.repeat(5_000_000) });
    receiver.script(pBinary, { status: 500, body: Buffer.from([0x61, 0x00, 0x62, 0xff, 0x00]) });
    await emit(server, tenant);
    await drain();
    const [bigEntry] = (await deliveryLog(server, tenant.key, big.webhook_id)).body.deliveries;
    expect(bigEntry).toMatchObject({ outcome: 'delivered', response: 'x'.repeat(1024) });
    const [binaryEntry] = (await deliveryLog(server, tenant.key, binary.webhook_id)).body.deliveries;
    expect(binaryEntry).toMatchObject({ outcome: 'retrying', status_code: 500, response: 'ab\ufffd' });
    await server.client(tenant.key).webhooks.delete(binary.webhook_id);
  });

  it('an answer that never ends counts once its first KB have arrived: the read stops there', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, { status: 202, body: 'y'.repeat(8192), endless: true });
    await emit(server, tenant);
    await drain();
    const [entry] = (await deliveryLog(server, tenant.key, hook.webhook_id)).body.deliveries;
    expect(entry).toMatchObject({ outcome: 'delivered', status_code: 202, response: 'y'.repeat(1024) });
    expect(entry.duration_ms).toBeLessThan(5_000); // far below the 15 s deadline
  });

  it('the delivery log pages newest first, filters by event, and is private to the organization', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    const events: string[] = [];
    for (let i = 0; i < 3; i++) {
      events.push(await emit(server, tenant));
      await drain();
    }
    const first = await deliveryLog(server, tenant.key, hook.webhook_id, '?limit=2');
    expect(first.body.deliveries.map((d: { event_id: string }) => d.event_id)).toEqual([events[2], events[1]]);
    const second = await deliveryLog(
      server,
      tenant.key,
      hook.webhook_id,
      `?limit=2&page_token=${encodeURIComponent(first.body.next_page_token as string)}`,
    );
    expect(second.body.deliveries.map((d: { event_id: string }) => d.event_id)).toEqual([events[0]]);
    expect(second.body.next_page_token).toBeUndefined();
    const one = await deliveryLog(server, tenant.key, hook.webhook_id, `?event_id=${events[1] as string}`);
    expect(one.body.deliveries.map((d: { event_id: string }) => d.event_id)).toEqual([events[1]]);
    const listToken = (await (
      await fetch(`${server.url}/v0/webhooks?limit=1`, { headers: { authorization: `Bearer ${tenant.key}` } })
    ).json()) as { next_page_token?: string };
    expect(listToken.next_page_token).toBeUndefined();

    const other = await newTenant(server);
    const foreign = await deliveryLog(server, other.key, hook.webhook_id);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.details).toEqual({ field: 'webhook_id', code: 'WEBHOOK_NOT_FOUND' });
    expect((await deliveryLog(server, tenant.key, hook.webhook_id, '?page_token=nonsense')).status).toBe(400);
  });
});

describe.each(dialects)('%s: webhook delivery with a short timeout', (dialect) => {
  const clock = fixedClock(new Date());
  let server: InboxTestServer;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, clock, env: { INBOX_ROLES: 'api', INBOX_WEBHOOK_TIMEOUT_MS: '300' } });
    receiver = await startWebhookReceiver({ now: () => clock.now().getTime() });
  });
  afterAll(async () => {
    await receiver.stop();
    await server.close();
  });

  it('a receiver that does not answer in time is cut off, logged, and retried', async () => {
    const tenant = await newTenant(server);
    const hook = await createHook(server, receiver, tenant, '/slow');
    receiver.script('/slow', { hang: true });
    await emit(server, tenant);
    const started = Date.now();
    await server.service.runtime.runner.drain();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(5_000);
    const [entry] = (await deliveryLog(server, tenant.key, hook.webhook_id)).body.deliveries;
    expect(entry).toMatchObject({ outcome: 'retrying', error: 'no complete answer within 300 ms' });
    expect(entry.status_code).toBeUndefined();
    expect(entry.duration_ms).toBeGreaterThanOrEqual(290);
    clock.advance(5_600);
    await server.service.runtime.runner.drain();
    expect(receiver.received.map((r) => [r.status, r.svix, r.standard])).toEqual([
      [undefined, true, true],
      [200, true, true],
    ]);
  });
});

describe('webhook delivery in real time', () => {
  let server: InboxTestServer;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    server = await startInboxServer();
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver.stop();
    await server.close();
  });

  it('the background worker delivers as soon as the event commits', async () => {
    const tenant = await newTenant(server);
    await createHook(server, receiver, tenant, '/live');
    const started = Date.now();
    await emit(server, tenant);
    await receiver.waitFor(1, 3_000);
    expect(Date.now() - started).toBeLessThan(2_000); // no drain(), no clock: the running worker did it
    expect(receiver.received[0]).toMatchObject({ svix: true, standard: true, status: 200 });
  });
});
