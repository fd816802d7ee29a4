import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { ComposedMessage } from '../../src/inbox/mailstore/delivery.service.js';
import { findInbox } from '../../src/inbox/inboxes/inbox.repository.js';
import { findMessagesByPks } from '../../src/inbox/mailstore/message.repository.js';
import { OFFLOAD_WORDS_CHARS } from '../../src/inbox/offload.js';
import { findThreadsByIds } from '../../src/inbox/mailstore/thread.repository.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, expectError, organization, unique } from './fixtures.js';

const ITEM_KEYS = new Set([
  'inbox_id',
  'thread_id',
  'message_id',
  'labels',
  'timestamp',
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'preview',
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
]);
const INBOX_KEYS = new Set([
  'pod_id',
  'inbox_id',
  'email',
  'display_name',
  'client_id',
  'metadata',
  'created_at',
  'updated_at',
]);

/** Strict check against the SDK's SearchMessageItem / ThreadItem / Inbox: required fields present and typed, nothing unknown. */
function expectShape(item: Record<string, unknown>, allowed: Set<string>, required: Record<string, string>): void {
  for (const key of Object.keys(item)) expect(allowed.has(key), `unexpected field ${key}`).toBe(true);
  for (const [key, type] of Object.entries(required))
    expect(type === 'array' ? Array.isArray(item[key]) : typeof item[key], key).toBe(type === 'array' ? true : type);
}
const MESSAGE_REQUIRED = {
  inbox_id: 'string',
  thread_id: 'string',
  message_id: 'string',
  labels: 'array',
  timestamp: 'string',
  from: 'string',
  to: 'array',
  size: 'number',
  updated_at: 'string',
  created_at: 'string',
};
const THREAD_REQUIRED = {
  inbox_id: 'string',
  thread_id: 'string',
  labels: 'array',
  timestamp: 'string',
  senders: 'array',
  recipients: 'array',
  last_message_id: 'string',
  message_count: 'number',
  size: 'number',
  updated_at: 'string',
  created_at: 'string',
};

describe.each(dialects)('%s: search', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;
  let other: Awaited<ReturnType<typeof organization>>;
  let ann: string;
  let ben: string;
  const sent = {} as Record<'invoice' | 'lunch' | 'report' | 'reply', { messageId: string; threadId: string }>;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    org = await organization(server, [
      { username: unique('ann'), displayName: 'Ann Archer' },
      { username: unique('ben'), displayName: 'Ben Baker' },
    ]);
    [ann, ben] = org.inboxes as [string, string];
    other = await organization(server, [unique('zed')]);
    const c = org.client.inboxes.messages;
    sent.invoice = await c.send(ann, {
      to: ben,
      subject: 'Invoice 2024-117 for March',
      text: 'Please find the totals below. Kind regards',
    });
    sent.lunch = await c.send(ann, {
      to: ben,
      subject: 'Lunch on Friday?',
      text: 'The invoice can wait; café at noon?',
    });
    sent.report = await c.send(ann, {
      to: ben,
      subject: 'Quarterly numbers',
      text: 'See attachment',
      attachments: [{ filename: 'budget-forecast.xlsx', content: b64('x') }],
    });
    sent.reply = await c.reply(ben, sent.lunch.messageId, { text: 'Yes, Friday works. Crème brûlée for dessert.' });
    // Another organization's mail with the same words is never found.
    await other.client.inboxes.messages.send(other.inboxes[0] as string, {
      to: other.inboxes[0] as string,
      subject: 'Invoice from elsewhere',
      text: 'invoice invoice',
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('inboxes.messages.search ranks subject matches before body matches, newest first within each', async () => {
    const res = await org.client.inboxes.messages.search(ben, { q: 'invoice' });
    expect(res.messages.map((m) => m.subject)).toEqual(['Invoice 2024-117 for March', 'Lunch on Friday?']);
    expect(res.count).toBe(2);
    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=invoice`);
    for (const m of raw.body.messages) expectShape(m, ITEM_KEYS, MESSAGE_REQUIRED);
    expect(Object.keys(raw.body).sort()).toEqual(['count', 'limit', 'messages']);
  });

  it('matches whole words (prefixes with *), every word, addresses, diacritics-insensitively and attachment names', async () => {
    const s = (q: string) =>
      org.client.inboxes.messages.search(ben, { q }).then((r) => r.messages.map((m) => m.messageId));
    expect(await s('quart* numb*')).toEqual([sent.report.messageId]);
    expect(await s('quart numb')).toEqual([]);
    expect(await s('forecast')).toEqual([sent.report.messageId]);
    expect(await s('creme brulee')).toEqual([sent.reply.messageId]);
    expect(await s('CAFE')).toEqual([sent.lunch.messageId]);
    expect(await s('invoice friday march')).toEqual([]);
    // Addresses: the sender's display name and address words.
    expect((await s(`archer ${ann.split('@')[0]}`)).length).toBe(4);
  });

  it('pages with the list cursor rules', async () => {
    const first = await org.client.inboxes.messages.search(ann, { q: ann.split('@')[0] as string, limit: 2 });
    expect(first.messages).toHaveLength(2);
    expect(first.nextPageToken).toBeDefined();
    const second = await org.client.inboxes.messages.search(ann, {
      q: ann.split('@')[0] as string,
      limit: 2,
      pageToken: first.nextPageToken as string,
    });
    const all = [...first.messages, ...second.messages].map((m) => m.messageId);
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(4);
    expect(second.nextPageToken).toBeUndefined();
  });

  it('threads.search, inboxes.threads.search and pods.threads.search find threads', async () => {
    const inbox = await org.client.inboxes.threads.search(ann, { q: 'friday' });
    expect(inbox.threads.map((t) => t.threadId)).toEqual([sent.lunch.threadId]);
    expect(inbox.threads[0]?.messageCount).toBe(2);
    const all = await org.client.threads.search({ q: 'invoice' });
    expect(all.threads.map((t) => t.inboxId).sort()).toEqual([ann, ann, ben, ben].sort());
    const raw = await call(server.url, org.key, 'GET', `/v0/threads/search?q=invoice`);
    for (const t of raw.body.threads) expectShape(t, THREAD_KEYS, THREAD_REQUIRED);
    const podId = (await org.client.inboxes.get(ann)).podId;
    const pod = await org.client.pods.threads.search(podId, { q: 'quarterly' });
    expect(pod.threads).toHaveLength(2);
    expectError(
      await call(server.url, other.key, 'GET', `/v0/pods/${podId}/threads/search?q=quarterly`),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
  });

  it('inboxes.search finds inboxes by address and display-name word prefixes', async () => {
    const res = await org.client.inboxes.search({ q: 'arch' });
    expect(res.inboxes.map((i) => i.inboxId)).toEqual([ann]);
    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/search?q=bak`);
    expect(raw.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id)).toEqual([ben]);
    for (const i of raw.body.inboxes)
      expectShape(i, INBOX_KEYS, {
        pod_id: 'string',
        inbox_id: 'string',
        email: 'string',
        created_at: 'string',
        updated_at: 'string',
      });
    expect((await other.client.inboxes.search({ q: 'arch' })).inboxes).toEqual([]);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/search?q=a`),
      400,
      'validation_error',
      'INVALID_QUERY',
      'q',
    );
  });

  it('follows deletes and trash: a deleted thread is no longer found', async () => {
    const before = await org.client.inboxes.messages.search(ann, { q: 'quarterly' });
    expect(before.messages).toHaveLength(1);
    await org.client.inboxes.threads.delete(ann, sent.report.threadId);
    expect((await org.client.inboxes.messages.search(ann, { q: 'quarterly' })).messages).toHaveLength(0);
    expect((await org.client.inboxes.threads.search(ann, { q: 'quarterly' })).threads).toHaveLength(0);
    expect(
      (
        await call(
          server.url,
          org.key,
          'DELETE',
          `/v0/inboxes/${enc(ann)}/threads/${sent.report.threadId}?permanent=true`,
        )
      ).status,
    ).toBe(204);
    expect((await org.client.inboxes.threads.search(ann, { q: 'quarterly' })).threads).toHaveLength(0);
    expect((await org.client.inboxes.threads.search(ben, { q: 'quarterly' })).threads).toHaveLength(1);
  });

  it('a copy deleted by a later unit of the same commit batch gets no document (SQLite writes documents at the batch end)', async () => {
    const { database, runtime } = server.service;
    const { db } = database;
    const letter = await org.client.inboxes.messages.send(ann, {
      to: ben,
      subject: 'Batch neighbours',
      text: 'nothing to see',
    });
    const row = await db
      .selectFrom('messages')
      .select(['id'])
      .where('message_id', '=', letter.messageId)
      .where('inbox_id', '=', ben)
      .executeTakeFirstOrThrow();
    const pk = Number(row.id);
    const [message] = await findMessagesByPks(db, [pk]);
    const [thread] = await findThreadsByIds(db, [message!.threadId]);
    const inbox = await findInbox(db, org.organizationId, ben);
    // The copy's document is written again below, under a word no message has: its own goes first.
    if (dialect === 'postgres') await sql`delete from message_search where message_pk = ${pk}`.execute(db);
    else await sql`delete from message_search where rowid = ${pk}`.execute(db);
    const word = 'quokkaorphan';
    const indexLater = await runtime.services.search.indexHook({
      text: word,
      html: null,
      attachments: [],
    } as unknown as ComposedMessage);
    // Queued in the same turn: one SQLite batch (the document deferred to its end, after the
    // delete); on PostgreSQL two transactions, the document first, then the delete.
    const indexed = database.commits.run((trx) =>
      indexLater(trx, [{ inbox: inbox!, message: message!, thread: thread! }]),
    );
    // On PostgreSQL the two are separate transactions racing for the row: make the order the one
    // this test means (the document first), rather than the pool's.
    if (dialect === 'postgres') await indexed;
    await Promise.all([
      indexed,
      runtime.services.messages.delete({ apiKeyId: 'test', organizationId: org.organizationId }, ben, letter.messageId),
    ]);
    const matches = async (table: 'message_search' | 'thread_search') =>
      dialect === 'postgres'
        ? Number(
            (
              await sql<{
                n: string;
              }>`select count(*) as n from ${sql.table(table)} where document @@ ${word}::tsquery`.execute(db)
            ).rows[0]?.n,
          )
        : Number(
            (
              await sql<{
                n: number;
              }>`select count(*) as n from ${sql.table(table)} where ${sql.table(table)} match ${word}`.execute(db)
            ).rows[0]?.n,
          );
    expect(await matches('message_search'), 'no document for the deleted copy').toBe(0);
    expect(await matches('thread_search'), "its words not in the thread's document").toBe(0);
    expect(
      (await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=${word}`)).body.messages,
    ).toEqual([]);
  });

  it("reads a large body's words (in a worker thread) as a small one's: HTML without text, its style left out, its last word found", async () => {
    const filler = '<p>Die Abrechnung &amp; die Übersicht folgen.</p>\n'.repeat(Math.ceil(OFFLOAD_WORDS_CHARS / 40));
    const c = org.client.inboxes.messages;
    for (const [size, body] of [
      ['small', ''],
      ['large', filler],
    ] as const) {
      const html = `<style>p { color: zebra${size} }</style>${body}<p><b>Quokka${size}</b> &amp; fin</p>`;
      expect(html.length >= OFFLOAD_WORDS_CHARS, size).toBe(size === 'large');
      await c.send(ann, { to: ben, subject: `Long letter ${size}`, html });
      const found = async (q: string) => (await c.search(ben, { q })).messages.map((m) => m.subject);
      expect(await found(`quokka${size}`)).toEqual([`Long letter ${size}`]);
      expect(await found(`zebra${size}`)).toEqual([]);
      expect(await found(`abrechnung quokka${size}`)).toEqual(size === 'large' ? [`Long letter ${size}`] : []);
    }
  });

  it('never 500s on hostile queries: quotes, operators, NUL, huge; answers 400 or results', async () => {
    for (const q of [
      '"',
      "'",
      '"invoice',
      'invoice OR 1=1',
      'NOT invoice',
      '-invoice',
      'inv*',
      '{subject}: x',
      'a:b',
      '(((',
      '\\',
      'ñ',
      '💥',
      'x'.repeat(1000),
      'AND',
      'NEAR(a b)',
      "'':*",
      '&|!',
    ]) {
      const res = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=${enc(q)}`);
      expect([200, 400], q).toContain(res.status);
      const threads = await call(server.url, org.key, 'GET', `/v0/threads/search?q=${enc(q)}`);
      expect([200, 400], q).toContain(threads.status);
    }
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=${'x'.repeat(1001)}`),
      400,
      'validation_error',
      'INVALID_QUERY',
      'q',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=%22%22`),
      400,
      'validation_error',
      'INVALID_QUERY',
      'q',
    );
    const nul = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=a%00b`);
    expect(nul.status).toBe(400);
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search`),
      400,
      'validation_error',
      expect.any(String) as unknown as string,
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=a&page_token=bogus`),
      400,
      'validation_error',
      'INVALID_PAGE_TOKEN',
    );
    expectError(
      await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=a&before=yesterday`),
      400,
      'validation_error',
      expect.any(String) as unknown as string,
    );
  });

  it('is not swallowed by /{id} routes, and keeps tenants apart', async () => {
    expectError(
      await call(server.url, other.key, 'GET', `/v0/inboxes/${enc(ben)}/messages/search?q=invoice`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    expectError(
      await call(server.url, other.key, 'GET', `/v0/inboxes/${enc(ben)}/threads/search?q=invoice`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    const theirs = await other.client.threads.search({ q: 'invoice' });
    expect(theirs.threads.map((t) => t.inboxId)).toEqual([other.inboxes[0]]);
    expect((await call(server.url, undefined, 'GET', `/v0/threads/search?q=invoice`)).status).toBe(401);
  });

  it.runIf(dialect === 'postgres')(
    'keeps 10,000 common words per tsvector column in the planner statistics (migration 0011)',
    async () => {
      // With the default 1,000, a word no message holds was estimated common and a large inbox was
      // walked row by row (bench/README.md, search at 1,000,000 messages).
      const { sql } = await import('kysely');
      const { rows } = await sql<{ table: string; column: string; target: number }>`
      select c.relname as table, a.attname as column, a.attstattarget as target from pg_attribute a join pg_class c on c.oid = a.attrelid
      where c.relname in ('message_search', 'thread_search') and a.attname in ('subject', 'addresses', 'document') and c.relnamespace = current_schema()::regnamespace
      order by 1, 2`.execute(server.service.runtime.services.db);
      expect(rows.map((r) => [r.table, r.column, Number(r.target)])).toEqual(
        ['message_search', 'thread_search'].flatMap((t) =>
          ['addresses', 'document', 'subject'].map((c) => [t, c, 1000]),
        ),
      );
    },
  );

  it('honours before/after', async () => {
    const all = await org.client.inboxes.messages.search(ben, { q: 'invoice' });
    const newest = all.messages.map((m) => m.timestamp).sort((a, b) => b.getTime() - a.getTime())[0] as Date;
    const older = await org.client.inboxes.messages.search(ben, { q: 'invoice', before: newest });
    expect(older.messages.every((m) => m.timestamp < newest)).toBe(true);
    expect(older.messages.length).toBeLessThan(all.messages.length);
  });

  it('narrows to the key: pod and inbox keys see only their scope, a key without messageRead gets 403', async () => {
    const p1 = await org.client.pods.create({ name: unique('p1') });
    const p2 = await org.client.pods.create({ name: unique('p2') });
    const a1 = (await org.client.pods.inboxes.create(p1.podId, { username: unique('sa') })).inboxId;
    const a2 = (await org.client.pods.inboxes.create(p2.podId, { username: unique('sb') })).inboxId;
    const word = unique('scopeword');
    await org.client.inboxes.messages.send(a1, { to: a2, subject: word, text: 'x' });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's CreateApiKeyResult names the secret apiKey on the wire
    const secret = (k: any) => k.apiKey as string;
    const p1Key = secret(await org.client.pods.apiKeys.create(p1.podId, { name: 'p1' }));
    const a2Key = secret(await org.client.inboxes.apiKeys.create(a2, { name: 'a2' }));
    const noPerm = secret(await org.client.apiKeys.create({ name: 'nothing', permissions: {} }));
    const inboxesOf = (body: { threads: { inbox_id: string }[] }) => body.threads.map((t) => t.inbox_id);
    expect(inboxesOf((await call(server.url, org.key, 'GET', `/v0/threads/search?q=${word}`)).body).sort()).toEqual(
      [a1, a2].sort(),
    );
    expect(inboxesOf((await call(server.url, p1Key, 'GET', `/v0/threads/search?q=${word}`)).body)).toEqual([a1]);
    expect(inboxesOf((await call(server.url, a2Key, 'GET', `/v0/threads/search?q=${word}`)).body)).toEqual([a2]);
    expect(
      inboxesOf((await call(server.url, org.key, 'GET', `/v0/pods/${p2.podId}/threads/search?q=${word}`)).body),
    ).toEqual([a2]);
    expectError(
      await call(server.url, p1Key, 'GET', `/v0/pods/${p2.podId}/threads/search?q=${word}`),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    expectError(
      await call(server.url, a2Key, 'GET', `/v0/inboxes/${enc(a1)}/messages/search?q=${word}`),
      404,
      'not_found',
      'INBOX_NOT_FOUND',
    );
    // An inbox key reaches no pod route, its own pod's included (as pods.get, pods.lists, metrics).
    expectError(
      await call(server.url, a2Key, 'GET', `/v0/pods/${p2.podId}/threads/search?q=${word}`),
      404,
      'not_found',
      'POD_NOT_FOUND',
    );
    expect((await call(server.url, a2Key, 'GET', `/v0/inboxes/${enc(a2)}/messages/search?q=${word}`)).body.count).toBe(
      1,
    );
    expect((await call(server.url, p1Key, 'GET', `/v0/inboxes/search?q=${a2.split('@')[0]}`)).body.inboxes).toEqual([]);
    expectError(
      await call(server.url, noPerm, 'GET', `/v0/threads/search?q=${word}`),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
    expectError(
      await call(server.url, noPerm, 'GET', `/v0/inboxes/search?q=${word}`),
      403,
      'permission_error',
      'PERMISSION_DENIED',
    );
  });

  it("indexes each copy with its own addresses: a bcc address finds the sender's copy only", async () => {
    const hidden = (await org.client.inboxes.create({ username: unique('blindcopy') })).inboxId;
    const word = unique('bccword');
    const { messageId } = await org.client.inboxes.messages.send(ann, {
      to: ben,
      bcc: hidden,
      subject: word,
      text: 'x',
    });
    const found = (inbox: string, q: string) =>
      org.client.inboxes.messages.search(inbox, { q }).then((r) => r.messages.map((m) => m.messageId));
    const bccWord = hidden.split('@')[0] as string;
    expect(await found(ann, bccWord)).toEqual([messageId]);
    expect(await found(ben, bccWord)).toEqual([]);
    expect(await found(hidden, bccWord)).toEqual([]);
    // Every copy is indexed, once.
    for (const inbox of [ann, ben, hidden]) expect(await found(inbox, word)).toEqual([messageId]);
  });

  it('shows a hit once, in its best tier, when the subject and the addresses both match', async () => {
    const benWord = ben.split('@')[0] as string;
    const { messageId, threadId } = await org.client.inboxes.messages.send(ann, {
      to: ben,
      subject: `About ${benWord}`,
      text: 'x',
    });
    const messages = (await org.client.inboxes.messages.search(ann, { q: benWord })).messages.map((m) => m.messageId);
    expect(messages[0]).toBe(messageId);
    expect(new Set(messages).size).toBe(messages.length);
    const threads = (await org.client.inboxes.threads.search(ann, { q: benWord })).threads.map((t) => t.threadId);
    expect(threads[0]).toBe(threadId);
    expect(new Set(threads).size).toBe(threads.length);
  });
});
