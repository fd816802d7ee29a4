import { AgentMail, type AgentMailError } from 'agentmail';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPod } from '../../src/inbox/pods/pod.repository.js';
import { callInbox, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

const call = callInbox;

describe.each(dialects)('%s: webhooks', (dialect) => {
  let server: InboxTestServer;
  let key: string;
  let organizationId: string;
  let podId: string;
  let otherKey: string;
  let otherPodId: string;
  let inboxA: string;
  let inboxB: string;
  let foreignInbox: string;
  let n = 0;
  const hookUrl = () => `https://hooks.example.com/h/${++n}`;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    ({ key, organizationId, podId } = await server.createKey());
    const other = await server.createKey();
    otherKey = other.key;
    otherPodId = other.podId;
    inboxA = (await server.client(key).inboxes.create({ username: 'hook-a' })).inboxId;
    inboxB = (await server.client(key).inboxes.create({ username: 'hook-b' })).inboxId;
    foreignInbox = (await server.client(otherKey).inboxes.create({ username: 'hook-foreign' })).inboxId;
  });
  afterAll(() => server.close());

  describe('create', () => {
    it('through the SDK: an ep_ id, a whsec_ secret the svix library accepts, enabled by default', async () => {
      const hook = await server
        .client(key)
        .webhooks.create({ url: hookUrl(), eventTypes: ['message.received'], inboxIds: [inboxA] });
      expect(hook.webhookId).toMatch(/^ep_[0-9a-f]{32}$/);
      expect(hook.secret).toMatch(SECRET);
      expect(Buffer.from(hook.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
      expect(() => new SvixWebhook(hook.secret)).not.toThrow();
      expect(hook).toMatchObject({ enabled: true, eventTypes: ['message.received'], inboxIds: [inboxA] });
      expect(hook.createdAt).toBeInstanceOf(Date);
      expect(hook.updatedAt).toBeInstanceOf(Date);
    });

    it('answers 201 with the wire shape; every webhook has its own secret', async () => {
      const url = hookUrl();
      const res = await call(server, key, 'POST', '/v0/webhooks', {
        url,
        event_types: ['message.sent', 'message.received', 'message.sent'],
        inbox_ids: [inboxB.toUpperCase()],
        pod_ids: [podId],
        client_id: 'wire-1',
        enabled: true,
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        webhook_id: expect.stringMatching(/^ep_/),
        url,
        event_types: ['message.sent', 'message.received'],
        pod_ids: [podId],
        inbox_ids: [inboxB],
        secret: expect.stringMatching(SECRET),
        enabled: true,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
        client_id: 'wire-1',
      });
      const again = await call(server, key, 'POST', '/v0/webhooks', { url });
      expect(again.body?.secret).not.toBe(res.body?.secret);
      // Omitted filters are absent on the wire (= all), not empty lists.
      expect(Object.keys(again.body ?? {}).sort()).toEqual([
        'created_at',
        'enabled',
        'secret',
        'updated_at',
        'url',
        'webhook_id',
      ]);
    });

    it('accepts enabled: false (which the SDK cannot send) and treats empty event_types as all', async () => {
      const res = await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), enabled: false, event_types: [] });
      expect(res.status).toBe(201);
      expect(res.body?.enabled).toBe(false);
      expect(res.body?.event_types).toBeUndefined();
    });

    it('a repeated client_id returns the first webhook with 200, whatever else the body says; client_ids are per organization', async () => {
      const first = await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), client_id: 'idem-hook' });
      const again = await call(server, key, 'POST', '/v0/webhooks', {
        url: hookUrl(),
        client_id: 'idem-hook',
        event_types: ['message.sent'],
      });
      expect([first.status, again.status]).toEqual([201, 200]);
      expect(again.body).toEqual(first.body);
      const viaSdk = await server
        .client(key)
        .webhooks.create({ url: hookUrl(), eventTypes: [], clientId: 'idem-hook' });
      expect(viaSdk.webhookId).toBe(first.body?.webhook_id);
      expect(
        (await call(server, otherKey, 'POST', '/v0/webhooks', { url: hookUrl(), client_id: 'idem-hook' })).status,
      ).toBe(201);
    });

    it('concurrent creates with one client_id make one webhook', async () => {
      const results = await Promise.all(
        [1, 2, 3, 4].map(() => call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), client_id: 'race-hook' })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 201]);
      expect(new Set(results.map((r) => r.body?.webhook_id)).size).toBe(1);
    });

    it.each([
      ['no url', {}, 'url', 'REQUIRED'],
      ['an empty url', { url: '' }, 'url', 'INVALID_VALUE'],
      ['a relative url', { url: '/hook' }, 'url', 'INVALID_URL'],
      ['not a url', { url: 'hooks example com' }, 'url', 'INVALID_URL'],
      ['an ftp url', { url: 'ftp://hooks.example.com/x' }, 'url', 'INVALID_URL'],
      ['a javascript url', { url: 'javascript:alert(1)' }, 'url', 'INVALID_URL'],
      ['credentials in the url', { url: 'https://user:pass@hooks.example.com/x' }, 'url', 'INVALID_URL'],
      ['a user name in the url', { url: 'https://user@hooks.example.com/x' }, 'url', 'INVALID_URL'],
      ['a newline inside the url', { url: 'https://hooks.exa\nmple.com/x' }, 'url', 'INVALID_URL'],
      ['a url over 2048 characters', { url: `https://hooks.example.com/${'x'.repeat(2030)}` }, 'url', 'INVALID_VALUE'],
      [
        'an unknown event type',
        { url: 'https://hooks.example.com/', event_types: ['message.received', 'message.exploded'] },
        'event_types',
        'INVALID_EVENT_TYPE',
      ],
      [
        'a non-string event type',
        { url: 'https://hooks.example.com/', event_types: [5] },
        'event_types',
        'INVALID_VALUE',
      ],
      [
        'an unknown inbox',
        { url: 'https://hooks.example.com/', inbox_ids: ['nobody@inbox.test'] },
        'inbox_ids',
        'UNKNOWN_INBOX_ID',
      ],
      [
        'an unknown pod',
        { url: 'https://hooks.example.com/', pod_ids: ['00000000-0000-0000-0000-000000000000'] },
        'pod_ids',
        'UNKNOWN_POD_ID',
      ],
      [
        '11 inbox ids',
        { url: 'https://hooks.example.com/', inbox_ids: Array.from({ length: 11 }, (_, i) => `x${i}@inbox.test`) },
        'inbox_ids',
        'TOO_MANY_IDS',
      ],
      [
        '11 pod ids',
        { url: 'https://hooks.example.com/', pod_ids: Array.from({ length: 11 }, (_, i) => `pod-${i}`) },
        'pod_ids',
        'TOO_MANY_IDS',
      ],
      ['a string for enabled', { url: 'https://hooks.example.com/', enabled: 'yes' }, 'enabled', 'INVALID_VALUE'],
      ['an empty client_id', { url: 'https://hooks.example.com/', client_id: '' }, 'client_id', 'INVALID_VALUE'],
    ])('%s → 400 validation_error', async (_name, body, field, code) => {
      const res = await call(server, key, 'POST', '/v0/webhooks', body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { type: 'validation_error', message: expect.any(String), details: { field, code } },
      });
    });

    it("another organization's inbox or pod is refused like an unknown one", async () => {
      const inbox = await call(server, key, 'POST', '/v0/webhooks', {
        url: hookUrl(),
        inbox_ids: [inboxA, foreignInbox],
      });
      expect(inbox.body?.error).toMatchObject({
        details: { field: 'inbox_ids', code: 'UNKNOWN_INBOX_ID' },
        message: expect.stringContaining(foreignInbox),
      });
      const pod = await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), pod_ids: [otherPodId] });
      expect(pod.body?.error).toMatchObject({ details: { field: 'pod_ids', code: 'UNKNOWN_POD_ID' } });
    });

    it('ten ids are fine, and duplicates count once', async () => {
      const res = await call(server, key, 'POST', '/v0/webhooks', {
        url: hookUrl(),
        inbox_ids: [...Array<string>(12).fill(inboxA), inboxB],
      });
      expect(res.status).toBe(201);
      expect(res.body?.inbox_ids).toEqual([inboxA, inboxB]);
    });

    it('the SDK surfaces a refusal as ValidationError', async () => {
      const err = await server
        .client(key)
        .webhooks.create({ url: 'ftp://x.example.com/', eventTypes: ['message.received'] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentMail.ValidationError);
      expect((err as AgentMailError).statusCode).toBe(400);
    });

    it('needs an API key', async () => {
      expect((await call(server, undefined, 'POST', '/v0/webhooks', { url: hookUrl() })).status).toBe(401);
      expect((await call(server, undefined, 'GET', '/v0/webhooks')).status).toBe(401);
    });
  });

  describe('list', () => {
    let listKey: string;
    let created: string[];

    beforeAll(async () => {
      listKey = (await server.createKey()).key;
      created = [];
      for (let i = 0; i < 5; i++)
        created.push(
          (
            await server
              .client(listKey)
              .webhooks.create({ url: `https://hooks.example.com/list/${i}`, eventTypes: ['message.received'] })
          ).webhookId,
        );
    });

    it('pages newest first with next_page_token, through the SDK', async () => {
      const sdk = server.client(listKey);
      const seen: string[] = [];
      let pageToken: string | undefined;
      const counts: number[] = [];
      do {
        const page = await sdk.webhooks.list({ limit: 2, ...(pageToken ? { pageToken } : {}) });
        counts.push(page.count);
        expect(page.limit).toBe(2);
        seen.push(...page.webhooks.map((w) => w.webhookId));
        expect(page.webhooks.every((w) => SECRET.test(w.secret))).toBe(true);
        pageToken = page.nextPageToken;
      } while (pageToken);
      expect(counts).toEqual([2, 2, 1]);
      expect(seen).toEqual([...created].reverse());
    });

    it('ascending=true pages oldest first; the wire shape has count, limit, webhooks', async () => {
      const first = await call(server, listKey, 'GET', '/v0/webhooks?ascending=true&limit=3');
      expect(first.body).toEqual({
        count: 3,
        limit: 3,
        next_page_token: expect.any(String),
        webhooks: expect.any(Array),
      });
      const second = await call(
        server,
        listKey,
        'GET',
        `/v0/webhooks?limit=3&page_token=${encodeURIComponent(first.body?.next_page_token as string)}`,
      );
      expect(second.body?.next_page_token).toBeUndefined();
      expect(
        [
          ...(first.body?.webhooks as { webhook_id: string }[]),
          ...(second.body?.webhooks as { webhook_id: string }[]),
        ].map((w) => w.webhook_id),
      ).toEqual(created);
    });

    it("defaults to 50 and caps limit at 100; only the caller's webhooks", async () => {
      const all = await call(server, listKey, 'GET', '/v0/webhooks');
      expect([all.body?.count, all.body?.limit]).toEqual([5, 50]);
      expect((await call(server, listKey, 'GET', '/v0/webhooks?limit=1000')).body?.limit).toBe(100);
      const empty = await call(server, (await server.createKey()).key, 'GET', '/v0/webhooks');
      expect(empty.body).toEqual({ count: 0, limit: 50, webhooks: [] });
    });

    it.each([
      ['limit=0', 'limit', 'INVALID_VALUE'],
      ['limit=abc', 'limit', 'INVALID_VALUE'],
      ['page_token=garbage', 'page_token', 'INVALID_PAGE_TOKEN'],
    ])('%s → 400', async (query, field, code) => {
      const res = await call(server, listKey, 'GET', `/v0/webhooks?${query}`);
      expect(res.status).toBe(400);
      expect(res.body?.error).toMatchObject({ type: 'validation_error', details: { field, code } });
    });
  });

  describe('get, replace (PUT), update (PATCH), delete', () => {
    it('get through the SDK returns the secret; another organization gets 404', async () => {
      const hook = await server.client(key).webhooks.create({ url: hookUrl(), eventTypes: ['message.received'] });
      const got = await server.client(key).webhooks.get(hook.webhookId);
      expect(got).toEqual(hook);
      await expect(server.client(otherKey).webhooks.get(hook.webhookId)).rejects.toBeInstanceOf(
        AgentMail.NotFoundError,
      );
      const res = await call(server, otherKey, 'GET', `/v0/webhooks/${hook.webhookId}`);
      expect(res.body).toEqual({
        error: {
          type: 'not_found',
          message: expect.any(String),
          details: { field: 'webhook_id', code: 'WEBHOOK_NOT_FOUND' },
        },
      });
      expect((await call(server, key, 'GET', '/v0/webhooks/ep_missing')).status).toBe(404);
    });

    it('PUT replaces every setting, resets omitted ones to their defaults, keeps id, secret and created_at', async () => {
      const created = (
        await call(server, key, 'POST', '/v0/webhooks', {
          url: hookUrl(),
          event_types: ['message.sent'],
          inbox_ids: [inboxA],
          client_id: 'put-1',
        })
      ).body as Record<string, unknown>;
      await new Promise((r) => setTimeout(r, 5));
      const url = hookUrl();
      const replaced = await call(server, key, 'PUT', `/v0/webhooks/${created.webhook_id as string}`, {
        url,
        enabled: false,
        pod_ids: [podId],
      });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toEqual({
        webhook_id: created.webhook_id,
        url,
        pod_ids: [podId],
        secret: created.secret,
        enabled: false,
        created_at: created.created_at,
        updated_at: expect.stringMatching(ISO),
      });
      expect(replaced.body?.updated_at > (created.created_at as string)).toBe(true);
      expect(await call(server, key, 'GET', `/v0/webhooks/${created.webhook_id as string}`)).toMatchObject({
        body: replaced.body,
      });
      // The client_id was released by the replacement.
      expect((await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), client_id: 'put-1' })).status).toBe(
        201,
      );
    });

    it('PUT validates like create, refuses a client_id of another webhook with 409, and is scoped to the organization', async () => {
      const a = (await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), client_id: 'put-a' })).body as {
        webhook_id: string;
      };
      const b = (await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl() })).body as { webhook_id: string };
      expect(
        (await call(server, key, 'PUT', `/v0/webhooks/${b.webhook_id}`, { url: hookUrl(), client_id: 'put-a' })).body,
      ).toEqual({
        error: {
          type: 'conflict',
          message: expect.any(String),
          details: { field: 'client_id', code: 'CLIENT_ID_TAKEN' },
        },
      });
      expect(
        (await call(server, key, 'PUT', `/v0/webhooks/${a.webhook_id}`, { url: hookUrl(), client_id: 'put-a' })).status,
      ).toBe(200);
      expect(
        (await call(server, key, 'PUT', `/v0/webhooks/${b.webhook_id}`, { event_types: ['message.sent'] })).body?.error
          .details,
      ).toEqual({ field: 'url', code: 'REQUIRED' });
      expect(
        (await call(server, key, 'PUT', `/v0/webhooks/${b.webhook_id}`, { url: 'gopher://x' })).body?.error.details,
      ).toEqual({ field: 'url', code: 'INVALID_URL' });
      expect(
        (await call(server, key, 'PUT', `/v0/webhooks/${b.webhook_id}`, { url: hookUrl(), inbox_ids: [foreignInbox] }))
          .body?.error.details,
      ).toEqual({ field: 'inbox_ids', code: 'UNKNOWN_INBOX_ID' });
      const foreign = await call(server, otherKey, 'PUT', `/v0/webhooks/${b.webhook_id}`, { url: hookUrl() });
      expect(foreign.status).toBe(404);
      expect((await call(server, key, 'GET', `/v0/webhooks/${b.webhook_id}`)).body?.url).not.toBe(hookUrl());
    });

    it('PATCH through the SDK adds and removes inbox and pod ids', async () => {
      const sdk = server.client(key);
      const hook = await sdk.webhooks.create({ url: hookUrl(), eventTypes: ['message.received'], inboxIds: [inboxA] });
      const added = await sdk.webhooks.update(hook.webhookId, { addInboxIds: [inboxB, inboxA], addPodIds: [podId] });
      expect(added).toMatchObject({
        webhookId: hook.webhookId,
        inboxIds: [inboxA, inboxB],
        podIds: [podId],
        secret: hook.secret,
        eventTypes: ['message.received'],
      });
      const removed = await sdk.webhooks.update(hook.webhookId, {
        removeInboxIds: [inboxA, 'never@inbox.test'],
        removePodIds: [podId],
      });
      expect(removed.inboxIds).toEqual([inboxB]);
      expect(removed.podIds).toBeUndefined();
      // Removing the last inbox widens the webhook to every inbox: the filter is gone.
      const none = await sdk.webhooks.update(hook.webhookId, { removeInboxIds: [inboxB] });
      expect(none.inboxIds).toBeUndefined();
      expect(await sdk.webhooks.get(hook.webhookId)).toEqual(none);
    });

    it('PATCH also replaces event_types and enabled; it checks added ids only, and the total', async () => {
      const hook = (await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), inbox_ids: [inboxA] })).body as {
        webhook_id: string;
      };
      const path = `/v0/webhooks/${hook.webhook_id}`;
      expect(
        (await call(server, key, 'PATCH', path, { event_types: ['message.bounced'], enabled: false })).body,
      ).toMatchObject({ event_types: ['message.bounced'], enabled: false, inbox_ids: [inboxA] });
      expect((await call(server, key, 'PATCH', path, { enabled: true, event_types: [] })).body).toMatchObject({
        enabled: true,
        inbox_ids: [inboxA],
      });
      expect((await call(server, key, 'GET', path)).body?.event_types).toBeUndefined();
      expect((await call(server, key, 'PATCH', path, { add_inbox_ids: [foreignInbox] })).body?.error.details).toEqual({
        field: 'add_inbox_ids',
        code: 'UNKNOWN_INBOX_ID',
      });
      expect((await call(server, key, 'PATCH', path, { add_pod_ids: ['nope'] })).body?.error.details).toEqual({
        field: 'add_pod_ids',
        code: 'UNKNOWN_POD_ID',
      });
      expect((await call(server, key, 'PATCH', path, { event_types: ['nope'] })).body?.error.details).toEqual({
        field: 'event_types',
        code: 'INVALID_EVENT_TYPE',
      });
      // Ten inboxes in all: the eleventh is one too many, even when added one at a time.
      const sdk = server.client(key);
      const more: string[] = [];
      for (let i = 0; i < 10; i++) more.push((await sdk.inboxes.create({ username: `patch-many-${i}` })).inboxId);
      expect(
        (await call(server, key, 'PATCH', path, { add_inbox_ids: more.slice(0, 9) })).body?.inbox_ids,
      ).toHaveLength(10);
      expect((await call(server, key, 'PATCH', path, { add_inbox_ids: [more[9]] })).body?.error.details).toEqual({
        field: 'add_inbox_ids',
        code: 'TOO_MANY_IDS',
      });
      expect(
        (await call(server, key, 'PATCH', path, { add_inbox_ids: [more[9]], remove_inbox_ids: [inboxA] })).body
          ?.inbox_ids,
      ).toHaveLength(10);
    });

    it('concurrent PATCHes lose no id', async () => {
      const sdk = server.client(key);
      const hook = await sdk.webhooks.create({ url: hookUrl(), eventTypes: [] });
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push((await sdk.inboxes.create({ username: `patch-race-${i}` })).inboxId);
      await Promise.all(ids.map((id) => sdk.webhooks.update(hook.webhookId, { addInboxIds: [id] })));
      expect([...((await sdk.webhooks.get(hook.webhookId)).inboxIds ?? [])].sort()).toEqual([...ids].sort());
    });

    it("PATCH of another organization's webhook is 404 and changes nothing", async () => {
      const hook = await server.client(key).webhooks.create({ url: hookUrl(), eventTypes: [], inboxIds: [inboxA] });
      await expect(
        server.client(otherKey).webhooks.update(hook.webhookId, { removeInboxIds: [inboxA] }),
      ).rejects.toBeInstanceOf(AgentMail.NotFoundError);
      expect((await server.client(key).webhooks.get(hook.webhookId)).inboxIds).toEqual([inboxA]);
    });

    it('DELETE through the SDK; afterwards 404; another organization cannot delete', async () => {
      const sdk = server.client(key);
      const hook = await sdk.webhooks.create({ url: hookUrl(), eventTypes: [] });
      await expect(server.client(otherKey).webhooks.delete(hook.webhookId)).rejects.toBeInstanceOf(
        AgentMail.NotFoundError,
      );
      const res = await call(server, key, 'DELETE', `/v0/webhooks/${hook.webhookId}`);
      expect([res.status, res.body]).toEqual([204, undefined]);
      await expect(sdk.webhooks.get(hook.webhookId)).rejects.toBeInstanceOf(AgentMail.NotFoundError);
      await expect(sdk.webhooks.delete(hook.webhookId)).rejects.toBeInstanceOf(AgentMail.NotFoundError);
      expect((await call(server, key, 'GET', `/v0/webhooks/${hook.webhookId}/deliveries`)).status).toBe(404);
    });

    it('pod filters accept every pod of the organization', async () => {
      const second = '11111111-2222-3333-4444-555555555555';
      await insertPod(server.service.database.db, {
        id: second,
        organizationId,
        name: 'second',
        createdAt: new Date().toISOString(),
      });
      const res = await call(server, key, 'POST', '/v0/webhooks', { url: hookUrl(), pod_ids: [podId, second] });
      expect(res.body?.pod_ids).toEqual([podId, second]);
    });
  });

  it('the OpenAPI document lists the webhook operations, including the delivery log', async () => {
    const doc = (await (await fetch(`${server.url}/v0/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { summary?: string }>>;
    };
    expect(Object.keys(doc.paths['/v0/webhooks'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/v0/webhooks/{webhook_id}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch', 'put']);
    expect(doc.paths['/v0/webhooks/{webhook_id}/deliveries']?.get?.summary).toMatch(/not AgentMail/);
  });
});

describe.each(dialects)('%s: webhook URLs without INBOX_WEBHOOK_ALLOW_PRIVATE', (dialect) => {
  let server: InboxTestServer;
  let key: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, env: { INBOX_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    key = (await server.createKey()).key;
  });
  afterAll(() => server.close());

  it.each([
    'http://localhost/hook',
    'http://LOCALHOST.:8080/hook',
    'http://api.localhost/hook',
    'http://127.0.0.1/hook',
    'http://127.1/hook',
    'http://2130706433/hook',
    'http://0x7f.0.0.1/hook',
    'http://0.0.0.0/hook',
    'http://10.1.2.3/hook',
    'http://172.16.0.1/hook',
    'http://172.31.255.254/hook',
    'http://192.168.0.10/hook',
    'http://100.64.0.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
    'http://[::]/hook',
    'http://[fc00::1]/hook',
    'http://[fd00:ec2::254]/hook',
    'http://[fe80::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:a9fe:a9fe]/hook',
    'https://[64:ff9b::a00:1]/hook',
  ])('%s → 400 WEBHOOK_URL_NOT_ALLOWED', async (url) => {
    const res = await call(server, key, 'POST', '/v0/webhooks', { url });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        type: 'validation_error',
        message: expect.any(String),
        details: { field: 'url', code: 'WEBHOOK_URL_NOT_ALLOWED' },
      },
    });
  });

  it('public addresses and names are accepted; PUT applies the same rule', async () => {
    for (const url of [
      'https://hooks.example.com/x',
      'http://8.8.8.8/x',
      'http://[2606:4700:4700::1111]/x',
      'http://172.32.0.1/x',
      'https://localhost.example.com/x',
    ]) {
      expect((await call(server, key, 'POST', '/v0/webhooks', { url })).status, url).toBe(201);
    }
    const hook = (await call(server, key, 'POST', '/v0/webhooks', { url: 'https://hooks.example.com/y' })).body as {
      webhook_id: string;
    };
    const res = await call(server, key, 'PUT', `/v0/webhooks/${hook.webhook_id}`, { url: 'http://192.168.1.1/' });
    expect(res.body?.error.details).toEqual({ field: 'url', code: 'WEBHOOK_URL_NOT_ALLOWED' });
  });
});
