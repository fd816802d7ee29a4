import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createInboxTestDatabase, dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { bearerKey, call, expectError, organization, unique } from './fixtures.js';

const ISO_DATE = expect.any(Date);

describe.each(dialects)('API keys through the API (%s)', (dialect) => {
  let server: InboxTestServer;
  beforeAll(async () => {
    server = await startInboxServer({ dialect });
  });
  afterAll(async () => server?.close());

  it('creates an organization key: the secret is shown once and stored as SHA-256 only', async () => {
    const org = await organization(server);
    const created = bearerKey(await org.client.apiKeys.create({ name: 'ci' }));
    expect(created).toEqual({
      apiKeyId: expect.stringMatching(/^key_/),
      apiKey: expect.stringMatching(/^am_/),
      prefix: created.apiKey.slice(0, 8),
      name: 'ci',
      createdAt: ISO_DATE,
    });
    const row = await server.service.runtime.services.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', created.apiKeyId)
      .executeTakeFirstOrThrow();
    expect(row.key_hash).toBe(createHash('sha256').update(created.apiKey).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(created.apiKey);
    // Never again: get and list show no secret.
    const got = await org.client.apiKeys.get(created.apiKeyId);
    expect(got).toEqual({
      type: 'bearer',
      apiKeyId: created.apiKeyId,
      prefix: created.prefix,
      name: 'ci',
      createdAt: ISO_DATE,
      updatedAt: ISO_DATE,
    });
    const raw = await call(server.url, org.key, 'GET', '/v0/api-keys');
    expect(raw.status).toBe(200);
    expect(raw.bytes.toString()).not.toContain(created.apiKey);
    expect(raw.body.api_keys.map((k: { api_key_id: string }) => k.api_key_id)).toContain(created.apiKeyId);
    // The new key works, as the organization.
    expect(await server.client(created.apiKey).auth.me()).toEqual({
      scopeType: 'organization',
      scopeId: org.organizationId,
      organizationId: org.organizationId,
      apiKeyId: created.apiKeyId,
    });
  });

  it('pages through keys and renames them', async () => {
    const org = await organization(server);
    for (const name of ['k1', 'k2', 'k3']) bearerKey(await org.client.apiKeys.create({ name }));
    const first = await org.client.apiKeys.list({ limit: 2 });
    expect(first.count).toBe(2);
    expect(first.nextPageToken).toEqual(expect.any(String));
    const second = await org.client.apiKeys.list({ limit: 2, pageToken: first.nextPageToken as string });
    expect([...first.apiKeys, ...second.apiKeys].map((k) => k.name)).toEqual(['k3', 'k2', 'k1', 'default']);
    expect((await org.client.apiKeys.list({ type: 'public_key' })).apiKeys).toEqual([]);
    const k = first.apiKeys[0] as { apiKeyId: string };
    expect(await org.client.apiKeys.update(k.apiKeyId, { name: 'renamed' })).toMatchObject({
      apiKeyId: k.apiKeyId,
      name: 'renamed',
    });
  });

  it('keys of a pod and of an inbox: their scope shows in auth.me and they manage only their own', async () => {
    const org = await organization(server);
    const pod = await org.client.pods.create({ name: 'p' });
    const inbox = await org.client.pods.inboxes.create(pod.podId, { username: unique('k') });
    const podKey = bearerKey(await org.client.pods.apiKeys.create(pod.podId, { name: 'pod' }));
    expect(podKey).toEqual({
      apiKeyId: expect.any(String),
      apiKey: expect.any(String),
      prefix: expect.any(String),
      name: 'pod',
      podId: pod.podId,
      createdAt: ISO_DATE,
    });
    expect(await server.client(podKey.apiKey).auth.me()).toEqual({
      scopeType: 'pod',
      scopeId: pod.podId,
      organizationId: org.organizationId,
      podId: pod.podId,
      apiKeyId: podKey.apiKeyId,
    });
    const inboxKey = bearerKey(
      await server.client(podKey.apiKey).inboxes.apiKeys.create(inbox.inboxId, { name: 'inbox' }),
    );
    expect(inboxKey).toMatchObject({ name: 'inbox', podId: pod.podId, inboxId: inbox.inboxId });
    expect(await server.client(inboxKey.apiKey).auth.me()).toEqual({
      scopeType: 'inbox',
      scopeId: inbox.inboxId,
      organizationId: org.organizationId,
      podId: pod.podId,
      inboxId: inbox.inboxId,
      apiKeyId: inboxKey.apiKeyId,
    });
    expect((await org.client.pods.apiKeys.list(pod.podId)).apiKeys.map((k) => k.apiKeyId)).toEqual([podKey.apiKeyId]);
    expect((await org.client.inboxes.apiKeys.list(inbox.inboxId)).apiKeys.map((k) => k.apiKeyId)).toEqual([
      inboxKey.apiKeyId,
    ]);
    // A pod key sees its pod's keys, not the organization's; an inbox key only its inbox's.
    expect((await server.client(podKey.apiKey).apiKeys.list()).apiKeys.map((k) => k.apiKeyId).sort()).toEqual(
      [podKey.apiKeyId, inboxKey.apiKeyId].sort(),
    );
    expect((await server.client(inboxKey.apiKey).apiKeys.list()).apiKeys.map((k) => k.apiKeyId)).toEqual([
      inboxKey.apiKeyId,
    ]);
    // No key wider than its own.
    expectError(
      await call(server.url, podKey.apiKey, 'POST', '/v0/api-keys', { name: 'org' }),
      403,
      'permission_error',
      'OUT_OF_SCOPE',
    );
    expectError(
      await call(server.url, inboxKey.apiKey, 'POST', `/v0/pods/${pod.podId}/api-keys`, { name: 'pod' }),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    // Updates and deletes at the pod and inbox places.
    expect(await org.client.pods.apiKeys.update(pod.podId, podKey.apiKeyId, { name: 'pod2' })).toMatchObject({
      name: 'pod2',
      podId: pod.podId,
    });
    expect(
      await org.client.inboxes.apiKeys.update(inbox.inboxId, inboxKey.apiKeyId, { permissions: { messageRead: true } }),
    ).toMatchObject({ permissions: { messageRead: true } });
    await org.client.inboxes.apiKeys.delete(inbox.inboxId, inboxKey.apiKeyId);
    expectError(
      await call(server.url, inboxKey.apiKey, 'GET', '/v0/auth/me'),
      401,
      'authentication_error',
      'INVALID_API_KEY',
    );
    // A pod key goes with its pod (the pod has to be empty first).
    await org.client.pods.inboxes.delete(pod.podId, inbox.inboxId);
    await org.client.pods.delete(pod.podId);
    expectError(
      await call(server.url, podKey.apiKey, 'GET', '/v0/auth/me'),
      401,
      'authentication_error',
      'INVALID_API_KEY',
    );
  });

  it('permissions: a key holds only what it was given and never gives more', async () => {
    const org = await organization(server, [unique('perm')]);
    const reader = bearerKey(
      await org.client.apiKeys.create({
        name: 'reader',
        permissions: { inboxRead: true, apiKeyCreate: true, apiKeyRead: true },
      }),
    );
    expect(reader.permissions).toEqual({ inboxRead: true, apiKeyCreate: true, apiKeyRead: true });
    const readerClient = server.client(reader.apiKey);
    expect((await readerClient.inboxes.list()).count).toBe(1);
    const denied = await call(server.url, reader.apiKey, 'POST', '/v0/inboxes', { username: unique('no') });
    expectError(denied, 403, 'permission_error', 'PERMISSION_DENIED');
    expect(denied.body.error.details.permission).toBe('inboxCreate');
    expectError(
      await call(server.url, reader.apiKey, 'GET', `/v0/inboxes/${org.inboxes[0]}/messages`),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    // Labels hidden by default need their label permission.
    const mailReader = bearerKey(
      await org.client.apiKeys.create({ permissions: { messageRead: true, labelSpamRead: true } }),
    );
    expect(
      (await call(server.url, mailReader.apiKey, 'GET', `/v0/inboxes/${org.inboxes[0]}/messages?include_spam=true`))
        .status,
    ).toBe(200);
    const trash = await call(
      server.url,
      mailReader.apiKey,
      'GET',
      `/v0/inboxes/${org.inboxes[0]}/threads?include_trash=true`,
    );
    expectError(trash, 403, 'permission_error', 'PERMISSION_DENIED');
    expect(trash.body.error.details.permission).toBe('labelTrashRead');
    // More than it holds: refused; nothing said: the creator's own set.
    expectError(
      await call(server.url, reader.apiKey, 'POST', '/v0/api-keys', { permissions: { message_send: true } }),
      403,
      'permission_error',
      'PERMISSION_ESCALATION',
    );
    const child = bearerKey(await readerClient.apiKeys.create({ name: 'child' }));
    expect(child.permissions).toEqual({ inboxRead: true, apiKeyCreate: true, apiKeyRead: true });
    expect(bearerKey(await readerClient.apiKeys.create({ permissions: { inboxRead: true } })).permissions).toEqual({
      inboxRead: true,
    });
    // It may not update (no apiKeyUpdate), nor delete.
    expectError(
      await call(server.url, reader.apiKey, 'PATCH', `/v0/api-keys/${child.apiKeyId}`, { name: 'x' }),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    expectError(
      await call(server.url, reader.apiKey, 'DELETE', `/v0/api-keys/${child.apiKeyId}`),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    // A limited key with apiKeyUpdate cannot widen another key, nor itself.
    const updater = bearerKey(
      await org.client.apiKeys.create({ permissions: { apiKeyUpdate: true, apiKeyRead: true } }),
    );
    expectError(
      await call(server.url, updater.apiKey, 'PATCH', `/v0/api-keys/${updater.apiKeyId}`, {
        permissions: { inbox_create: true },
      }),
      403,
      'permission_error',
      'PERMISSION_ESCALATION',
    );
    expectError(
      await call(server.url, updater.apiKey, 'PATCH', `/v0/api-keys/${child.apiKeyId}`, { name: 'x' }),
      403,
      'permission_error',
      'PERMISSION_ESCALATION',
    );
  });

  it("accepts AgentMail's renamed permission names (app_connect, app_share_owner) and the former ones alike", async () => {
    const org = await organization(server, [unique('perm')]);
    const [inbox] = org.inboxes as [string];
    const created = await call(server.url, org.key, 'POST', '/v0/api-keys', {
      permissions: { inbox_read: true, app_connect: true, provider_share_owner: false },
    });
    expect(created.status).toBe(200);
    // Answered under both names, so that clients of SDK 0.5.27 and of today's API read them.
    expect(created.body.permissions).toEqual({
      inbox_read: true,
      app_connect: true,
      provider_connect: true,
      app_share_owner: false,
      provider_share_owner: false,
    });
    const read = await call(server.url, org.key, 'GET', `/v0/api-keys/${created.body.api_key_id}`);
    expect(read.body.permissions).toEqual(created.body.permissions);
    // The former name on an inbox key, and a key holding it may hand it on under the new one.
    const old = await call(server.url, org.key, 'POST', `/v0/inboxes/${encodeURIComponent(inbox)}/api-keys`, {
      permissions: { api_key_create: true, provider_connect: true },
    });
    expect(old.body.permissions).toMatchObject({ app_connect: true, provider_connect: true });
    const child = await call(
      server.url,
      old.body.api_key,
      'POST',
      `/v0/inboxes/${encodeURIComponent(inbox)}/api-keys`,
      {
        permissions: { app_connect: true },
      },
    );
    expect(child.status).toBe(200);
    expectError(
      await call(server.url, old.body.api_key, 'POST', `/v0/inboxes/${encodeURIComponent(inbox)}/api-keys`, {
        permissions: { app_share_owner: true },
      }),
      403,
      'permission_error',
      'PERMISSION_ESCALATION',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/api-keys', {
        permissions: { app_connect: true, provider_connect: false },
      }),
      400,
      'validation_error',
      'CONFLICTING_PERMISSIONS',
      'permissions',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/api-keys/${created.body.api_key_id}`, {
        permissions: { app_share_owner: true, provider_share_owner: false },
      }),
      400,
      'validation_error',
      'CONFLICTING_PERMISSIONS',
      'permissions',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/api-keys', { permissions: { app_connect: 'yes' } }),
      400,
      'validation_error',
      'INVALID_VALUE',
      'permissions.app_connect',
    );
  });

  it('answers bad input and unknown keys in the spec error format', async () => {
    const org = await organization(server);
    expectError(
      await call(server.url, org.key, 'POST', '/v0/api-keys', { permissions: { root: true } }),
      400,
      'validation_error',
      'INVALID_VALUE',
      'permissions.root',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/api-keys', { name: 'x'.repeat(256) }),
      400,
      'validation_error',
      'INVALID_VALUE',
      'name',
    );
    expectError(
      await call(server.url, org.key, 'POST', '/v0/api-keys', { name: '   ' }),
      400,
      'validation_error',
      'INVALID_NAME',
      'name',
    );
    expectError(await call(server.url, org.key, 'GET', '/v0/api-keys/key_nope'), 404, 'not_found', 'API_KEY_NOT_FOUND');
    expectError(
      await call(server.url, org.key, 'PATCH', '/v0/api-keys/key_nope', { name: 'a' }),
      404,
      'not_found',
      'API_KEY_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'DELETE', '/v0/api-keys/key_nope'),
      404,
      'not_found',
      'API_KEY_NOT_FOUND',
    );
    expectError(await call(server.url, org.key, 'GET', '/v0/pods/nope/api-keys'), 404, 'not_found', 'POD_NOT_FOUND');
    expectError(
      await call(server.url, org.key, 'GET', '/v0/inboxes/nope@inbox.test/api-keys'),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'GET', '/v0/api-keys?page_token=garbage'),
      400,
      'validation_error',
      'INVALID_PAGE_TOKEN',
    );
    // Another organization's key is not found.
    const other = await organization(server);
    const theirs = bearerKey(await other.client.apiKeys.create({ name: 'theirs' }));
    expectError(
      await call(server.url, org.key, 'GET', `/v0/api-keys/${theirs.apiKeyId}`),
      404,
      'not_found',
      'API_KEY_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'DELETE', `/v0/api-keys/${theirs.apiKeyId}`),
      404,
      'not_found',
      'API_KEY_NOT_FOUND',
    );
    expect((await server.client(theirs.apiKey).auth.me()).apiKeyId).toBe(theirs.apiKeyId);
  });
});

describe.each(dialects)('a deleted key on two instances (%s)', (dialect) => {
  it('stops working on the other instance with the next request (no key cache)', async () => {
    const database = createInboxTestDatabase(dialect);
    const a = await startInboxServer({ database });
    const b = await startInboxServer({ database });
    try {
      const org = await organization(a);
      const key = bearerKey(await org.client.apiKeys.create({ name: 'short-lived' }));
      expect((await call(b.url, key.apiKey, 'GET', '/v0/inboxes')).status).toBe(200);
      await org.client.apiKeys.delete(key.apiKeyId);
      expectError(await call(b.url, key.apiKey, 'GET', '/v0/inboxes'), 401, 'authentication_error', 'INVALID_API_KEY');
      expectError(await call(a.url, key.apiKey, 'GET', '/v0/inboxes'), 401, 'authentication_error', 'INVALID_API_KEY');
      // A narrowed permission takes effect on the other instance at once too.
      const narrowed = bearerKey(await org.client.apiKeys.create({ name: 'narrowed' }));
      expect((await call(b.url, narrowed.apiKey, 'GET', '/v0/inboxes')).status).toBe(200);
      await org.client.apiKeys.update(narrowed.apiKeyId, { permissions: { messageRead: true } });
      expectError(
        await call(b.url, narrowed.apiKey, 'GET', '/v0/inboxes'),
        403,
        'permission_error',
        'PERMISSION_DENIED',
      );
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});
