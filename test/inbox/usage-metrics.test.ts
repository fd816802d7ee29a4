import { AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { call, enc, expectError, organization, unique } from './fixtures.js';
import { simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

type Org = Awaited<ReturnType<typeof organization>>;

const T0 = new Date('2026-11-20T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

/** metrics.queryEvents / queryUsage (organization, pod, inbox) from the service's own counts, and inboxes.events.list. */
describe.each(dialects)('%s: usage metrics and inbox events', (dialect) => {
  let server: InboxTestServer;
  let clock: ReturnType<typeof fixedClock>;
  let org: Org;
  let other: Org;
  let a: string;
  let b: string;
  let podId: string;
  let bytes: number;

  beforeAll(async () => {
    clock = fixedClock(T0);
    server = await startInboxServer({ dialect, clock });
    org = await organization(server, [unique('ma'), unique('mb')]);
    other = await organization(server, [unique('mo')]);
    [a, b] = org.inboxes as [string, string];
    podId = (await org.client.inboxes.get(a)).podId;
    // t = 0: a writes to b (local): sent, delivered for a; received for b.
    await org.client.inboxes.messages.send(a, { to: b, subject: 'first', text: 'hello' });
    await other.client.inboxes.messages.send(other.inboxes[0] as string, { to: b, subject: 'from afar', text: 'x' });
    // t = 90 s: a blocked sender reaches b over SMTP.
    clock.advance(90_000);
    await org.client.inboxes.lists.create(b, 'receive', 'block', { entry: 'blocked.example' });
    storedMessageId(
      (
        await deliver(smtpPort(server), {
          from: 'x@blocked.example',
          to: [b],
          message: simpleMessage({
            from: 'x@blocked.example',
            to: b,
            subject: 'blocked one',
            messageId: `<bl.${unique('m')}@blocked.example>`,
          }),
        })
      ).data,
    );
    const listed = await org.client.inboxes.messages.list(b, { includeBlocked: true });
    bytes = listed.messages.reduce((n, m) => n + m.size, 0);
  });
  afterAll(async () => {
    await server.close();
  });

  it('counts events per period at the organization, pod and inbox levels, zeros included; wire shape exact', async () => {
    const query = {
      eventTypes: ['message.sent', 'message.received', 'message.received.blocked', 'message.delivered'] as const,
      start: at(0),
      end: at(180),
      period: 60,
    };
    const series = (counts: number[]) => counts.map((count, i) => ({ timestamp: at(i * 60), count }));
    const whole = await org.client.metrics.queryEvents({ ...query, eventTypes: [...query.eventTypes] });
    expect(whole).toEqual({
      'message.sent': series([1, 0, 0]),
      // b received from a and from the other organization: both are b's.
      'message.received': series([2, 0, 0]),
      'message.received.blocked': series([0, 1, 0]),
      'message.delivered': series([1, 0, 0]),
    });
    expect(await org.client.pods.metrics.queryEvents(podId, { ...query, eventTypes: [...query.eventTypes] })).toEqual(
      whole,
    );
    expect(await org.client.inboxes.metrics.queryEvents(b, { ...query, eventTypes: [...query.eventTypes] })).toEqual({
      'message.sent': series([0, 0, 0]),
      'message.received': series([2, 0, 0]),
      'message.received.blocked': series([0, 1, 0]),
      'message.delivered': series([0, 0, 0]),
    });
    expect(
      (await other.client.metrics.queryEvents({ ...query, eventTypes: ['message.received.blocked'] }))[
        'message.received.blocked'
      ],
    ).toEqual(series([0, 0, 0]));

    const raw = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(a)}/metrics/events?event_types=${enc('["message.sent"]')}&start=${iso(0)}&end=${iso(180)}&period=60&descending=true&limit=2`,
    );
    expect(raw.status).toBe(200);
    expect(raw.body).toEqual({
      'message.sent': [
        { timestamp: iso(120), count: 0 },
        { timestamp: iso(60), count: 0 },
      ],
    });
    // agentmail 0.4.9's metrics.query: the same counts at …/metrics.
    const old049 = server.client049(org.key);
    const q049 = { eventTypes: ['message.sent' as const], start: at(0), end: at(180), period: '60' };
    expect(await old049.metrics.query(q049)).toEqual({ 'message.sent': series([1, 0, 0]) });
    expect(await old049.pods.metrics.query(podId, q049)).toEqual({ 'message.sent': series([1, 0, 0]) });
    expect(await old049.inboxes.metrics.query(b, q049)).toEqual({ 'message.sent': series([0, 0, 0]) });
    expectError(
      await call(server.url, other.key, 'GET', `/v0/inboxes/${enc(b)}/metrics`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    // Every type when none is named.
    const all = await org.client.metrics.queryEvents({ start: at(0), end: at(60), period: 60 });
    expect(Object.keys(all).sort()).toEqual([
      'domain.verified',
      'message.bounced',
      'message.complained',
      'message.delivered',
      'message.received',
      'message.received.blocked',
      'message.received.spam',
      'message.received.unauthenticated',
      'message.rejected',
      'message.sent',
    ]);
  });

  it('answers cumulative usage per period from the stored deltas', async () => {
    const usage = await org.client.inboxes.metrics.queryUsage(b, { start: at(0), end: at(180), period: 60 });
    expect(Object.keys(usage).sort()).toEqual(['message_count', 'storage_bytes', 'thread_count']);
    expect(usage.message_count).toEqual([
      { timestamp: at(60), value: 2 },
      { timestamp: at(120), value: 3 },
      { timestamp: at(180), value: 3 },
    ]);
    expect(usage.thread_count?.map((p) => p.value)).toEqual([2, 3, 3]);
    expect(usage.storage_bytes?.[2]?.value).toBe(bytes);

    const whole = await org.client.metrics.queryUsage({
      usageTypes: ['inbox_count', 'message_count'],
      start: at(0),
      end: at(180),
      period: 180,
    });
    // a's sent copy, b's three.
    expect(whole).toEqual({
      inbox_count: [{ timestamp: at(180), value: 2 }],
      message_count: [{ timestamp: at(180), value: 4 }],
    });
    expect(
      await org.client.pods.metrics.queryUsage(podId, {
        usageTypes: ['inbox_count', 'message_count'],
        start: at(0),
        end: at(180),
        period: 180,
      }),
    ).toEqual(whole);
    // Before the first delta the series starts from zero; after the range from what came before.
    expect(
      (
        await org.client.metrics.queryUsage({
          usageTypes: ['message_count'],
          start: at(-120),
          end: at(-60),
          period: 60,
        })
      ).message_count,
    ).toEqual([{ timestamp: at(-60), value: 0 }]);
    expect(
      (await org.client.metrics.queryUsage({ usageTypes: ['message_count'], start: at(300), end: at(360), period: 60 }))
        .message_count,
    ).toEqual([{ timestamp: at(360), value: 4 }]);
  });

  it('takes deleted threads and inboxes out of the usage', async () => {
    const tmp = await org.client.inboxes.create({ username: unique('tmp') });
    const sent = await org.client.inboxes.messages.send(tmp.inboxId, {
      to: tmp.inboxId,
      subject: 'self',
      text: 'note',
    });
    await org.client.inboxes.messages.send(tmp.inboxId, { to: a, subject: 'to a', text: 'x' });
    const q = {
      usageTypes: ['inbox_count' as const, 'message_count' as const, 'thread_count' as const],
      start: at(0),
      end: at(600),
      period: 600,
    };
    const before = await org.client.metrics.queryUsage(q);
    expect(
      (
        await call(
          server.url,
          org.key,
          'DELETE',
          `/v0/inboxes/${enc(tmp.inboxId)}/threads/${enc(sent.threadId)}?permanent=true`,
        )
      ).status,
    ).toBe(204);
    const afterThread = await org.client.metrics.queryUsage(q);
    expect(afterThread.message_count?.[0]?.value).toBe((before.message_count?.[0]?.value ?? 0) - 1);
    expect(afterThread.thread_count?.[0]?.value).toBe((before.thread_count?.[0]?.value ?? 0) - 1);
    await org.client.inboxes.delete(tmp.inboxId);
    const afterInbox = await org.client.metrics.queryUsage(q);
    // tmp's remaining sent copy and thread go; a keeps the copy it received.
    expect(afterInbox).toEqual({
      inbox_count: [{ timestamp: at(600), value: (before.inbox_count?.[0]?.value ?? 0) - 1 }],
      message_count: [{ timestamp: at(600), value: (before.message_count?.[0]?.value ?? 0) - 2 }],
      thread_count: [{ timestamp: at(600), value: (before.thread_count?.[0]?.value ?? 0) - 2 }],
    });
  });

  it('counts concurrent sends of one inbox exactly (the counters are sharded, not one hot row)', async () => {
    const burst = await org.client.inboxes.create({ username: unique('burst') });
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        org.client.inboxes.messages.send(burst.inboxId, { to: a, subject: `n${i}`, text: 'x' }),
      ),
    );
    const counts = await org.client.inboxes.metrics.queryEvents(burst.inboxId, {
      eventTypes: ['message.sent'],
      start: at(0),
      end: at(600),
      period: 600,
    });
    expect(counts['message.sent']).toEqual([{ timestamp: at(0), count: 12 }]);
    const rows = await server.service.runtime.services.db
      .selectFrom('usage_counts')
      .select(['shard'])
      .where('inbox_id', '=', burst.inboxId)
      .where('metric', '=', 'message.sent')
      .execute();
    expect(rows.length).toBeGreaterThan(1);
  });

  it('answers errors in the spec format', async () => {
    const base = `/v0/metrics/events?start=${iso(0)}&end=${iso(60)}`;
    expectError(
      await call(server.url, org.key, 'GET', `${base}&period=0`),
      400,
      'validation_error',
      'INVALID_PERIOD',
      'period',
    );
    expectError(
      await call(server.url, org.key, 'GET', `${base}&period=86401`),
      400,
      'validation_error',
      'INVALID_PERIOD',
      'period',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/metrics/events?start=${iso(60)}&end=${iso(0)}`),
      400,
      'validation_error',
      'INVALID_RANGE',
      'start',
    );
    expectError(
      await call(server.url, org.key, 'GET', '/v0/metrics/events?start=yesterday'),
      400,
      'validation_error',
      'INVALID_DATE',
      'start',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/metrics/events?start=${iso(0)}&end=${iso(86400)}&period=1`),
      400,
      'validation_error',
      'TOO_MANY_BUCKETS',
      'period',
    );
    expectError(
      await call(server.url, org.key, 'GET', `${base}&event_types=${enc('["message.nope"]')}`),
      400,
      'validation_error',
      'INVALID_TYPES',
      'event_types',
    );
    expectError(
      await call(server.url, org.key, 'GET', `${base}&event_types=${enc('["unterminated')}`),
      400,
      'validation_error',
      'INVALID_TYPES',
      'event_types',
    );
    expectError(
      await call(server.url, org.key, 'GET', `${base}&limit=0`),
      400,
      'validation_error',
      'INVALID_LIMIT',
      'limit',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(a)}/metrics/usage?usage_types=${enc('["pod_count"]')}`),
      400,
      'validation_error',
      'USAGE_TYPE_NOT_AVAILABLE',
      'usage_types',
    );
    const sdk = await org.client.metrics.queryUsage({ usageTypes: ['domain_count'] }).catch((e: unknown) => e);
    expect(sdk).toBeInstanceOf(AgentMailError);
    expect((sdk as AgentMailError).statusCode).toBe(400);
    // Another organization's inbox and pod: 404, never counts.
    expectError(
      await call(server.url, other.key, 'GET', `/v0/inboxes/${enc(a)}/metrics/events`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, other.key, 'GET', `/v0/pods/${enc(podId)}/metrics/usage`),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'GET', '/v0/pods/pod_nope/metrics/events'),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    expectError(
      await call(server.url, undefined, 'GET', '/v0/metrics/usage'),
      401,
      'authentication_error',
      'MISSING_API_KEY',
    );
  });

  it('lists label changes of an inbox as inboxes.events, newest first, with pages', async () => {
    const message = (await org.client.inboxes.messages.list(a)).messages[0];
    if (!message) throw new Error('a holds no message');
    const firstAt = clock.now();
    await org.client.inboxes.messages.update(a, message.messageId, { addLabels: ['important'] });
    clock.advance(1000);
    await org.client.inboxes.messages.update(a, message.messageId, {
      addLabels: ['done'],
      removeLabels: ['important'],
    });
    // A change that changes nothing records nothing.
    await org.client.inboxes.messages.update(a, message.messageId, { addLabels: ['done'] });
    const event = (label: string, eventType: string, eventAt: Date) => ({
      organizationId: org.organizationId,
      podId,
      inboxId: a,
      eventId: expect.stringMatching(/^evt_/),
      eventType,
      messageId: message.messageId,
      label,
      eventAt,
      createdAt: eventAt,
    });
    const first = await org.client.inboxes.events.list(a, { limit: 2 });
    expect(first).toEqual({
      count: 2,
      limit: 2,
      nextPageToken: expect.any(String),
      events: expect.arrayContaining([
        event('done', 'label.added', clock.now()),
        event('important', 'label.removed', clock.now()),
      ]),
    });
    const rest = await org.client.inboxes.events.list(a, { limit: 2, pageToken: first.nextPageToken as string });
    expect(rest).toEqual({ count: 1, limit: 2, events: [event('important', 'label.added', firstAt)] });
    const all = [...first.events, ...rest.events];
    expect((await org.client.inboxes.events.list(a, { ascending: true })).events.map((e) => e.eventId)).toEqual(
      all.map((e) => e.eventId).reverse(),
    );
    // Message events (message.sent …) are not inbox events; other inboxes have none.
    expect((await org.client.inboxes.events.list(b)).events).toEqual([]);
    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(a)}/events?limit=1`);
    expect(Object.keys(raw.body.events[0]).sort()).toEqual([
      'created_at',
      'event_at',
      'event_id',
      'event_type',
      'inbox_id',
      'label',
      'message_id',
      'organization_id',
      'pod_id',
    ]);
    expectError(
      await call(server.url, other.key, 'GET', `/v0/inboxes/${enc(a)}/events`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(a)}/events?page_token=bad`),
      400,
      'validation_error',
      'INVALID_PAGE_TOKEN',
      'page_token',
    );
  });
});
