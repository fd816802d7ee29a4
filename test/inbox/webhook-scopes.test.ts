import type { AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPod } from '../../src/inbox/pods/pod.repository.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { call, enc, expectError, organization, unique } from './fixtures.js';

type Org = Awaited<ReturnType<typeof organization>>;

/** The events a webhook was handed (its delivery jobs, written in the transaction of each event). */
async function eventTypesFor(
  server: InboxTestServer,
  webhookId: string,
): Promise<{ type: string; inbox: string | null }[]> {
  const db = server.service.runtime.services.db;
  const jobs = await db
    .selectFrom('jobs')
    .select(['payload'])
    .where('queue', '=', 'webhook.deliver')
    .orderBy('id')
    .execute();
  const ids = jobs
    .map((j) => JSON.parse(j.payload) as { webhook_id: string; event_id: string })
    .filter((j) => j.webhook_id === webhookId)
    .map((j) => j.event_id);
  if (!ids.length) return [];
  const events = await db
    .selectFrom('events')
    .select(['event_type', 'inbox_id', 'event_id'])
    .where('event_id', 'in', ids)
    .orderBy('event_id')
    .execute();
  return events.map((e) => ({ type: e.event_type, inbox: e.inbox_id }));
}

/** inboxes.webhooks and pods.webhooks (webhooks limited to a scope), and custom delivery headers, through agentmail 0.5.27. */
describe.each(dialects)('%s: webhook scopes and headers', (dialect) => {
  let server: InboxTestServer;
  let receiver: WebhookReceiver;
  let org: Org;
  let other: Org;
  let a: string;
  let b: string;
  let podId: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    receiver = await startWebhookReceiver();
    org = await organization(server, [unique('wa'), unique('wb')]);
    other = await organization(server, [unique('wo')]);
    [a, b] = org.inboxes as [string, string];
    podId = (await org.client.inboxes.get(a)).podId;
  });
  afterAll(async () => {
    await receiver.stop();
    await server.close();
  });

  it('an inbox webhook sees only its inbox, carries its custom headers next to a valid signature, and never returns their values', async () => {
    const created = await org.client.inboxes.webhooks.create(a, {
      url: receiver.url('/inbox-a'),
      eventTypes: ['message.received'],
      clientId: unique('c'),
      headers: { 'X-Tenant': 'tenant-42', Authorization: 'Bearer downstream' },
    });
    expect(created).toEqual({
      webhookId: expect.stringMatching(/^ep_/),
      url: receiver.url('/inbox-a'),
      eventTypes: ['message.received'],
      secret: expect.stringMatching(/^whsec_/),
      enabled: true,
      createdAt: expect.any(Date),
      updatedAt: expect.any(Date),
      clientId: expect.any(String),
    });
    receiver.trust('/inbox-a', created.secret);
    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(a)}/webhooks/${created.webhookId}`);
    expect(Object.keys(raw.body).sort()).toEqual([
      'client_id',
      'created_at',
      'enabled',
      'event_types',
      'secret',
      'updated_at',
      'url',
      'webhook_id',
    ]);
    expect(JSON.stringify(raw.body)).not.toContain('tenant-42');
    expect(await org.client.inboxes.webhooks.getHeaders(a, created.webhookId)).toEqual({
      headerNames: ['Authorization', 'X-Tenant'],
    });
    expect(await org.client.webhooks.getHeaders(created.webhookId)).toEqual({
      headerNames: ['Authorization', 'X-Tenant'],
    });

    await org.client.inboxes.messages.send(b, { to: a, subject: 'to a', text: 'x' });
    await org.client.inboxes.messages.send(a, { to: b, subject: 'to b', text: 'x' });
    expect(await eventTypesFor(server, created.webhookId)).toEqual([{ type: 'message.received', inbox: a }]);
    // Filters set through the organization route only narrow it: its scope stays its inbox.
    await org.client.webhooks.update(created.webhookId, { addInboxIds: [b] });
    await org.client.inboxes.messages.send(a, { to: b, subject: 'to b again', text: 'x' });
    expect(await eventTypesFor(server, created.webhookId)).toEqual([{ type: 'message.received', inbox: a }]);
    await org.client.webhooks.update(created.webhookId, { removeInboxIds: [b] });

    await receiver.waitFor(1);
    const got = receiver.received.find((r) => r.path === '/inbox-a');
    expect(got?.headers['x-tenant']).toBe('tenant-42');
    expect(got?.headers.authorization).toBe('Bearer downstream');
    expect(got?.svix).toBe(true);
    expect(got?.standard).toBe(true);
    expect(JSON.parse(got?.body ?? '{}')).toMatchObject({
      event_type: 'message.received',
      message: { inbox_id: a, subject: 'to a' },
    });

    expect(await org.client.inboxes.webhooks.list(a)).toEqual({
      count: 1,
      limit: 50,
      webhooks: [expect.objectContaining({ webhookId: created.webhookId })],
    });
    expect((await org.client.inboxes.webhooks.list(b)).webhooks).toEqual([]);
    // A pod lists the webhooks of its inboxes too (as a pod key sees them).
    expect((await org.client.pods.webhooks.list(podId)).webhooks.map((w) => w.webhookId)).toEqual([created.webhookId]);
    expect((await org.client.webhooks.list()).webhooks.map((w) => w.webhookId)).toContain(created.webhookId);

    const updated = await org.client.inboxes.webhooks.update(a, created.webhookId, {
      eventTypes: ['message.received', 'message.sent'],
    });
    expect(updated.eventTypes).toEqual(['message.received', 'message.sent']);
    await org.client.inboxes.webhooks.delete(a, created.webhookId);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/webhooks/${created.webhookId}`),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
  });

  it('a pod webhook sees only the inboxes of its pod, narrowed by inbox_ids of that pod', async () => {
    // A second pod (pods.create belongs to the pods issue): written as the service writes one, with an inbox moved into it.
    const db = server.service.runtime.services.db;
    const otherPod = `pod_${unique('p')}`;
    await insertPod(db, {
      id: otherPod,
      organizationId: org.organizationId,
      name: 'second',
      createdAt: new Date().toISOString(),
    });
    const moved = await org.client.inboxes.create({ username: unique('moved') });
    await db.updateTable('inboxes').set({ pod_id: otherPod }).where('inbox_id', '=', moved.inboxId).execute();

    const hook = await org.client.pods.webhooks.create(podId, {
      url: receiver.url('/pod'),
      eventTypes: ['message.received'],
    });
    expect(hook).toEqual({
      webhookId: expect.stringMatching(/^ep_/),
      url: receiver.url('/pod'),
      eventTypes: ['message.received'],
      secret: expect.any(String),
      enabled: true,
      createdAt: expect.any(Date),
      updatedAt: expect.any(Date),
    });
    const narrow = await org.client.pods.webhooks.create(podId, {
      url: receiver.url('/pod-b'),
      eventTypes: ['message.received'],
      inboxIds: [b],
    });
    expect(narrow.inboxIds).toEqual([b]);
    expect((await org.client.pods.webhooks.list(podId)).webhooks.map((w) => w.webhookId).sort()).toEqual(
      [hook.webhookId, narrow.webhookId].sort(),
    );
    expect((await org.client.pods.webhooks.list(otherPod)).webhooks).toEqual([]);

    await org.client.inboxes.messages.send(moved.inboxId, { to: [a, b], subject: 'fan', text: 'x' });
    await org.client.inboxes.messages.send(a, { to: moved.inboxId, subject: 'into the other pod', text: 'x' });
    expect(
      (await eventTypesFor(server, hook.webhookId)).sort((x, y) => (x.inbox ?? '').localeCompare(y.inbox ?? '')),
    ).toEqual(
      [
        { type: 'message.received', inbox: a },
        { type: 'message.received', inbox: b },
      ].sort((x, y) => x.inbox.localeCompare(y.inbox)),
    );
    expect(await eventTypesFor(server, narrow.webhookId)).toEqual([{ type: 'message.received', inbox: b }]);

    // Inboxes outside the pod cannot be added, through create or update.
    expectError(
      await call(server.url, org.key, 'POST', `/v0/pods/${enc(podId)}/webhooks`, {
        url: receiver.url('/x'),
        event_types: ['message.received'],
        inbox_ids: [moved.inboxId],
      }),
      400,
      'validation_error',
      'UNKNOWN_INBOX_ID',
      'inbox_ids',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/pods/${enc(podId)}/webhooks/${narrow.webhookId}`, {
        add_inbox_ids: [moved.inboxId],
      }),
      400,
      'validation_error',
      'UNKNOWN_INBOX_ID',
      'add_inbox_ids',
    );
    const widened = await org.client.pods.webhooks.update(podId, narrow.webhookId, {
      addInboxIds: [a],
      removeInboxIds: [b],
    });
    expect(widened.inboxIds).toEqual([a]);
    // A pod webhook is not an inbox webhook, nor the other pod's.
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(a)}/webhooks/${hook.webhookId}`),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/pods/${enc(otherPod)}/webhooks/${hook.webhookId}`),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
    await org.client.pods.webhooks.delete(podId, hook.webhookId);
    await org.client.pods.webhooks.delete(podId, narrow.webhookId);
  });

  it('updateHeaders sets, replaces and removes headers; the signature and framing headers cannot be touched; bad names and values answer 400 without echoing the value', async () => {
    const hook = await org.client.webhooks.create({
      url: receiver.url('/h'),
      eventTypes: ['message.sent'],
      headers: { 'X-One': '1' },
    });
    await org.client.webhooks.updateHeaders(hook.webhookId, {
      headers: { 'x-one': 'uno', 'X-Two': 'two words\tand tab' },
    });
    expect(await org.client.webhooks.getHeaders(hook.webhookId)).toEqual({ headerNames: ['x-one', 'X-Two'] });
    await org.client.webhooks.updateHeaders(hook.webhookId, { removeHeaders: ['X-ONE'] });
    expect(await org.client.webhooks.getHeaders(hook.webhookId)).toEqual({ headerNames: ['X-Two'] });
    const stored = await server.service.runtime.services.db
      .selectFrom('webhooks')
      .select('headers')
      .where('webhook_id', '=', hook.webhookId)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(stored.headers ?? '{}')).toEqual({ 'X-Two': 'two words\tand tab' });

    const patch = (body: unknown) => call(server.url, org.key, 'PATCH', `/v0/webhooks/${hook.webhookId}/headers`, body);
    for (const name of ['Svix-Signature', 'webhook-id', 'Content-Type', 'Host', 'Content-Length'])
      expectError(await patch({ headers: { [name]: 'x' } }), 400, 'validation_error', 'RESERVED_HEADER', 'headers');
    expectError(
      await patch({ remove_headers: ['svix-id'] }),
      400,
      'validation_error',
      'RESERVED_HEADER',
      'remove_headers',
    );
    for (const name of ['Bad Name', 'X:Colon', 'X\u00e9', ''])
      expectError(await patch({ headers: { [name]: 'x' } }), 400, 'validation_error', 'INVALID_HEADER', 'headers');
    for (const value of ['secret\r\nX-Injected: 1', 'secret\nx', 'secret\u0000', ' leading', '', 'caf\u00e9']) {
      const res = await patch({ headers: { 'X-Token': value } });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).not.toContain('secret');
    }
    expectError(
      await patch({ headers: { 'X-A': '1' }, remove_headers: ['x-a'] }),
      400,
      'validation_error',
      'CONFLICTING_HEADERS',
      'remove_headers',
    );
    expectError(await patch({}), 400, 'validation_error', 'NO_HEADER_CHANGE', 'headers');
    expectError(await patch({ headers: {} }), 400, 'validation_error', 'EMPTY_HEADERS', 'headers');
    expectError(
      await patch({ headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])) }),
      400,
      'validation_error',
      'TOO_MANY_HEADERS',
      'headers',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/webhooks', {
        url: receiver.url('/h2'),
        headers: { 'svix-timestamp': '1' },
      }),
      400,
      'validation_error',
      'RESERVED_HEADER',
      'headers',
    );
    expect(await org.client.webhooks.getHeaders(hook.webhookId)).toEqual({ headerNames: ['X-Two'] });
    const sdk = await org.client.webhooks
      .updateHeaders(hook.webhookId, { headers: { 'Webhook-Signature': 'forged' } })
      .catch((e: unknown) => e);
    expect((sdk as AgentMailError).statusCode).toBe(400);
    expectError(
      await call(server.url, org.key, 'GET', '/v0/webhooks/ep_missing/headers'),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
    await org.client.webhooks.delete(hook.webhookId);
  });

  it('never shows another organization a scope, a webhook or its headers (404)', async () => {
    const hook = await org.client.inboxes.webhooks.create(a, {
      url: receiver.url('/iso'),
      eventTypes: ['message.received'],
      headers: { 'X-Secret': 'v' },
    });
    for (const [method, path, body] of [
      ['GET', `/v0/inboxes/${enc(a)}/webhooks`],
      ['POST', `/v0/inboxes/${enc(a)}/webhooks`, { url: receiver.url('/x'), event_types: ['message.received'] }],
      ['GET', `/v0/inboxes/${enc(a)}/webhooks/${hook.webhookId}`],
      ['PATCH', `/v0/inboxes/${enc(a)}/webhooks/${hook.webhookId}`, { event_types: ['message.sent'] }],
      ['DELETE', `/v0/inboxes/${enc(a)}/webhooks/${hook.webhookId}`],
      ['GET', `/v0/inboxes/${enc(a)}/webhooks/${hook.webhookId}/headers`],
      ['PATCH', `/v0/inboxes/${enc(a)}/webhooks/${hook.webhookId}/headers`, { headers: { 'X-Secret': 'stolen' } }],
    ] as const) {
      expectError(await call(server.url, other.key, method, path, body), 404, 'not_found', 'INBOX_NOT_FOUND');
    }
    for (const [method, path] of [
      ['GET', `/v0/pods/${enc(podId)}/webhooks`],
      ['GET', `/v0/pods/${enc(podId)}/webhooks/${hook.webhookId}/headers`],
    ] as const) {
      expectError(await call(server.url, other.key, method, path), 404, 'not_found', 'POD_NOT_FOUND');
    }
    expectError(
      await call(server.url, other.key, 'GET', `/v0/webhooks/${hook.webhookId}/headers`),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
    expectError(
      await call(server.url, other.key, 'PATCH', `/v0/webhooks/${hook.webhookId}/headers`, {
        remove_headers: ['X-Secret'],
      }),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
    // The inbox route of another inbox of the same organization does not find it either.
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(b)}/webhooks/${hook.webhookId}`),
      404,
      'not_found',
      'WEBHOOK_NOT_FOUND',
    );
    expect(await org.client.inboxes.webhooks.getHeaders(a, hook.webhookId)).toEqual({ headerNames: ['X-Secret'] });
    // inbox_ids and pod_ids are no fields of an inbox webhook: left out (as every unknown field), the scope stays the path's.
    const stray = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(a)}/webhooks`, {
      url: receiver.url('/x'),
      inbox_ids: [b],
      pod_ids: ['pod_x'],
    });
    expect(stray.status).toBe(201);
    expect(stray.body.inbox_ids).toBeUndefined();
    expect(stray.body.pod_ids).toBeUndefined();
    expect((await org.client.inboxes.webhooks.list(a)).webhooks.map((w) => w.webhookId)).toContain(
      stray.body.webhook_id,
    );
  });
});
