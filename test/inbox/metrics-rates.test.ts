import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { bearerKey, call, enc, expectError, organization, unique } from './fixtures.js';

const T0 = new Date('2026-11-20T10:00:00.000Z');
const iso = (seconds: number) => new Date(T0.getTime() + seconds * 1000).toISOString();

/** metrics.queryRates at the organization, pod and inbox levels, from the service's event counts. */
describe.each(dialects)('%s: bounce and complaint rates', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let a: string;
  let b: string;
  let podId: string;

  beforeAll(async () => {
    const clock = fixedClock(T0);
    server = await startInboxServer({ dialect, clock });
    org = await organization(server, [unique('ra'), unique('rb')]);
    [a, b] = org.inboxes as [string, string];
    podId = (await org.client.inboxes.get(a)).podId;
    // t = 0: a sends four messages, one of them to a local address without an inbox (a bounce).
    for (const to of [b, b, b, `${unique('nobody')}@inbox.test`])
      await org.client.inboxes.messages.send(a, { to, subject: 's', text: 't' });
    // t = 2 h: b sends one that arrives.
    clock.advance(7200_000);
    await org.client.inboxes.messages.send(b, { to: a, subject: 's', text: 't' });
  });
  afterAll(async () => {
    await server?.close();
  });

  const rates = (key: string, prefix: string, query: string) =>
    call(server.url, key, 'GET', `${prefix}/metrics/rates?${query}`);

  it('answers rolling rates per window, with the send count, at every level; null where nothing was sent', async () => {
    const query = `start=${iso(-3600)}&end=${iso(3 * 3600)}&period=3600&window=7200`;
    const res = await rates(org.key, '/v0', query);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['bounce', 'complaint']);
    // Points at the end of each hour; each looks two hours back.
    expect(res.body.bounce).toEqual([
      { timestamp: iso(0), rate: null, sent: 0 },
      { timestamp: iso(3600), rate: 0.25, sent: 4 },
      { timestamp: iso(7200), rate: 0.25, sent: 4 },
      { timestamp: iso(10800), rate: 0, sent: 1 },
    ]);
    expect(res.body.complaint.map((p: { rate: number | null }) => p.rate)).toEqual([null, 0, 0, 0]);

    const pod = await rates(org.key, `/v0/pods/${podId}`, `${query}&rate_types=bounce`);
    expect(Object.keys(pod.body)).toEqual(['bounce']);
    expect(pod.body.bounce).toEqual(res.body.bounce);
    const inboxB = await rates(org.key, `/v0/inboxes/${enc(b)}`, `${query}&rate_types=["bounce"]`);
    // b's send at 2 h falls in the windows that end after it: [1 h, 3 h) only.
    expect(inboxB.body.bounce.map((p: { sent: number }) => p.sent)).toEqual([0, 0, 0, 1]);
    const inboxA = await rates(org.key, `/v0/inboxes/${enc(a)}`, `${query}&descending=true&limit=2`);
    expect(inboxA.body.bounce).toEqual([
      { timestamp: iso(10800), rate: null, sent: 0 },
      { timestamp: iso(7200), rate: 0.25, sent: 4 },
    ]);
    // Defaults: the last day, hourly, over a day, up to now (2 h: b's send of this second is not in yet).
    const defaults = await rates(org.key, '/v0', '');
    expect(defaults.body.bounce).toHaveLength(24);
    expect(defaults.body.bounce.at(-1)).toEqual({ timestamp: iso(7200), rate: 0.25, sent: 4 });
  });

  it('keeps scoped keys to their scope and answers bad input in the error format', async () => {
    const inboxKey = bearerKey(await org.client.inboxes.apiKeys.create(b, { name: 'b only' }));
    expect((await rates(inboxKey.apiKey, `/v0/inboxes/${enc(b)}`, '')).status).toBe(200);
    expectError(await rates(inboxKey.apiKey, `/v0/inboxes/${enc(a)}`, ''), 404, 'not_found', 'INBOX_NOT_FOUND');
    expectError(await rates(inboxKey.apiKey, '/v0', ''), 404, 'not_found', 'METRICS_NOT_FOUND');
    const other = await organization(server);
    expectError(await rates(other.key, `/v0/pods/${podId}`, ''), 404, 'not_found', 'POD_NOT_FOUND');
    const noMetrics = bearerKey(
      await org.client.apiKeys.create({ name: 'no metrics', permissions: { inboxRead: true } }),
    );
    expectError(await rates(noMetrics.apiKey, '/v0', ''), 403, 'permission_error', 'PERMISSION_DENIED');

    for (const [query, code, field] of [
      ['period=59', 'INVALID_PERIOD', 'period'],
      ['period=86401', 'INVALID_PERIOD', 'period'],
      ['period=3600&window=5400', 'INVALID_WINDOW', 'window'],
      ['period=3600&window=1800', 'INVALID_WINDOW', 'window'],
      ['window=2678400&period=86400', 'INVALID_WINDOW', 'window'],
      ['period=60&window=60&start=2026-11-19T00:00:00Z&end=2026-11-20T00:00:00Z', 'TOO_MANY_BUCKETS', 'period'],
      ['rate_types=bounce,opens', 'INVALID_TYPES', 'rate_types'],
      ['rate_types=[1]', 'INVALID_TYPES', 'rate_types'],
      ['start=yesterday', 'INVALID_DATE', 'start'],
      [`start=${iso(10)}&end=${iso(0)}`, 'INVALID_RANGE', 'start'],
      ['limit=0', 'INVALID_LIMIT', 'limit'],
      ['period=abc', 'INVALID_VALUE', 'period'],
    ] as const)
      expectError(await rates(org.key, '/v0', query), 400, 'validation_error', code, field);
  });
});
