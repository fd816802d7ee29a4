import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { createHook, deliveryLog, newTenant, storedPayload } from '../support/inbox-webhooks.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { call, eventsOf, expectError, secretOf } from './fixtures.js';

/**
 * "Send a test event" (decision 0049): POST /v0/webhooks/{id}/test queues one webhook.test event
 * for that webhook alone, delivered through the ordinary path (signed, retried, logged), whatever
 * its event type and inbox filters; with the other webhook routes' scope and permission checks.
 * The worker does not run on its own here: `drain()` runs what is due, on a fixed clock.
 */
describe.each(dialects)('%s: webhook test events', (dialect) => {
  const clock = fixedClock(new Date());
  let server: InboxTestServer;
  let receiver: WebhookReceiver;
  let path = 0;
  const nextPath = () => `/test-hook/${++path}`;
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
    for (const r of receiver.received) {
      expect(r.svix, r.path).toBe(true);
      expect(r.standard, r.path).toBe(true);
    }
  });

  it('delivers a signed webhook.test to that webhook alone, whatever its filters, and logs it in its deliveries', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const other = nextPath();
    // Filtered to an event type and an inbox that will never see a webhook.test: the test goes anyway.
    const hook = await createHook(server, receiver, tenant, p, {
      event_types: ['message.bounced'],
      inbox_ids: [tenant.inboxId],
    });
    await createHook(server, receiver, tenant, other);
    receiver.script(p, { status: 200, body: 'got it' });

    const answer = await call(server.url, tenant.key, 'POST', `/v0/webhooks/${hook.webhook_id}/test`);
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      webhook_id: hook.webhook_id,
      event_id: expect.stringMatching(/^evt_/),
      event_type: 'webhook.test',
      created_at: clock.now().toISOString(),
    });
    expect(await drain()).toBe(1);

    const [req, ...more] = at(p);
    expect(more).toHaveLength(0);
    expect(at(other)).toHaveLength(0);
    expect(req?.body).toBe(await storedPayload(server, answer.body.event_id));
    expect(JSON.parse(req?.body ?? '')).toEqual({
      type: 'event',
      event_type: 'webhook.test',
      event_id: answer.body.event_id,
      webhook_id: hook.webhook_id,
      created_at: clock.now().toISOString(),
    });
    expect(req?.headers['svix-id']).toBe(answer.body.event_id);

    const log = await deliveryLog(server, tenant.key, hook.webhook_id, `?event_id=${answer.body.event_id}`);
    expect(log.body.deliveries).toEqual([
      expect.objectContaining({
        event_id: answer.body.event_id,
        event_type: 'webhook.test',
        attempt: 1,
        outcome: 'delivered',
        status_code: 200,
        response: 'got it',
      }),
    ]);
    // Not an event of mail: no inbox's events and no metrics count it.
    expect(await eventsOf(server, { inboxId: tenant.inboxId })).toEqual([]);
    const metrics = await call(server.url, tenant.key, 'GET', '/v0/metrics/events');
    expect(metrics.status).toBe(200);
    expect(JSON.stringify(metrics.body)).not.toContain('webhook.test');
  });

  it('retries a failed test like any delivery, attempt by attempt in the log', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    receiver.script(p, { status: 503, body: 'busy' }, { status: 204 });
    const answer = await call(server.url, tenant.key, 'POST', `/v0/webhooks/${hook.webhook_id}/test`);
    expect(answer.status).toBe(202);
    expect(await drain()).toBe(1);
    clock.advance(60 * 60 * 1000);
    expect(await drain()).toBe(1);
    expect(at(p).map((r) => r.status)).toEqual([503, 204]);
    const log = await deliveryLog(server, tenant.key, hook.webhook_id, '?ascending=true');
    expect(
      log.body.deliveries.map((d: { attempt: number; outcome: string; status_code: number }) => [
        d.attempt,
        d.outcome,
        d.status_code,
      ]),
    ).toEqual([
      [1, 'retrying', 503],
      [2, 'delivered', 204],
    ]);
  });

  it("refuses an unknown webhook, another organization's, a disabled one, and a key without the update permission", async () => {
    const tenant = await newTenant(server);
    const stranger = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    const test = (key: string | undefined, id: string) => call(server.url, key, 'POST', `/v0/webhooks/${id}/test`);

    expectError(await test(tenant.key, 'ep_unknown'), 404, 'not_found', 'WEBHOOK_NOT_FOUND', 'webhook_id');
    expectError(await test(stranger.key, hook.webhook_id), 404, 'not_found', 'WEBHOOK_NOT_FOUND', 'webhook_id');
    expectError(await test(undefined, hook.webhook_id), 401, 'authentication_error', 'MISSING_API_KEY');

    const client = server.client(tenant.key);
    const reader = secretOf(await client.apiKeys.create({ name: 'reader', permissions: { webhookRead: true } }));
    const refused = await test(reader, hook.webhook_id);
    expect(refused.status).toBe(403);
    expect(refused.body.error.type).toBe('permission_error');
    // An inbox key of another inbox does not see an organization's webhook.
    const second = await client.inboxes.create({});
    const inboxKey = secretOf(await client.inboxes.apiKeys.create(second.inboxId, { name: 'inbox' }));
    expectError(await test(inboxKey, hook.webhook_id), 404, 'not_found', 'WEBHOOK_NOT_FOUND', 'webhook_id');

    expect(
      (await call(server.url, tenant.key, 'PATCH', `/v0/webhooks/${hook.webhook_id}`, { enabled: false })).status,
    ).toBe(200);
    expectError(await test(tenant.key, hook.webhook_id), 409, 'conflict', 'WEBHOOK_DISABLED', 'webhook_id');

    // None of the refusals queued anything.
    expect(await drain()).toBe(0);
    expect(at(p)).toHaveLength(0);
  });

  it('a test queued for a webhook that is disabled or deleted before it runs sends nothing', async () => {
    const tenant = await newTenant(server);
    const p = nextPath();
    const hook = await createHook(server, receiver, tenant, p);
    expect((await call(server.url, tenant.key, 'POST', `/v0/webhooks/${hook.webhook_id}/test`)).status).toBe(202);
    expect((await call(server.url, tenant.key, 'DELETE', `/v0/webhooks/${hook.webhook_id}`)).status).toBe(204);
    await drain();
    expect(at(p)).toHaveLength(0);
  });
});
