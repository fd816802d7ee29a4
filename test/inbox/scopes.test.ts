import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { bearerKey, b64, call, enc, expectError, organization, unique, type Reply } from './fixtures.js';

/**
 * The isolation matrix: every route that exists today, asked about one organization's inbox a1
 * (in pod P1), its messages, threads, attachments, webhooks, pod and keys, by
 *  - a key of another organization, a key of another pod (P2), a key of another inbox (a2): 404,
 *    never data, and nothing changed;
 *  - a key of the same organization without permissions: 403 everywhere;
 *  - the organization's own key: the answers the other keys did not get (the control).
 */

interface Fixture {
  readonly orgKey: string;
  readonly a1: string;
  readonly a2: string;
  readonly p1: string;
  readonly p2: string;
  readonly messageId: string;
  readonly threadId: string;
  readonly attachmentId: string;
  readonly webhookId: string;
  readonly p1KeyId: string;
  readonly p1Key: string;
  readonly p2Key: string;
  readonly a2Key: string;
  readonly otherOrgKey: string;
  readonly noPermKey: string;
}

type Route = readonly [method: string, path: string, body?: unknown];

function routes(f: Fixture): Route[] {
  const a1 = enc(f.a1);
  const m = `/v0/inboxes/${a1}/messages/${enc(f.messageId)}`;
  return [
    ['GET', `/v0/inboxes/${a1}`],
    ['PATCH', `/v0/inboxes/${a1}`, { display_name: 'taken over' }],
    ['DELETE', `/v0/inboxes/${a1}`],
    ['GET', `/v0/inboxes/${a1}/messages`],
    ['GET', m],
    ['PATCH', m, { add_labels: ['seen-by-others'] }],
    ['GET', `${m}/attachments/${f.attachmentId}`],
    ['GET', `${m}/raw`],
    ['POST', `/v0/inboxes/${a1}/messages/send`, { to: f.a2, subject: 'spoof', text: 'x' }],
    ['POST', `${m}/reply`, { text: 'x' }],
    ['POST', `${m}/reply-all`, { text: 'x' }],
    ['POST', `${m}/forward`, { to: f.a2 }],
    ['GET', `/v0/inboxes/${a1}/threads`],
    ['GET', `/v0/inboxes/${a1}/threads/${f.threadId}`],
    ['GET', `/v0/inboxes/${a1}/threads/${f.threadId}/attachments/${f.attachmentId}`],
    ['DELETE', `/v0/inboxes/${a1}/threads/${f.threadId}`],
    ['GET', `/v0/threads/${f.threadId}`],
    ['GET', `/v0/threads/${f.threadId}/attachments/${f.attachmentId}`],
    ['DELETE', `/v0/threads/${f.threadId}`],
    ['GET', `/v0/webhooks/${f.webhookId}`],
    ['PUT', `/v0/webhooks/${f.webhookId}`, { url: 'https://example.org/taken' }],
    ['PATCH', `/v0/webhooks/${f.webhookId}`, { enabled: false }],
    ['GET', `/v0/webhooks/${f.webhookId}/deliveries`],
    ['DELETE', `/v0/webhooks/${f.webhookId}`],
    ['GET', `/v0/pods/${f.p1}`],
    ['DELETE', `/v0/pods/${f.p1}`],
    ['GET', `/v0/pods/${f.p1}/inboxes`],
    ['POST', `/v0/pods/${f.p1}/inboxes`, { username: unique('intruder') }],
    ['GET', `/v0/pods/${f.p1}/inboxes/${a1}`],
    ['PATCH', `/v0/pods/${f.p1}/inboxes/${a1}`, { display_name: 'taken over' }],
    ['DELETE', `/v0/pods/${f.p1}/inboxes/${a1}`],
    ['GET', `/v0/pods/${f.p1}/threads`],
    ['GET', `/v0/pods/${f.p1}/threads/${f.threadId}`],
    ['GET', `/v0/pods/${f.p1}/threads/${f.threadId}/attachments/${f.attachmentId}`],
    ['DELETE', `/v0/pods/${f.p1}/threads/${f.threadId}`],
    ['GET', `/v0/pods/${f.p1}/api-keys`],
    ['POST', `/v0/pods/${f.p1}/api-keys`, { name: 'intruder' }],
    ['PATCH', `/v0/pods/${f.p1}/api-keys/${f.p1KeyId}`, { name: 'renamed' }],
    ['DELETE', `/v0/pods/${f.p1}/api-keys/${f.p1KeyId}`],
    ['GET', `/v0/inboxes/${a1}/api-keys`],
    ['POST', `/v0/inboxes/${a1}/api-keys`, { name: 'intruder' }],
    ['GET', `/v0/api-keys/${f.p1KeyId}`],
    ['PATCH', `/v0/api-keys/${f.p1KeyId}`, { name: 'renamed' }],
    ['DELETE', `/v0/api-keys/${f.p1KeyId}`],
  ];
}

/**
 * The fixture's identifiers that must never appear in an answer to another scope. a2 received
 * the message from a1: keys reaching a2 legitimately see a1's address and the Message-ID in a2's copy.
 */
const secrets = (f: Fixture, sawTheMail: boolean) => [
  ...(sawTheMail ? [] : [f.a1, f.messageId.replace(/[<>]/g, '')]),
  f.p1,
  f.threadId,
  f.webhookId,
  f.p1KeyId,
];

function expectNothingOf(f: Fixture, reply: Reply, sawTheMail: boolean): void {
  const text = reply.bytes.toString();
  for (const s of secrets(f, sawTheMail)) expect(text, `${s} leaked`).not.toContain(s);
}

describe.each(dialects)('scope isolation of every route (%s)', (dialect) => {
  let server: InboxTestServer;
  let f: Fixture;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    const org = await organization(server);
    const p1 = await org.client.pods.create({ name: 'p1' });
    const p2 = await org.client.pods.create({ name: 'p2' });
    const a1 = (await org.client.pods.inboxes.create(p1.podId, { username: unique('a1') })).inboxId;
    const a2 = (await org.client.pods.inboxes.create(p2.podId, { username: unique('a2') })).inboxId;
    const sent = await org.client.inboxes.messages.send(a1, {
      to: a2,
      subject: 'private',
      text: 'secret',
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: b64('attached') }],
    });
    const message = await org.client.inboxes.messages.get(a1, sent.messageId);
    const webhook = await org.client.webhooks.create({
      url: 'https://example.org/hook',
      eventTypes: ['message.received'],
    });
    const p1Key = bearerKey(await org.client.pods.apiKeys.create(p1.podId, { name: 'p1' }));
    const p2Key = bearerKey(await org.client.pods.apiKeys.create(p2.podId, { name: 'p2' }));
    const a2Key = bearerKey(await org.client.inboxes.apiKeys.create(a2, { name: 'a2' }));
    const noPerm = bearerKey(await org.client.apiKeys.create({ name: 'nothing', permissions: {} }));
    const other = await organization(server, [unique('other')]);
    f = {
      orgKey: org.key,
      a1,
      a2,
      p1: p1.podId,
      p2: p2.podId,
      messageId: sent.messageId,
      threadId: sent.threadId,
      attachmentId: (message.attachments?.[0] as { attachmentId: string }).attachmentId,
      webhookId: webhook.webhookId,
      p1KeyId: p1Key.apiKeyId,
      p1Key: p1Key.apiKey,
      p2Key: p2Key.apiKey,
      a2Key: a2Key.apiKey,
      otherOrgKey: other.key,
      noPermKey: noPerm.apiKey,
    };
  });
  afterAll(async () => server?.close());

  for (const who of ['otherOrgKey', 'p2Key', 'a2Key'] as const) {
    it(`${who}: 404 on every route of another scope, and nothing changes`, async () => {
      for (const [method, path, body] of routes(f)) {
        const reply = await call(server.url, f[who], method, path, body);
        expect({ route: `${method} ${path}`, status: reply.status }).toEqual({
          route: `${method} ${path}`,
          status: 404,
        });
        // The error envelope and nothing else (its message may repeat the path the caller sent).
        expectError(reply, 404, 'not_found', reply.body.error.details.code);
      }
      // The lists answer, without the other scope's records.
      for (const path of ['/v0/inboxes', '/v0/threads', '/v0/webhooks', '/v0/pods', '/v0/api-keys']) {
        const reply = await call(server.url, f[who], 'GET', path);
        expect({ path, status: reply.status }).toEqual({ path, status: 200 });
        expectNothingOf(f, reply, who !== 'otherOrgKey');
      }
      await expectUntouched();
    });
  }

  it('a key without permissions: 403 on every route of its own organization', async () => {
    for (const [method, path, body] of routes(f)) {
      const reply = await call(server.url, f.noPermKey, method, path, body);
      expect({ route: `${method} ${path}`, status: reply.status }).toEqual({ route: `${method} ${path}`, status: 403 });
      expectError(reply, 403, 'permission_error', 'PERMISSION_DENIED');
    }
    for (const path of ['/v0/inboxes', '/v0/threads', '/v0/webhooks', '/v0/pods', '/v0/api-keys']) {
      expectError(await call(server.url, f.noPermKey, 'GET', path), 403, 'permission_error', 'PERMISSION_DENIED');
    }
    // Who it is, it may ask.
    expect((await call(server.url, f.noPermKey, 'GET', '/v0/auth/me')).status).toBe(200);
    await expectUntouched();
  });

  it('control: the organization key and the pod key of P1 read all of it', async () => {
    for (const key of [f.orgKey, f.p1Key]) {
      for (const [method, path] of routes(f).filter(([m]) => m === 'GET')) {
        // The organization webhook is the organization's: the pod key does not see it.
        if (key === f.p1Key && path.startsWith('/v0/webhooks/')) continue;
        if (key === f.p1Key && path === `/v0/api-keys/${f.p1KeyId}`) continue;
        const reply = await call(server.url, key, method, path);
        expect({ route: `${method} ${path}`, status: reply.status }).toEqual({
          route: `${method} ${path}`,
          status: 200,
        });
      }
    }
    const listed = await call(server.url, f.p1Key, 'GET', '/v0/threads');
    expect(listed.body.threads.map((t: { inbox_id: string }) => t.inbox_id)).toEqual([f.a1]);
    expect(
      (await call(server.url, f.p1Key, 'GET', '/v0/inboxes')).body.inboxes.map((i: { inbox_id: string }) => i.inbox_id),
    ).toEqual([f.a1]);
    expect(
      (await call(server.url, f.p1Key, 'GET', '/v0/pods')).body.pods.map((p: { pod_id: string }) => p.pod_id),
    ).toEqual([f.p1]);
    // An inbox key sees its inbox only, and no pod.
    expect(
      (await call(server.url, f.a2Key, 'GET', '/v0/inboxes')).body.inboxes.map((i: { inbox_id: string }) => i.inbox_id),
    ).toEqual([f.a2]);
    expect((await call(server.url, f.a2Key, 'GET', '/v0/pods')).body.pods).toEqual([]);
    // A pod key creates inboxes in its pod only.
    const made = await call(server.url, f.p1Key, 'POST', '/v0/inboxes', { username: unique('p1new') });
    expect(made.body.pod_id).toBe(f.p1);
    expectError(
      await call(server.url, f.a2Key, 'POST', '/v0/inboxes', { username: unique('a2new') }),
      403,
      'permission_error',
      'OUT_OF_SCOPE',
    );
  });

  it('webhooks of a scoped key: seen only in its scope, and hearing only its scope', async () => {
    const hook = await call(server.url, f.p2Key, 'POST', '/v0/webhooks', { url: 'https://example.org/p2' });
    expect(hook.status).toBe(201);
    const id = hook.body.webhook_id as string;
    expect((await call(server.url, f.orgKey, 'GET', `/v0/webhooks/${id}`)).status).toBe(200);
    expectError(await call(server.url, f.p1Key, 'GET', `/v0/webhooks/${id}`), 404, 'not_found', 'WEBHOOK_NOT_FOUND');
    expect(
      (await call(server.url, f.p2Key, 'GET', '/v0/webhooks')).body.webhooks.map(
        (w: { webhook_id: string }) => w.webhook_id,
      ),
    ).toEqual([id]);
    // Filters outside the scope are refused.
    expectError(
      await call(server.url, f.p2Key, 'POST', '/v0/webhooks', { url: 'https://example.org/x', inbox_ids: [f.a1] }),
      400,
      'validation_error',
      'UNKNOWN_INBOX_ID',
      'inbox_ids',
    );
    expectError(
      await call(server.url, f.p2Key, 'POST', '/v0/webhooks', { url: 'https://example.org/x', pod_ids: [f.p1] }),
      400,
      'validation_error',
      'UNKNOWN_POD_ID',
      'pod_ids',
    );
    // Mail from a1 (P1) to a2 (P2): the P2 webhook hears a2's events only.
    await call(server.url, f.orgKey, 'POST', `/v0/inboxes/${enc(f.a1)}/messages/send`, {
      to: f.a2,
      subject: 'to p2',
      text: 'x',
    });
    const db = server.service.runtime.services.db;
    const jobs = await db.selectFrom('jobs').select('payload').where('queue', '=', 'webhook.deliver').execute();
    const mine = jobs
      .map((j) => JSON.parse(j.payload) as { webhook_id: string; event_id: string })
      .filter((j) => j.webhook_id === id);
    expect(mine.length).toBeGreaterThan(0);
    const events = await db
      .selectFrom('events')
      .select(['event_id', 'inbox_id'])
      .where(
        'event_id',
        'in',
        mine.map((j) => j.event_id),
      )
      .execute();
    expect(new Set(events.map((e) => e.inbox_id))).toEqual(new Set([f.a2]));
  });

  async function expectUntouched(): Promise<void> {
    const inbox = await call(server.url, f.orgKey, 'GET', `/v0/inboxes/${enc(f.a1)}`);
    expect(inbox.status).toBe(200);
    expect(inbox.body.display_name).toBeUndefined();
    const message = await call(server.url, f.orgKey, 'GET', `/v0/inboxes/${enc(f.a1)}/messages/${enc(f.messageId)}`);
    expect(message.body.labels).not.toContain('seen-by-others');
    expect(message.body.labels).not.toContain('trash');
    const messages = await call(server.url, f.orgKey, 'GET', `/v0/inboxes/${enc(f.a1)}/messages`);
    expect(messages.body.count).toBe(1);
    const webhook = await call(server.url, f.orgKey, 'GET', `/v0/webhooks/${f.webhookId}`);
    expect(webhook.body).toMatchObject({ url: 'https://example.org/hook', enabled: true });
    expect((await call(server.url, f.orgKey, 'GET', `/v0/pods/${f.p1}`)).status).toBe(200);
    const key = await call(server.url, f.orgKey, 'GET', `/v0/api-keys/${f.p1KeyId}`);
    expect(key.body.name).toBe('p1');
    expect((await call(server.url, f.orgKey, 'GET', `/v0/pods/${f.p1}/api-keys`)).body.count).toBe(1);
  }
});
