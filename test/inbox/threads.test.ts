import { AgentMail } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, expectError, isoTimestamp, organization, unique } from './fixtures.js';

const ITEM_KEYS = [
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
  'last_message_id',
  'last_message_at',
  'message_count',
  'size',
  'updated_at',
  'created_at',
];

describe.each(dialects)('%s: threads', (dialect) => {
  let server: InboxTestServer;
  let url: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('a conversation', () => {
    let org: Awaited<ReturnType<typeof organization>>;
    let ann: string;
    let ben: string;
    let carl: string;
    let first: { messageId: string; threadId: string };
    let reply: { messageId: string; threadId: string };

    beforeAll(async () => {
      org = await organization(server, [
        { username: unique('ann'), displayName: 'Ann' },
        unique('ben'),
        unique('carl'),
      ]);
      [ann, ben, carl] = org.inboxes as [string, string, string];
      first = await org.client.inboxes.messages.send(ann, {
        to: ben,
        cc: `Carl C <${carl}>`,
        subject: 'Budget',
        text: 'Numbers attached',
        attachments: [{ filename: 'q3.csv', content: b64('a,b\n1,2\n') }],
      });
      reply = await org.client.inboxes.messages.reply(ben, first.messageId, { text: 'Looks good', replyAll: true });
    });

    it('keeps the summary of its messages on both sides: the SDK Thread plus participants and last_message_at', async () => {
      const res = await call(url, org.key, 'GET', `/v0/inboxes/${enc(ann)}/threads/${first.threadId}`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual([...ITEM_KEYS, 'attachments', 'count', 'messages'].sort());
      const [m1, m2] = res.body.messages;
      expect(res.body).toEqual({
        inbox_id: ann,
        thread_id: first.threadId,
        labels: ['sent', 'received', 'unread'],
        timestamp: m2.timestamp,
        received_timestamp: m2.timestamp,
        sent_timestamp: m1.timestamp,
        senders: [`Ann <${ann}>`, ben],
        recipients: [ben, `Carl C <${carl}>`, `Ann <${ann}>`],
        participants: [ann, ben, carl],
        subject: 'Budget',
        preview: 'Looks good',
        last_message_id: reply.messageId,
        last_message_at: m2.timestamp,
        message_count: 2,
        size: m1.size + m2.size,
        updated_at: m2.timestamp,
        created_at: m1.timestamp,
        attachments: [
          {
            attachment_id: expect.any(String),
            filename: 'q3.csv',
            size: 8,
            content_type: 'text/csv',
            content_disposition: 'attachment',
          },
        ],
        count: 2,
        messages: [
          expect.objectContaining({ message_id: first.messageId, text: 'Numbers attached' }),
          expect.objectContaining({ message_id: reply.messageId, in_reply_to: first.messageId }),
        ],
      });
      expect(m1.timestamp <= m2.timestamp).toBe(true);

      const carlThread = (await org.client.inboxes.threads.list(carl)).threads[0] as AgentMail.ThreadItem;
      expect(carlThread.messageCount).toBe(2);
      expect(carlThread.labels).toEqual(['received', 'unread']);
      expect(carlThread.sentTimestamp).toBeUndefined();
      expect(carlThread.senders).toEqual([`Ann <${ann}>`, ben]);
    });

    it('reads through the SDK as a Thread with Date fields and messages oldest first', async () => {
      const thread = await org.client.inboxes.threads.get(ben, reply.threadId);
      expect(thread.timestamp).toBeInstanceOf(Date);
      expect(thread.messages.map((m) => m.messageId)).toEqual([first.messageId, reply.messageId]);
      expect(thread.lastMessageId).toBe(reply.messageId);
      expect(thread.labels).toEqual(['received', 'unread', 'sent']);
      expect((thread as unknown as { participants: string[] }).participants.sort()).toEqual([ann, ben, carl].sort());
    });

    it('follows label changes of its messages: the union of their labels', async () => {
      await org.client.inboxes.messages.update(ann, reply.messageId, {
        addLabels: ['follow-up'],
        removeLabels: ['unread'],
      });
      let thread = await org.client.inboxes.threads.get(ann, first.threadId);
      expect(thread.labels).toEqual(['sent', 'received', 'follow-up']);
      await org.client.inboxes.messages.update(ann, reply.messageId, { removeLabels: ['follow-up'] });
      thread = await org.client.inboxes.threads.get(ann, first.threadId);
      expect(thread.labels).toEqual(['sent', 'received']);
    });

    it('serves thread attachments through the inbox and the organization routes', async () => {
      const thread = await org.client.inboxes.threads.get(
        carl,
        (await org.client.inboxes.threads.list(carl)).threads[0]?.threadId as string,
      );
      const attachmentId = thread.attachments?.[0]?.attachmentId as string;
      const viaInbox = await org.client.inboxes.threads.getAttachment(carl, thread.threadId, attachmentId);
      expect(viaInbox).toMatchObject({ attachmentId, filename: 'q3.csv', size: 8 });
      expect(Buffer.from(await (await fetch(viaInbox.downloadUrl)).arrayBuffer()).toString()).toBe('a,b\n1,2\n');
      const viaOrg = await org.client.threads.getAttachment(thread.threadId, attachmentId);
      expect(viaOrg.filename).toBe('q3.csv');
      expectError(
        await call(url, org.key, 'GET', `/v0/threads/${thread.threadId}/attachments/nope`),
        404,
        'not_found',
        'ATTACHMENT_NOT_FOUND',
      );
      expectError(
        await call(
          url,
          org.key,
          'GET',
          `/v0/inboxes/${enc(ann)}/threads/${thread.threadId}/attachments/${attachmentId}`,
        ),
        404,
        'not_found',
        'ATTACHMENT_NOT_FOUND',
      );
    });
  });

  describe('lists', () => {
    let org: Awaited<ReturnType<typeof organization>>;
    let inbox: string;
    let other: string;
    const threads: string[] = [];

    beforeAll(async () => {
      org = await organization(server, [unique('lst'), unique('pen'), unique('pal')]);
      [inbox, other] = org.inboxes as [string, string];
      for (let i = 0; i < 5; i++)
        threads.push(
          (await org.client.inboxes.messages.send(inbox, { to: other, subject: `t${i}`, text: `thread ${i}` }))
            .threadId,
        );
      // The first thread gets new activity: it moves to the top.
      const firstMessage = (await org.client.inboxes.threads.get(inbox, threads[0] as string)).messages[0]
        ?.messageId as string;
      await org.client.inboxes.messages.send(org.inboxes[2] as string, {
        to: inbox,
        subject: 'unrelated',
        text: 'other',
      });
      const theirs = (await org.client.inboxes.messages.list(other, { ascending: true })).messages[0]
        ?.messageId as string;
      expect(theirs).toBe(firstMessage);
      await org.client.inboxes.messages.reply(other, theirs, { text: 'bump' });
    });

    it('lists ThreadItems newest activity first, without messages', async () => {
      const res = await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/threads`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['count', 'limit', 'threads']);
      expect(res.body.count).toBe(6);
      expect(res.body.threads[0].thread_id).toBe(threads[0]);
      expect(res.body.threads[0].message_count).toBe(2);
      for (const t of res.body.threads) {
        expect(t.messages).toBeUndefined();
        expect(t.timestamp).toEqual(isoTimestamp);
        expect(t.last_message_at).toBe(t.timestamp);
      }
      expect(res.body.threads.slice(2).map((t: { thread_id: string }) => t.thread_id)).toEqual(
        [...threads.slice(1)].reverse(),
      );
    });

    it('pages by keyset, both ways', async () => {
      const seen: string[] = [];
      let pageToken: string | undefined;
      do {
        const page = await org.client.inboxes.threads.list(inbox, { limit: 4, ...(pageToken ? { pageToken } : {}) });
        seen.push(...page.threads.map((t) => t.threadId));
        pageToken = page.nextPageToken;
      } while (pageToken);
      expect(seen).toHaveLength(6);
      expect(new Set(seen).size).toBe(6);
      const asc = await org.client.inboxes.threads.list(inbox, { ascending: true, limit: 10 });
      expect(asc.threads.map((t) => t.threadId)).toEqual([...seen].reverse());
    });

    it('filters by labels, before and after', async () => {
      const received = await org.client.inboxes.threads.list(inbox, { labels: ['received'] });
      expect(received.threads.map((t) => t.subject).sort()).toEqual(['t0', 'unrelated']);
      const both = await org.client.inboxes.threads.list(inbox, { labels: ['received', 'sent'] });
      expect(both.threads.map((t) => t.threadId)).toEqual([threads[0]]);
      const all = await org.client.inboxes.threads.list(inbox, { ascending: true });
      const pivot = all.threads[2]?.timestamp as Date;
      const before = await org.client.inboxes.threads.list(inbox, { before: pivot });
      expect(before.threads.every((t) => t.timestamp < pivot)).toBe(true);
      const after = await org.client.inboxes.threads.list(inbox, { after: pivot });
      expect(after.threads.every((t) => t.timestamp > pivot)).toBe(true);
      expect(before.count + after.count).toBe(5);
    });

    it('lists the threads of every inbox of the organization at /v0/threads, and only those', async () => {
      const stranger = await organization(server, [unique('str'), unique('stb')]);
      await stranger.client.inboxes.messages.send(stranger.inboxes[0] as string, {
        to: stranger.inboxes[1] as string,
        text: 'theirs',
      });
      const all = await org.client.threads.list({ limit: 100 });
      const inboxes = new Set(all.threads.map((t) => t.inboxId));
      expect([...inboxes].sort()).toEqual([...org.inboxes].sort());
      expect(all.count).toBe(6 + 5 + 1);
      const page1 = await org.client.threads.list({ limit: 5 });
      const page2 = await org.client.threads.list({ limit: 5, pageToken: page1.nextPageToken as string });
      expect(page2.threads.map((t) => t.threadId)).toEqual(all.threads.slice(5, 10).map((t) => t.threadId));
      const got = await org.client.threads.get(threads[0] as string);
      expect(got.inboxId).toBe(inbox);
      expect(got.messages).toHaveLength(2);
      const received = await org.client.threads.list({ labels: ['received'] });
      expect(received.threads.every((t) => t.labels.includes('received'))).toBe(true);
    });
  });

  describe('delete, trash and hidden labels', () => {
    it('moves a thread to the trash, hides it from lists unless include_trash, then deletes it for good', async () => {
      const org = await organization(server, [unique('da'), unique('db')]);
      const [da, dbx] = org.inboxes as [string, string];
      const kept = await org.client.inboxes.messages.send(da, { to: dbx, subject: 'kept', text: 'stay' });
      const gone = await org.client.inboxes.messages.send(da, {
        to: dbx,
        subject: 'gone',
        text: 'bye',
        attachments: [{ filename: 'a.txt', content: b64('x') }],
      });
      const goneAtB = (await org.client.inboxes.messages.get(dbx, gone.messageId)).threadId;

      await org.client.inboxes.threads.delete(dbx, goneAtB);
      const trashed = await org.client.inboxes.threads.get(dbx, goneAtB);
      expect(trashed.labels).toContain('trash');
      expect(trashed.messages.every((m) => m.labels.includes('trash'))).toBe(true);
      const listIds = async (path: string) =>
        ((await call(url, org.key, 'GET', path)).body.threads as { thread_id: string }[]).map((t) => t.thread_id);
      const atB = (await org.client.inboxes.messages.get(dbx, kept.messageId)).threadId;
      expect(await listIds(`/v0/inboxes/${enc(dbx)}/threads`)).toEqual([atB]);
      expect(await listIds(`/v0/inboxes/${enc(dbx)}/threads?include_trash=true`)).toEqual([goneAtB, atB]);
      expect(await listIds(`/v0/inboxes/${enc(dbx)}/threads?labels=${enc('["trash"]')}`)).toEqual([goneAtB]);
      expect((await org.client.threads.list({ includeTrash: true })).threads.map((t) => t.threadId)).toContain(goneAtB);
      expect((await org.client.threads.list()).threads.map((t) => t.threadId)).not.toContain(goneAtB);
      const messages = await call(url, org.key, 'GET', `/v0/inboxes/${enc(dbx)}/messages`);
      expect((messages.body.messages as { message_id: string }[]).map((m) => m.message_id)).toEqual([kept.messageId]);
      const withTrash = await org.client.inboxes.messages.list(dbx, { includeTrash: true });
      expect(withTrash.messages.map((m) => m.messageId)).toEqual([gone.messageId, kept.messageId]);
      // The sender's side is untouched.
      expect((await org.client.inboxes.threads.list(da)).count).toBe(2);

      // Deleting a thread in the trash removes it with its messages.
      const second = await call(url, org.key, 'DELETE', `/v0/threads/${goneAtB}`);
      expect(second.status).toBe(204);
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(dbx)}/threads/${goneAtB}`),
        404,
        'not_found',
        'THREAD_NOT_FOUND',
      );
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(dbx)}/messages/${enc(gone.messageId)}`),
        404,
        'not_found',
        'MESSAGE_NOT_FOUND',
      );
      expect(
        (await org.client.inboxes.messages.list(dbx, { includeTrash: true })).messages.map((m) => m.messageId),
      ).toEqual([kept.messageId]);
      expect((await org.client.inboxes.messages.get(da, gone.messageId)).messageId).toBe(gone.messageId);
    });

    it('permanent=true deletes at once, on both routes', async () => {
      const org = await organization(server, [unique('pa'), unique('pb')]);
      const [pa, pb] = org.inboxes as [string, string];
      const one = await org.client.inboxes.messages.send(pa, { to: pb, text: 'one' });
      const two = await org.client.inboxes.messages.send(pa, { to: pb, text: 'two' });
      const res = await call(url, org.key, 'DELETE', `/v0/inboxes/${enc(pa)}/threads/${one.threadId}?permanent=true`);
      expect(res.status).toBe(204);
      expect(res.bytes.length).toBe(0);
      expectError(await call(url, org.key, 'GET', `/v0/threads/${one.threadId}`), 404, 'not_found', 'THREAD_NOT_FOUND');
      await server.client049(org.key).threads.delete(two.threadId, { permanent: true }); // 0.4.9's option; 0.5 sends no query
      expectError(await call(url, org.key, 'GET', `/v0/threads/${two.threadId}`), 404, 'not_found', 'THREAD_NOT_FOUND');
      expect((await org.client.inboxes.threads.list(pa, { includeTrash: true })).count).toBe(0);
      expect((await org.client.inboxes.threads.list(pb)).count).toBe(2);
    });

    it('answers 404 for unknown threads, other inboxes and other organizations, 400 for a bad flag, 401 without a key', async () => {
      const a = await organization(server, [unique('xa'), unique('xb')]);
      const b = await organization(server, [unique('xc')]);
      const sent = await a.client.inboxes.messages.send(a.inboxes[0] as string, {
        to: a.inboxes[1] as string,
        text: 'x',
      });
      expectError(
        await call(url, a.key, 'DELETE', `/v0/threads/00000000-0000-0000-0000-000000000000`),
        404,
        'not_found',
        'THREAD_NOT_FOUND',
        'thread_id',
      );
      expectError(
        await call(url, a.key, 'DELETE', `/v0/inboxes/${enc(a.inboxes[1] as string)}/threads/${sent.threadId}`),
        404,
        'not_found',
        'THREAD_NOT_FOUND',
      );
      expectError(
        await call(url, b.key, 'DELETE', `/v0/threads/${sent.threadId}`),
        404,
        'not_found',
        'THREAD_NOT_FOUND',
      );
      expectError(
        await call(url, b.key, 'DELETE', `/v0/inboxes/${enc(a.inboxes[0] as string)}/threads/${sent.threadId}`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, a.key, 'DELETE', `/v0/threads/${sent.threadId}?permanent=perhaps`),
        400,
        'validation_error',
        'INVALID_VALUE',
        'permanent',
      );
      expectError(
        await call(url, undefined, 'DELETE', `/v0/threads/${sent.threadId}`),
        401,
        'authentication_error',
        'MISSING_API_KEY',
      );
      expect((await a.client.threads.get(sent.threadId)).threadId).toBe(sent.threadId);
    });

    it('hides spam and blocked messages unless asked for, but keeps a thread listed while one of its messages is not hidden', async () => {
      const org = await organization(server, [unique('sa'), unique('sb')]);
      const [sa, sb] = org.inboxes as [string, string];
      const first = await org.client.inboxes.messages.send(sa, { to: sb, subject: 'mixed', text: 'hello' });
      const junk = await org.client.inboxes.messages.send(sa, { to: sb, subject: 'junk', text: 'buy' });
      const blockedOne = await org.client.inboxes.messages.send(sa, { to: sb, subject: 'blocked', text: 'no' });
      const reply = await org.client.inboxes.messages.reply(sa, first.messageId, { text: 'follow-up' });
      await org.client.inboxes.messages.update(sb, junk.messageId, { addLabels: ['spam'] });
      await org.client.inboxes.messages.update(sb, reply.messageId, { addLabels: ['spam'] });
      await org.client.inboxes.messages.update(sb, blockedOne.messageId, { addLabels: ['blocked'] });
      const ids = async (query: string) =>
        (
          (await call(url, org.key, 'GET', `/v0/inboxes/${enc(sb)}/messages${query}`)).body.messages as {
            message_id: string;
          }[]
        ).map((m) => m.message_id);
      expect(await ids('')).toEqual([first.messageId]);
      expect(await ids('?include_spam=true')).toEqual([reply.messageId, junk.messageId, first.messageId]);
      expect(await ids('?include_spam=true&include_blocked=true')).toEqual([
        reply.messageId,
        blockedOne.messageId,
        junk.messageId,
        first.messageId,
      ]);
      expect(await ids(`?labels=${enc('["blocked"]')}`)).toEqual([blockedOne.messageId]);
      const threads = await org.client.inboxes.threads.list(sb);
      const firstThread = (await org.client.inboxes.messages.get(sb, first.messageId)).threadId;
      expect(threads.threads.map((t) => t.threadId)).toEqual([firstThread]);
      expect((await org.client.inboxes.threads.list(sb, { includeSpam: true, includeBlocked: true })).count).toBe(3);
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(sb)}/messages?include_spam=maybe`),
        400,
        'validation_error',
        'INVALID_VALUE',
        'include_spam',
      );
    });
  });

  describe('not found', () => {
    it('answers 404 for unknown threads, other inboxes’ threads and other organizations’ threads', async () => {
      const a = await organization(server, [unique('a'), unique('b')]);
      const b = await organization(server, [unique('c')]);
      const sent = await a.client.inboxes.messages.send(a.inboxes[0] as string, {
        to: a.inboxes[1] as string,
        text: 'x',
      });
      expectError(
        await call(url, a.key, 'GET', `/v0/threads/00000000-0000-0000-0000-000000000000`),
        404,
        'not_found',
        'THREAD_NOT_FOUND',
        'thread_id',
      );
      expectError(
        await call(url, a.key, 'GET', `/v0/inboxes/${enc(a.inboxes[1] as string)}/threads/${sent.threadId}`),
        404,
        'not_found',
        'THREAD_NOT_FOUND',
      );
      expectError(await call(url, b.key, 'GET', `/v0/threads/${sent.threadId}`), 404, 'not_found', 'THREAD_NOT_FOUND');
      expectError(
        await call(url, b.key, 'GET', `/v0/inboxes/${enc(a.inboxes[0] as string)}/threads/${sent.threadId}`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, b.key, 'GET', `/v0/inboxes/${enc(a.inboxes[0] as string)}/threads`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expect((await b.client.threads.list()).count).toBe(0);
      const err = await b.client.threads.get(sent.threadId).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentMail.NotFoundError);
    });

    it('refuses bad list parameters', async () => {
      const a = await organization(server, [unique('p')]);
      expectError(
        await call(url, a.key, 'GET', `/v0/threads?page_token=nope`),
        400,
        'validation_error',
        'INVALID_PAGE_TOKEN',
      );
      expectError(
        await call(url, a.key, 'GET', `/v0/inboxes/${enc(a.inboxes[0] as string)}/threads?labels=${enc('{"a":1}')}`),
        400,
        'validation_error',
        'INVALID_LABELS',
      );
      expectError(
        await call(url, a.key, 'GET', `/v0/threads?after=soon`),
        400,
        'validation_error',
        'INVALID_VALUE',
        'after',
      );
    });
  });
});
