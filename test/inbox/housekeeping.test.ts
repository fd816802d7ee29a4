import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { call, enc, expectError, organization, unique } from './fixtures.js';

const MESSAGE_KEYS = new Set([
  'inbox_id',
  'thread_id',
  'message_id',
  'labels',
  'timestamp',
  'from',
  'reply_to',
  'to',
  'cc',
  'bcc',
  'subject',
  'preview',
  'text',
  'html',
  'extracted_text',
  'extracted_html',
  'attachments',
  'in_reply_to',
  'references',
  'headers',
  'size',
  'updated_at',
  'created_at',
]);
const THREAD_KEYS = new Set([
  'inbox_id',
  'thread_id',
  'labels',
  'timestamp',
  'received_timestamp',
  'sent_timestamp',
  'senders',
  'recipients',
  'participants',
  'subject',
  'preview',
  'attachments',
  'last_message_id',
  'last_message_at',
  'message_count',
  'size',
  'updated_at',
  'created_at',
  'count',
  'limit',
  'next_page_token',
  'messages',
]);

function expectKeys(body: Record<string, unknown>, allowed: Set<string>, required: readonly string[]): void {
  for (const key of Object.keys(body)) expect(allowed.has(key), `unexpected field ${key}`).toBe(true);
  for (const key of required) expect(body[key], key).toBeDefined();
}

describe.each(dialects)('%s: housekeeping the SDK expects', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let other: Awaited<ReturnType<typeof organization>>;
  let ann: string;
  let ben: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [unique('ann'), unique('ben')]);
    [ann, ben] = org.inboxes as [string, string];
    other = await organization(server, [unique('zed')]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('messages.delete removes a message for good and rebuilds its thread (count, preview, search)', async () => {
    const first = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'Tidy up', text: 'first words' });
    const inBen = (await org.client.inboxes.messages.list(ben)).messages.find((m) => m.messageId === first.messageId);
    const reply = await org.client.inboxes.messages.reply(ben, first.messageId, { text: 'second thoughts' });
    expect((await org.client.inboxes.threads.get(ann, first.threadId)).messageCount).toBe(2);
    await org.client.inboxes.messages.delete(ann, reply.messageId);
    const thread = await org.client.inboxes.threads.get(ann, first.threadId);
    expect(thread.messageCount).toBe(1);
    expect(thread.count).toBe(1);
    expect(thread.preview).toBe('first words');
    expect(thread.lastMessageId).toBe(first.messageId);
    expect((await org.client.inboxes.messages.search(ann, { q: 'second thoughts' })).messages).toEqual([]);
    expect((await org.client.inboxes.threads.search(ann, { q: 'second' })).threads).toEqual([]);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ann)}/messages/${enc(reply.messageId)}`),
      404,
      'not_found',
      'MESSAGE_NOT_FOUND',
    );
    // Ben's copies are untouched.
    expect((await org.client.inboxes.messages.get(ben, reply.messageId)).text).toBe('second thoughts');
    // The last message takes the thread with it.
    await org.client.inboxes.messages.delete(ann, first.messageId);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ann)}/threads/${first.threadId}`),
      404,
      'not_found',
      'THREAD_NOT_FOUND',
    );
    expect(inBen?.threadId).toBeDefined();
    // Errors: twice, another organization, unknown inbox.
    expectError(
      await call(server.url, org.key, 'DELETE', `/v0/inboxes/${enc(ann)}/messages/${enc(first.messageId)}`),
      404,
      'not_found',
      'MESSAGE_NOT_FOUND',
    );
    expectError(
      await call(server.url, other.key, 'DELETE', `/v0/inboxes/${enc(ben)}/messages/${enc(reply.messageId)}`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'DELETE', `/v0/inboxes/nobody%40x.test/messages/%3Ca%40b%3E`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
  });

  it('messages.batchGet returns messages in the order asked, without bodies, leaving out unknown ids', async () => {
    const a = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'A', text: 'alpha' });
    const b = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'B', text: 'beta' });
    const res = await org.client.inboxes.messages.batchGet(ann, {
      messageIds: [b.messageId, '<missing@x.test>', a.messageId],
    });
    expect(res.limit).toBe(3);
    expect(res.count).toBe(2);
    expect(res.messages.map((m) => m.messageId)).toEqual([b.messageId, a.messageId]);
    const raw = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
      message_ids: [a.messageId],
    });
    expect(Object.keys(raw.body).sort()).toEqual(['count', 'limit', 'messages']);
    expectKeys(raw.body.messages[0], MESSAGE_KEYS, [
      'inbox_id',
      'thread_id',
      'message_id',
      'labels',
      'timestamp',
      'from',
      'to',
      'size',
      'updated_at',
      'created_at',
    ]);
    expect(raw.body.messages[0].text).toBeUndefined();
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
        message_ids: [a.messageId, a.messageId],
      }),
      400,
      'validation_error',
      'DUPLICATE_MESSAGE_ID',
      'message_ids',
    );
    expect(
      (await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, { message_ids: [] }))
        .status,
    ).toBe(400);
    expect(
      (
        await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
          message_ids: Array.from({ length: 501 }, (_, i) => `<m${i}@x>`),
        })
      ).status,
    ).toBe(400);
    expectError(
      await call(server.url, other.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
        message_ids: [a.messageId],
      }),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
  });

  it('messages.batchUpdate changes labels of many messages in one go and keeps thread labels in step', async () => {
    const a = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'C', text: 'gamma' });
    const b = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'D', text: 'delta' });
    const res = await org.client.inboxes.messages.batchUpdate(ann, {
      messageIds: [a.messageId, b.messageId, '<gone@x.test>'],
      addLabels: 'project-x',
      removeLabels: ['nothing'],
    });
    expect(res).toEqual({
      limit: 3,
      count: 2,
      updates: [
        { messageId: a.messageId, labels: ['sent', 'project-x'] },
        { messageId: b.messageId, labels: ['sent', 'project-x'] },
      ],
    });
    expect((await org.client.inboxes.threads.get(ann, a.threadId)).labels).toContain('project-x');
    expect((await org.client.inboxes.messages.list(ann, { labels: ['project-x'] })).count).toBe(2);
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-update`, {
        message_ids: [a.messageId],
        add_labels: ['x'],
        remove_labels: ['x'],
      }),
      400,
      'validation_error',
      'CONFLICTING_LABELS',
    );
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-update`, {
        message_ids: [a.messageId],
        add_labels: ['sent'],
      }),
      400,
      'validation_error',
      'RESERVED_LABEL',
    );
    expect(
      (
        await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-update`, {
          message_ids: Array.from({ length: 51 }, (_, i) => `<m${i}@x>`),
        })
      ).status,
    ).toBe(400);
    // messages.update takes a label or a list (SDK 0.5 UpdateMessageLabels).
    const one = await org.client.inboxes.messages.update(ann, a.messageId, { removeLabels: 'project-x' });
    expect(one.labels).toEqual(['sent']);
  });

  it('threads.update labels every message of a thread; remove wins over add', async () => {
    const first = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'Labels', text: 'one' });
    await org.client.inboxes.messages.reply(ben, first.messageId, { text: 'two' });
    const updated = await org.client.inboxes.threads.update(ann, first.threadId, {
      addLabels: ['done', 'keep'],
      removeLabels: ['keep'],
    });
    expect(updated.threadId).toBe(first.threadId);
    expect(updated.labels).toContain('done');
    expect(updated.labels).not.toContain('keep');
    const thread = await org.client.inboxes.threads.get(ann, first.threadId);
    expect(thread.messages.every((m) => m.labels.includes('done'))).toBe(true);
    const org2 = await org.client.threads.update(first.threadId, { removeLabels: ['done', 'unread'] });
    expect(org2.labels).not.toContain('done');
    expect(org2.labels).not.toContain('unread');
    const raw = await call(server.url, org.key, 'PATCH', `/v0/threads/${first.threadId}`, { add_labels: ['z'] });
    expect(Object.keys(raw.body).sort()).toEqual(['labels', 'thread_id']);
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/threads/${first.threadId}`, { add_labels: ['received'] }),
      400,
      'validation_error',
      'RESERVED_LABEL',
    );
    expectError(
      await call(server.url, other.key, 'PATCH', `/v0/threads/${first.threadId}`, { add_labels: ['z'] }),
      404,
      'not_found',
      'THREAD_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/inboxes/${enc(ben)}/threads/${first.threadId}`, {
        add_labels: ['z'],
      }),
      404,
      'not_found',
      'THREAD_NOT_FOUND',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/threads/${first.threadId}`, { add_labels: 'z' }),
      400,
      'validation_error',
      expect.any(String) as unknown as string,
    );
  });

  it('threads.get has count and pages of messages, newest page first, each oldest first', async () => {
    const first = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'Long', text: 'm1' });
    let last = first.messageId;
    for (const t of ['m2', 'm3', 'm4', 'm5'])
      last = (await org.client.inboxes.messages.reply(ann, last, { text: t })).messageId;
    const all = await call(server.url, org.key, 'GET', `/v0/threads/${first.threadId}`);
    expectKeys(all.body, THREAD_KEYS, [
      'inbox_id',
      'thread_id',
      'labels',
      'timestamp',
      'senders',
      'recipients',
      'last_message_id',
      'message_count',
      'size',
      'updated_at',
      'created_at',
      'count',
      'messages',
    ]);
    expect(all.body.count).toBe(5);
    expect(all.body.limit).toBeUndefined();
    const p1 = await org.client.threads.get(first.threadId, { limit: 2 });
    expect(p1.messages.map((m) => m.text)).toEqual(['m4', 'm5']);
    expect(p1.count).toBe(2);
    expect(p1.limit).toBe(2);
    const p2 = await org.client.inboxes.threads.get(ann, first.threadId, {
      limit: 2,
      pageToken: p1.nextPageToken as string,
    });
    expect(p2.messages.map((m) => m.text)).toEqual(['m2', 'm3']);
    const p3 = await org.client.threads.get(first.threadId, { limit: 2, pageToken: p2.nextPageToken as string });
    expect(p3.messages.map((m) => m.text)).toEqual(['m1']);
    expect(p3.nextPageToken).toBeUndefined();
    expectError(
      await call(server.url, org.key, 'GET', `/v0/threads/${first.threadId}?page_token=nope`),
      400,
      'validation_error',
      'INVALID_PAGE_TOKEN',
    );
    expect((await call(server.url, org.key, 'GET', `/v0/threads/${first.threadId}?limit=0`)).status).toBe(400);
    // SDK 0.4.9 still gets every message.
    const old = await server.client049(org.key).threads.get(first.threadId);
    expect(old.messages).toHaveLength(5);
  });

  it('the 0.5 list filters: from, to, subject (messages), senders, recipients, subject (threads), include_unauthenticated', async () => {
    const tag = unique('flt');
    await org.client.inboxes.messages.send(ann, { to: ben, subject: `${tag} Alpha report`, text: 'x' });
    await org.client.inboxes.messages.send(ben, {
      to: ann,
      cc: `"Quoted Name" <${ann}>`,
      subject: `${tag} beta REPORT`,
      text: 'y',
    });
    const subjects = async (q: Parameters<typeof org.client.inboxes.messages.list>[1]) =>
      (await org.client.inboxes.messages.list(ann, q)).messages.map((m) => m.subject);
    expect(await subjects({ subject: [tag, 'report'] })).toEqual([`${tag} beta REPORT`, `${tag} Alpha report`]);
    expect(await subjects({ subject: [tag], from: [ben.toUpperCase()] })).toEqual([`${tag} beta REPORT`]);
    expect(await subjects({ subject: [tag], to: ['QUOTED name'] })).toEqual([`${tag} beta REPORT`]);
    expect(await subjects({ subject: [tag, 'nothing'] })).toEqual([]);
    const threads = async (q: Parameters<typeof org.client.inboxes.threads.list>[1]) =>
      (await org.client.inboxes.threads.list(ann, q)).threads.map((t) => t.subject);
    expect(await threads({ subject: [tag], senders: [ben] })).toEqual([`${tag} beta REPORT`]);
    expect(await threads({ subject: [tag], recipients: [ben] })).toEqual([`${tag} Alpha report`]);
    expect((await org.client.threads.list({ subject: [tag] })).count).toBe(4);
    expect((await org.client.inboxes.messages.list(ann, { subject: [tag], includeUnauthenticated: false })).count).toBe(
      2,
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ann)}/messages?from=${enc('["a",1]')}`),
      400,
      'validation_error',
      'INVALID_FILTER',
      'from',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ann)}/threads?senders=${enc('[')}`),
      400,
      'validation_error',
      'INVALID_FILTER',
      'senders',
    );
  });

  it('delete, batch reads and updates and threads.update check the key: permissions (403) and inbox scope (404)', async () => {
    const sent = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'Scoped', text: 'x' });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's CreateApiKeyResult names the secret apiKey on the wire
    const secret = (k: any) => k.apiKey as string;
    const readOnly = secret(
      await org.client.apiKeys.create({ name: 'read-only', permissions: { messageRead: true, inboxRead: true } }),
    );
    const nothing = secret(await org.client.apiKeys.create({ name: 'nothing', permissions: {} }));
    const benOnly = secret(await org.client.inboxes.apiKeys.create(ben, { name: 'ben' }));
    const id = enc(sent.messageId);
    expectError(
      await call(server.url, readOnly, 'DELETE', `/v0/inboxes/${enc(ann)}/messages/${id}`),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    expectError(
      await call(server.url, readOnly, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-update`, {
        message_ids: [sent.messageId],
        add_labels: ['x'],
      }),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    expectError(
      await call(server.url, readOnly, 'PATCH', `/v0/threads/${sent.threadId}`, { add_labels: ['x'] }),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    expectError(
      await call(server.url, nothing, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
        message_ids: [sent.messageId],
      }),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    expect(
      (
        await call(server.url, readOnly, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
          message_ids: [sent.messageId],
        })
      ).body.messages,
    ).toHaveLength(1);
    expectError(
      await call(server.url, benOnly, 'DELETE', `/v0/inboxes/${enc(ann)}/messages/${id}`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, benOnly, 'POST', `/v0/inboxes/${enc(ann)}/messages/batch-get`, {
        message_ids: [sent.messageId],
      }),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, benOnly, 'PATCH', `/v0/threads/${sent.threadId}`, { add_labels: ['x'] }),
      404,
      'not_found',
      'THREAD_NOT_FOUND',
    );
    // Nothing of the above changed the message.
    expect((await org.client.inboxes.messages.get(ann, sent.messageId)).labels).not.toContain('x');
  });

  it('inbox metadata is stored, merged on update and returned (0.5), while 0.4.9 updates keep working', async () => {
    const created = await org.client.inboxes.create({
      username: unique('meta'),
      metadata: { team: 'ops', priority: 2, active: true },
    });
    expect(created.metadata).toEqual({ team: 'ops', priority: 2, active: true });
    const updated = await org.client.inboxes.update(created.inboxId, {
      metadata: { priority: null, region: 'eu' } as never,
    });
    expect(updated.metadata).toEqual({ team: 'ops', active: true, region: 'eu' });
    expect((await org.client.inboxes.get(created.inboxId)).metadata).toEqual({
      team: 'ops',
      active: true,
      region: 'eu',
    });
    const renamed = await server.client049(org.key).inboxes.update(created.inboxId, { displayName: 'Ops' });
    expect(renamed.displayName).toBe('Ops');
    expect((await org.client.inboxes.get(created.inboxId)).metadata).toEqual({
      team: 'ops',
      active: true,
      region: 'eu',
    });
    const cleared = await call(server.url, org.key, 'PATCH', `/v0/inboxes/${enc(created.inboxId)}`, { metadata: null });
    expect(cleared.body.metadata).toBeUndefined();
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/inboxes/${enc(created.inboxId)}`, { metadata: {} }),
      400,
      'validation_error',
      'INVALID_METADATA',
      'metadata',
    );
    expectError(
      await call(server.url, org.key, 'PATCH', `/v0/inboxes/${enc(created.inboxId)}`, {}),
      400,
      'validation_error',
      'EMPTY_UPDATE',
    );
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes`, { metadata: { k: 'x'.repeat(257) } }),
      400,
      'validation_error',
      'INVALID_METADATA',
      'metadata',
    );
    expect((await call(server.url, org.key, 'POST', `/v0/inboxes`, { metadata: { k: { nested: 1 } } })).status).toBe(
      400,
    );
    expectError(
      await call(server.url, org.key, 'POST', `/v0/inboxes`, {
        metadata: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, i])),
      }),
      400,
      'validation_error',
      'INVALID_METADATA',
      'metadata',
    );
  });
});
