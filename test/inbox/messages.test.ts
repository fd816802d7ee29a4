import { AgentMail, type AgentMailError } from 'agentmail';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { b64, call, enc, eventsOf, expectError, isoTimestamp, organization, parseRaw, unique } from './fixtures.js';

const MESSAGE_KEYS = [
  'inbox_id',
  'thread_id',
  'message_id',
  'labels',
  'timestamp',
  'from',
  'to',
  'subject',
  'preview',
  'size',
  'updated_at',
  'created_at',
];

describe.each(dialects)('%s: messages', (dialect) => {
  let server: InboxTestServer;
  let url: string;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('send', () => {
    it('answers message_id and thread_id on the SDK path, which resolve in the sender inbox as its sent copy', async () => {
      const org = await organization(server, [
        { username: unique('alice'), displayName: 'Alice Agent' },
        unique('bob'),
      ]);
      const [alice, bob] = org.inboxes as [string, string];
      const sent = await org.client.inboxes.messages.send(alice, { to: bob, subject: 'Hello', text: 'Hi Bob' });
      expect(sent.messageId).toMatch(/^<[0-9a-f-]{36}@inbox\.test>$/);
      expect(typeof sent.threadId).toBe('string');

      const got = await call(url, org.key, 'GET', `/v0/inboxes/${enc(alice)}/messages/${enc(sent.messageId)}`);
      expect(got.status).toBe(200);
      expect(Object.keys(got.body).sort()).toEqual([...MESSAGE_KEYS, 'text', 'extracted_text'].sort());
      expect(got.body).toEqual({
        inbox_id: alice,
        thread_id: sent.threadId,
        message_id: sent.messageId,
        labels: ['sent'],
        timestamp: isoTimestamp,
        from: `Alice Agent <${alice}>`,
        to: [bob],
        subject: 'Hello',
        preview: 'Hi Bob',
        text: 'Hi Bob',
        extracted_text: 'Hi Bob',
        size: expect.any(Number),
        updated_at: got.body.timestamp,
        created_at: got.body.timestamp,
      });
    });

    it('serves the spec path POST /messages with the same handler', async () => {
      const org = await organization(server, [unique('spec'), unique('peer')]);
      const [from, to] = org.inboxes as [string, string];
      const res = await call(url, org.key, 'POST', `/v0/inboxes/${enc(from)}/messages`, {
        to: [to],
        text: 'via the spec path',
      });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['message_id', 'thread_id']);
      const got = await org.client.inboxes.messages.get(from, res.body.message_id);
      expect(got.threadId).toBe(res.body.thread_id);
      expect(got.labels).toEqual(['sent']);
    });

    it('delivers a copy to each local recipient inbox at once: received and unread, its own thread, no bcc', async () => {
      const org = await organization(server, [unique('s'), unique('to'), unique('cc'), unique('bcc')]);
      const [sender, to, cc, bcc] = org.inboxes as [string, string, string, string];
      const sent = await org.client.inboxes.messages.send(sender, {
        to: `Tom <${to}>`,
        cc: [cc],
        bcc,
        subject: 'Team',
        text: 'Hello all',
        html: '<p>Hello all</p>',
      });

      const own = await org.client.inboxes.messages.get(sender, sent.messageId);
      expect(own.bcc).toEqual([bcc]);
      expect(own.cc).toEqual([cc]);
      for (const inbox of [to, cc, bcc]) {
        const list = await org.client.inboxes.messages.list(inbox);
        expect(list.count).toBe(1);
        const item = list.messages[0] as AgentMail.MessageItem;
        expect(item.messageId).toBe(sent.messageId);
        expect(item.labels).toEqual(['received', 'unread']);
        expect(item.threadId).not.toBe(sent.threadId);
        expect(item.bcc).toBeUndefined();
        expect(item.to).toEqual([`Tom <${to}>`]);
        const full = await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.messageId)}`);
        expect(full.body.bcc).toBeUndefined();
        expect(full.body.html).toBe('<p>Hello all</p>');
        const raw = await parseRaw(
          Buffer.from(
            await (
              await fetch((await org.client.inboxes.messages.getRaw(inbox, sent.messageId)).downloadUrl)
            ).arrayBuffer(),
          ),
        );
        expect(raw.headers.has('bcc')).toBe(false);
        expect(raw.text?.trim()).toBe('Hello all');
        expect(raw.bcc).toBeUndefined();
      }
    });

    it('delivers once per inbox however often and however cased the address appears', async () => {
      const org = await organization(server, [unique('s'), unique('r')]);
      const [sender, rcpt] = org.inboxes as [string, string];
      await org.client.inboxes.messages.send(sender, {
        to: [rcpt.toUpperCase()],
        cc: rcpt,
        bcc: [`Again <${rcpt}>`],
        text: 'once',
      });
      expect((await org.client.inboxes.messages.list(rcpt)).count).toBe(1);
    });

    it('stores a message to its own inbox once, labelled sent and received', async () => {
      const org = await organization(server, [unique('self')]);
      const [me] = org.inboxes as [string];
      const sent = await org.client.inboxes.messages.send(me, { to: me, subject: 'Note to self', text: 'remember' });
      const list = await org.client.inboxes.messages.list(me);
      expect(list.count).toBe(1);
      expect(list.messages[0]?.labels).toEqual(['sent', 'received', 'unread']);
      const thread = await org.client.inboxes.threads.get(me, sent.threadId);
      expect(thread.messageCount).toBe(1);
      expect(thread.sentTimestamp).toEqual(thread.receivedTimestamp);
    });

    it('delivers across organizations, and the copy belongs to the recipient organization only', async () => {
      const a = await organization(server, [unique('a')]);
      const b = await organization(server, [unique('b')]);
      const sent = await a.client.inboxes.messages.send(a.inboxes[0] as string, {
        to: b.inboxes[0] as string,
        text: 'cross',
      });
      const copy = await b.client.inboxes.messages.get(b.inboxes[0] as string, sent.messageId);
      expect(copy.labels).toEqual(['received', 'unread']);
      expect((await call(url, a.key, 'GET', `/v0/threads/${copy.threadId}`)).status).toBe(404);
      expect((await b.client.threads.get(copy.threadId)).inboxId).toBe(b.inboxes[0]);
    });

    it('keeps the client labels on the sender copy only', async () => {
      const org = await organization(server, [unique('s'), unique('r')]);
      const [sender, rcpt] = org.inboxes as [string, string];
      const sent = await org.client.inboxes.messages.send(sender, {
        to: rcpt,
        text: 'x',
        labels: ['campaign-7', 'important', 'important'],
      });
      expect((await org.client.inboxes.messages.get(sender, sent.messageId)).labels).toEqual([
        'sent',
        'campaign-7',
        'important',
      ]);
      expect((await org.client.inboxes.messages.get(rcpt, sent.messageId)).labels).toEqual(['received', 'unread']);
    });

    it('composes a real MIME message: headers, alternatives, attachments, custom headers, no Bcc', async () => {
      const org = await organization(server, [
        { username: unique('mime'), displayName: 'Müller, Jürgen' },
        unique('r'),
        unique('c'),
      ]);
      const [sender, rcpt, cc] = org.inboxes as [string, string, string];
      const pdf = Buffer.alloc(3000, 0x25);
      const sent = await org.client.inboxes.messages.send(sender, {
        to: [`Rita Receiver <${rcpt}>`],
        cc: [cc],
        bcc: ['hidden@inbox.test'],
        replyTo: 'desk@inbox.test',
        subject: 'Grüße zum Bericht',
        text: 'Anbei der Bericht.',
        html: '<p>Anbei der <b>Bericht</b>.</p><img src="cid:logo@mime">',
        headers: { 'X-Campaign': 'q3', 'List-Unsubscribe': '<mailto:u@inbox.test>' },
        attachments: [
          { filename: 'bericht.pdf', contentType: 'application/pdf', content: b64(pdf) },
          {
            filename: 'logo.png',
            contentType: 'image/png',
            contentId: 'logo@mime',
            content: b64('png-bytes'),
            contentDisposition: 'inline',
          },
        ],
      });
      const raw = await org.client.inboxes.messages.getRaw(sender, sent.messageId);
      const bytes = Buffer.from(await (await fetch(raw.downloadUrl)).arrayBuffer());
      expect(bytes.length).toBe(raw.size);
      const mail = await parseRaw(bytes);
      expect(mail.messageId).toBe(sent.messageId);
      expect(mail.subject).toBe('Grüße zum Bericht');
      expect(mail.from?.value).toEqual([{ name: 'Müller, Jürgen', address: sender }]);
      expect(mail.to && !Array.isArray(mail.to) ? mail.to.value : []).toEqual([
        { name: 'Rita Receiver', address: rcpt },
      ]);
      expect(mail.cc && !Array.isArray(mail.cc) ? mail.cc.value : []).toEqual([{ name: '', address: cc }]);
      expect(mail.replyTo?.value).toEqual([{ name: '', address: 'desk@inbox.test' }]);
      expect(mail.headers.has('bcc')).toBe(false);
      expect(bytes.toString('latin1')).not.toContain('hidden@inbox.test');
      expect(mail.date?.toISOString().slice(0, 16)).toBe(
        (await org.client.inboxes.messages.get(sender, sent.messageId)).timestamp.toISOString().slice(0, 16),
      );
      expect(mail.headers.get('mime-version')).toBe('1.0');
      expect(mail.headers.get('x-campaign')).toBe('q3');
      expect(
        String(mail.headers.get('content-type') && (mail.headers.get('content-type') as { value: string }).value),
      ).toBe('multipart/mixed');
      expect(mail.text?.trim()).toBe('Anbei der Bericht.');
      expect(mail.html).toContain('<b>Bericht</b>');
      expect(mail.attachments.map((a) => [a.filename, a.contentType, a.contentDisposition, a.size])).toEqual([
        ['logo.png', 'image/png', 'inline', 9],
        ['bericht.pdf', 'application/pdf', 'attachment', 3000],
      ]);
      expect(mail.attachments.find((a) => a.filename === 'bericht.pdf')?.content.equals(pdf)).toBe(true);
      expect(mail.attachments.find((a) => a.filename === 'logo.png')?.cid).toBe('logo@mime');
      // The recipient stores the same source.
      const theirs = await org.client.inboxes.messages.getRaw(rcpt, sent.messageId);
      expect(Buffer.from(await (await fetch(theirs.downloadUrl)).arrayBuffer()).equals(bytes)).toBe(true);
    });

    it('answers with the wire shape of an attachment in the message', async () => {
      const org = await organization(server, [unique('s'), unique('r')]);
      const [sender, rcpt] = org.inboxes as [string, string];
      const sent = await org.client.inboxes.messages.send(sender, {
        to: rcpt,
        text: 'x',
        attachments: [{ filename: 'a.txt', content: b64('hello') }],
      });
      const got = await call(url, org.key, 'GET', `/v0/inboxes/${enc(sender)}/messages/${enc(sent.messageId)}`);
      expect(got.body.attachments).toEqual([
        {
          attachment_id: expect.any(String),
          filename: 'a.txt',
          size: 5,
          content_type: 'text/plain',
          content_disposition: 'attachment',
        },
      ]);
    });
  });

  describe('validation', () => {
    let org: Awaited<ReturnType<typeof organization>>;
    let sender: string;
    let rcpt: string;
    const send = (body: unknown) => call(url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, body);

    beforeAll(async () => {
      org = await organization(server, [unique('v'), unique('vr')]);
      [sender, rcpt] = org.inboxes as [string, string];
    });

    it.each([
      ['to', { to: 'not-an-address' }],
      ['to', { to: ['ok@inbox.test', 'bad@@inbox.test'] }],
      ['to', { to: 'Name <missing-bracket@inbox.test' }],
      ['cc', { cc: 'x@' }],
      ['bcc', { bcc: ['a@b'] }],
      ['reply_to', { reply_to: 'nobody' }],
      ['to', { to: 'a@inbox.test\r\nBcc: evil@inbox.test' }],
    ])('answers 400 INVALID_EMAIL with details.field %s for %j', async (field, patch) => {
      const res = await send({ to: rcpt, text: 'x', ...patch });
      expectError(res, 400, 'validation_error', 'INVALID_EMAIL', field);
    });

    it('raises the SDK ValidationError for a bad address', async () => {
      const err = await org.client.inboxes.messages.send(sender, { to: 'nope', text: 'x' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentMail.ValidationError);
      expect((err as AgentMailError).statusCode).toBe(400);
      expect((err as AgentMailError).body).toMatchObject({
        error: { type: 'validation_error', details: { field: 'to', code: 'INVALID_EMAIL' } },
      });
    });

    it.each([
      ['MISSING_RECIPIENT', 'to', { text: 'x' }],
      ['MISSING_RECIPIENT', 'to', { to: [], text: 'x' }],
      ['MISSING_RECIPIENT', 'to', { to: '', cc: 'a@inbox.test', text: 'x' }],
      ['MISSING_CONTENT', 'text', { to: 'a@inbox.test' }],
      ['MISSING_CONTENT', 'text', { to: 'a@inbox.test', text: '', html: '' }],
      ['INVALID_SUBJECT', 'subject', { to: 'a@inbox.test', text: 'x', subject: 'two\nlines' }],
      [
        'ATTACHMENT_URL_INVALID',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ url: 'ftp://127.0.0.1/x.pdf', filename: 'x.pdf' }] },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ url: 'http://127.0.0.1:9/x.pdf', content: 'eA==' }] },
      ],
      ['INVALID_ATTACHMENT', 'attachments', { to: 'a@inbox.test', attachments: [{ filename: 'x.txt' }] }],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ filename: 'x.txt', content: 'not base64!' }] },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ filename: 'x.txt', content: 'QUJDRA=' }] },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ filename: '../etc/passwd', content: 'QUJD' }] },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ filename: 'a\r\nb.txt', content: 'QUJD' }] },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        {
          to: 'a@inbox.test',
          attachments: [{ filename: 'a.txt', content: 'QUJD', content_type: 'text/plain\r\nX-Evil: 1' }],
        },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ filename: 'a.txt', content: 'QUJD', content_type: 'nonsense' }] },
      ],
      [
        'INVALID_ATTACHMENT',
        'attachments',
        { to: 'a@inbox.test', attachments: [{ content: 'QUJD', content_id: '<a b>' }] },
      ],
      ['INVALID_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'X-Evil': 'a\r\nBcc: x@inbox.test' } }],
      ['INVALID_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'Bad Name': 'v' } }],
      ['INVALID_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'X-Colon:': 'v' } }],
      ['INVALID_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'X-Twice': 'a', 'x-twice': 'b' } }],
      ['FORBIDDEN_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { From: 'ceo@inbox.test' } }],
      ['FORBIDDEN_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'message-id': '<x@y>' } }],
      ['FORBIDDEN_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'Content-Type': 'text/html' } }],
      ['FORBIDDEN_HEADER', 'headers', { to: 'a@inbox.test', text: 'x', headers: { 'In-Reply-To': '<x@y>' } }],
      ['INVALID_LABEL', 'labels', { to: 'a@inbox.test', text: 'x', labels: [''] }],
      ['INVALID_LABEL', 'labels', { to: 'a@inbox.test', text: 'x', labels: ['x'.repeat(256)] }],
      ['RESERVED_LABEL', 'labels', { to: 'a@inbox.test', text: 'x', labels: ['Sent'] }],
      ['RESERVED_LABEL', 'labels', { to: 'a@inbox.test', text: 'x', labels: ['received'] }],
    ])('answers 400 %s (field %s) for %j', async (code, field, body) => {
      expectError(await send(body), 400, 'validation_error', code, field);
    });

    it('refuses more than INBOX_MAX_RECIPIENTS (50) distinct recipients across to, cc and bcc', async () => {
      const many = Array.from({ length: 51 }, (_, i) => `r${i}@inbox.test`);
      expectError(
        await send({ to: many.slice(0, 20), cc: many.slice(20, 40), bcc: many.slice(40), text: 'x' }),
        400,
        'validation_error',
        'TOO_MANY_RECIPIENTS',
        'to',
      );
      // 50 is fine (they bounce, but the send is accepted).
      expect((await send({ to: many.slice(0, 30), bcc: many.slice(30, 50), text: 'x' })).status).toBe(200);
    });

    it('answers schema violations in the envelope too', async () => {
      expectError(
        await send({ to: rcpt, text: 'x', attachments: 'nope' }),
        400,
        'validation_error',
        'INVALID_VALUE',
        'attachments',
      );
      expectError(await send({ to: rcpt, text: 'x', headers: { 'X-N': 5 } }), 400, 'validation_error', 'INVALID_VALUE');
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, '{"to":'),
        400,
        'validation_error',
        'INVALID_JSON',
      );
    });

    it('stores nothing for a refused send', async () => {
      expect((await send({ to: 'broken', text: 'x' })).status).toBe(400);
      const list = await org.client.inboxes.messages.list(rcpt);
      expect(list.messages.filter((m) => m.preview === 'x' && m.to.includes('broken'))).toEqual([]);
    });
  });

  describe('attachment size limit', () => {
    let small: InboxTestServer;
    beforeAll(async () => {
      small = await startInboxServer({ dialect, env: { INBOX_MAX_ATTACHMENT_BYTES: '1000' } });
    });
    afterAll(async () => {
      await small?.close();
    });

    it('counts the decoded bytes of all attachments against INBOX_MAX_ATTACHMENT_BYTES', async () => {
      const org = await organization(small, [unique('s'), unique('r')]);
      const [sender, rcpt] = org.inboxes as [string, string];
      const ok = await call(small.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
        to: rcpt,
        attachments: [
          { filename: 'a', content: b64(Buffer.alloc(600)) },
          { filename: 'b', content: b64(Buffer.alloc(400)) },
        ],
      });
      expect(ok.status).toBe(200);
      const res = await call(small.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
        to: rcpt,
        attachments: [
          { filename: 'a', content: b64(Buffer.alloc(600)) },
          { filename: 'b', content: b64(Buffer.alloc(401)) },
        ],
      });
      expectError(res, 400, 'validation_error', 'ATTACHMENTS_TOO_LARGE', 'attachments');
    });
  });

  describe('recipients on other domains', () => {
    it('are refused with EXTERNAL_DELIVERY_DISABLED while no relay is configured, and nothing is stored or counted', async () => {
      const org = await organization(server, [unique('ext'), unique('local')]);
      const [sender, local] = org.inboxes as [string, string];
      const res = await call(url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, {
        to: local,
        cc: ['someone@example.org'],
        text: 'x',
      });
      expectError(res, 400, 'validation_error', 'EXTERNAL_DELIVERY_DISABLED', 'cc');
      expect((await org.client.inboxes.messages.list(sender)).count).toBe(0);
      expect((await org.client.inboxes.messages.list(local)).count).toBe(0);
      const counters = await server.service.runtime.services.db
        .selectFrom('send_counters')
        .selectAll()
        .where('organization_id', '=', org.organizationId)
        .execute();
      expect(counters).toEqual([]);
    });

    it('are queued as a durable mail.outbound job when INBOX_SMTP_RELAY_URL is set', async () => {
      const relay = await startInboxServer({ dialect, env: { INBOX_SMTP_RELAY_URL: 'smtp://127.0.0.1:2' } });
      try {
        const org = await organization(relay, [unique('ext'), unique('local')]);
        const [sender, local] = org.inboxes as [string, string];
        const sent = await org.client.inboxes.messages.send(sender, {
          to: ['Ext <Someone@Example.org>', local],
          bcc: 'x@other.example',
          text: 'x',
        });
        const jobs = await relay.service.runtime.services.db
          .selectFrom('jobs')
          .selectAll()
          .where('queue', '=', 'mail.outbound')
          .execute();
        expect(jobs).toHaveLength(1);
        expect(JSON.parse((jobs[0] as { payload: string }).payload)).toEqual({
          message_pk: expect.any(Number),
          message_id: sent.messageId,
          organization_id: org.organizationId,
          inbox_id: sender,
          thread_id: sent.threadId,
          recipients: ['Someone@Example.org', 'x@other.example'],
        });
        expect((await org.client.inboxes.messages.list(local)).count).toBe(1);
        // Only the local recipient is reported delivered; the relay reports the others later.
        const [delivered] = await eventsOf(relay, { type: 'message.delivered', inboxId: sender });
        expect(delivered.delivery.recipients).toEqual([local]);
      } finally {
        await relay.close();
      }
    });
  });

  describe('events', () => {
    it('records message.sent, message.received per recipient inbox and message.delivered, in the wire shapes of AgentMail', async () => {
      const org = await organization(server, [
        { username: unique('ev'), displayName: 'Eve' },
        unique('r1'),
        unique('r2'),
      ]);
      const [sender, r1, r2] = org.inboxes as [string, string, string];
      const sent = await org.client.inboxes.messages.send(sender, {
        to: r1,
        cc: r2,
        subject: 'Events',
        text: 'payload',
      });
      const ref = { inbox_id: sender, thread_id: sent.threadId, message_id: sent.messageId, timestamp: isoTimestamp };
      const [s] = await eventsOf(server, { type: 'message.sent', inboxId: sender });
      expect(s).toMatchObject({
        type: 'event',
        event_type: 'message.sent',
        event_id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
        send: { ...ref, recipients: [r1, r2] },
      });
      const [d] = await eventsOf(server, { type: 'message.delivered', inboxId: sender });
      expect(d).toMatchObject({ event_type: 'message.delivered', delivery: { ...ref, recipients: [r1, r2] } });
      for (const inbox of [r1, r2]) {
        const [r] = await eventsOf(server, { type: 'message.received', inboxId: inbox });
        const copy = await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.messageId)}`);
        const thread = await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/threads/${copy.body.thread_id}`);
        // The event's thread is a ThreadItem: the Thread without its page of messages (count, messages).
        const { messages: _m, count: _c, ...threadItem } = thread.body;
        expect(r.message).toEqual(copy.body);
        expect(r.thread).toEqual(threadItem);
        expect(r._organization_id).toBe(org.organizationId);
      }
      expect(await eventsOf(server, { type: 'message.received', inboxId: sender })).toEqual([]);
    });

    it('bounces a local address without an inbox: message.bounced for the sender, no message.delivered when nobody got it', async () => {
      const org = await organization(server, [unique('bnc')]);
      const [sender] = org.inboxes as [string];
      const ghost = `${unique('ghost')}@agents.test`;
      const sent = await org.client.inboxes.messages.send(sender, { to: ghost, text: 'anyone?' });
      const [bounce] = await eventsOf(server, { type: 'message.bounced', inboxId: sender });
      expect(bounce).toMatchObject({
        event_type: 'message.bounced',
        bounce: {
          inbox_id: sender,
          thread_id: sent.threadId,
          message_id: sent.messageId,
          timestamp: isoTimestamp,
          type: 'Permanent',
          sub_type: 'NoEmail',
          recipients: [{ address: ghost, status: '5.1.1', diagnostic_code: 'smtp; 550 5.1.1 no such mailbox' }],
        },
      });
      expect(await eventsOf(server, { type: 'message.delivered', inboxId: sender })).toEqual([]);
      expect((await org.client.inboxes.messages.get(sender, sent.messageId)).labels).toEqual(['sent']);
    });

    it('reports delivered recipients and bounced ones separately when only some exist', async () => {
      const org = await organization(server, [unique('mix'), unique('real')]);
      const [sender, real] = org.inboxes as [string, string];
      const ghost = `${unique('ghost')}@inbox.test`;
      await org.client.inboxes.messages.send(sender, { to: [real, ghost], text: 'partly' });
      expect((await eventsOf(server, { type: 'message.delivered', inboxId: sender }))[0].delivery.recipients).toEqual([
        real,
      ]);
      expect((await eventsOf(server, { type: 'message.bounced', inboxId: sender }))[0].bounce.recipients).toEqual([
        { address: ghost, status: '5.1.1', diagnostic_code: 'smtp; 550 5.1.1 no such mailbox' },
      ]);
    });
  });

  describe('list', () => {
    let org: Awaited<ReturnType<typeof organization>>;
    let inbox: string;
    const ids: string[] = [];

    beforeAll(async () => {
      org = await organization(server, [unique('list'), unique('src')]);
      inbox = org.inboxes[0] as string;
      for (let i = 0; i < 7; i++) {
        const sent = await org.client.inboxes.messages.send(org.inboxes[1] as string, {
          to: inbox,
          subject: `m${i}`,
          text: `body ${i}`,
        });
        ids.push(sent.messageId);
      }
    });

    it('lists newest first as MessageItems: no bodies, no reply_to', async () => {
      const res = await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['count', 'limit', 'messages']);
      expect(res.body).toMatchObject({ count: 7, limit: 50 });
      expect(res.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual([...ids].reverse());
      for (const m of res.body.messages) {
        expect(Object.keys(m).sort()).toEqual([...MESSAGE_KEYS].sort());
      }
    });

    it('pages with an opaque page_token until the last page, which has no next_page_token', async () => {
      const seen: string[] = [];
      let pageToken: string | undefined;
      let pages = 0;
      do {
        const page = await org.client.inboxes.messages.list(inbox, { limit: 3, ...(pageToken ? { pageToken } : {}) });
        expect(page.count).toBe(page.messages.length);
        expect(page.limit).toBe(3);
        seen.push(...page.messages.map((m) => m.messageId));
        pageToken = page.nextPageToken;
        pages++;
      } while (pageToken);
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());
    });

    it('lists oldest first with ascending, and pages that way too', async () => {
      const first = await org.client.inboxes.messages.list(inbox, { limit: 4, ascending: true });
      expect(first.messages.map((m) => m.messageId)).toEqual(ids.slice(0, 4));
      const second = await org.client.inboxes.messages.list(inbox, {
        limit: 4,
        pageToken: first.nextPageToken as string,
      });
      expect(second.messages.map((m) => m.messageId)).toEqual(ids.slice(4));
      expect(second.nextPageToken).toBeUndefined();
    });

    it('caps limit at 100 and refuses bad limits and tokens', async () => {
      expect((await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?limit=1000`)).body.limit).toBe(100);
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?limit=0`),
        400,
        'validation_error',
        'INVALID_VALUE',
        'limit',
      );
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?page_token=garbage`),
        400,
        'validation_error',
        'INVALID_PAGE_TOKEN',
        'page_token',
      );
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?labels=${enc('["x",1]')}`),
        400,
        'validation_error',
        'INVALID_LABELS',
        'labels',
      );
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?before=yesterday`),
        400,
        'validation_error',
        'INVALID_VALUE',
        'before',
      );
    });

    it('filters by before and after (exclusive)', async () => {
      const all = await org.client.inboxes.messages.list(inbox, { ascending: true });
      const times = all.messages.map((m) => m.timestamp);
      const mid = times[3] as Date;
      const before = await org.client.inboxes.messages.list(inbox, { before: mid, ascending: true });
      expect(before.messages.every((m) => m.timestamp < mid)).toBe(true);
      expect(before.messages.map((m) => m.messageId)).toEqual(
        all.messages.filter((m) => m.timestamp < mid).map((m) => m.messageId),
      );
      const after = await org.client.inboxes.messages.list(inbox, { after: mid });
      expect(after.messages.map((m) => m.messageId).sort()).toEqual(
        all.messages
          .filter((m) => m.timestamp > mid)
          .map((m) => m.messageId)
          .sort(),
      );
    });

    it('filters by labels (a JSON array; messages having all of them) after PATCH add_labels/remove_labels', async () => {
      const [m0, m1, m2] = ids as [string, string, string];
      const updated = await org.client.inboxes.messages.update(inbox, m0, {
        addLabels: ['work', 'urgent'],
        removeLabels: ['unread'],
      });
      expect(updated.labels).toEqual(['received', 'work', 'urgent']);
      const full = await server.client049(org.key).inboxes.messages.get(inbox, m0); // 0.5's update answer names only id and labels
      expect(full.updatedAt.getTime()).toBeGreaterThanOrEqual(full.createdAt.getTime());
      await org.client.inboxes.messages.update(inbox, m1, { addLabels: ['work'] });
      await org.client.inboxes.messages.update(inbox, m2, { addLabels: ['urgent'] });

      const work = await org.client.inboxes.messages.list(inbox, { labels: ['work'] });
      expect(work.messages.map((m) => m.messageId).sort()).toEqual([m0, m1].sort());
      const both = await org.client.inboxes.messages.list(inbox, { labels: ['work', 'urgent'] });
      expect(both.messages.map((m) => m.messageId)).toEqual([m0]);
      const unread = await org.client.inboxes.messages.list(inbox, { labels: ['unread'] });
      expect(unread.count).toBe(6);
      // A bare label and a repeated parameter work too.
      expect((await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?labels=work`)).body.count).toBe(2);
      expect(
        (await call(url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages?labels=work&labels=urgent`)).body.count,
      ).toBe(1);
      // Paging keeps the filter.
      const p1 = await org.client.inboxes.messages.list(inbox, { labels: ['unread'], limit: 4 });
      const p2 = await org.client.inboxes.messages.list(inbox, {
        labels: ['unread'],
        limit: 4,
        pageToken: p1.nextPageToken as string,
      });
      expect(p1.count + p2.count).toBe(6);
    });
  });

  describe('get and update', () => {
    it('finds a message by its id with or without angle brackets', async () => {
      const org = await organization(server, [unique('g'), unique('h')]);
      const sent = await org.client.inboxes.messages.send(org.inboxes[0] as string, {
        to: org.inboxes[1] as string,
        text: 'x',
      });
      const bare = sent.messageId.slice(1, -1);
      const res = await call(url, org.key, 'GET', `/v0/inboxes/${enc(org.inboxes[0] as string)}/messages/${enc(bare)}`);
      expect(res.body.message_id).toBe(sent.messageId);
      // The inbox address is case-insensitive.
      expect(
        (
          await call(
            url,
            org.key,
            'GET',
            `/v0/inboxes/${enc((org.inboxes[0] as string).toUpperCase())}/messages/${enc(sent.messageId)}`,
          )
        ).status,
      ).toBe(200);
    });

    it('answers 404 for unknown messages and inboxes, with their codes', async () => {
      const org = await organization(server, [unique('nf')]);
      expectError(
        await call(
          url,
          org.key,
          'GET',
          `/v0/inboxes/${enc(org.inboxes[0] as string)}/messages/${enc('<nope@inbox.test>')}`,
        ),
        404,
        'not_found',
        'MESSAGE_NOT_FOUND',
        'message_id',
      );
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc('nobody@inbox.test')}/messages/${enc('<nope@inbox.test>')}`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, org.key, 'GET', `/v0/inboxes/${enc('nobody@inbox.test')}/messages`),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc('nobody@inbox.test')}/messages/send`, {
          to: 'a@inbox.test',
          text: 'x',
        }),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      const err = await org.client.inboxes.messages
        .get(org.inboxes[0] as string, '<nope@inbox.test>')
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentMail.NotFoundError);
    });

    it('refuses reserved and contradictory label changes, and changes nothing then', async () => {
      const org = await organization(server, [unique('lbl'), unique('to')]);
      const [sender, rcpt] = org.inboxes as [string, string];
      const sent = await org.client.inboxes.messages.send(sender, { to: rcpt, text: 'x' });
      const path = `/v0/inboxes/${enc(rcpt)}/messages/${enc(sent.messageId)}`;
      expectError(
        await call(url, org.key, 'PATCH', path, { remove_labels: ['received'] }),
        400,
        'validation_error',
        'RESERVED_LABEL',
        'remove_labels',
      );
      expectError(
        await call(url, org.key, 'PATCH', path, { add_labels: ['sent'] }),
        400,
        'validation_error',
        'RESERVED_LABEL',
        'add_labels',
      );
      expectError(
        await call(url, org.key, 'PATCH', path, { add_labels: ['a'], remove_labels: ['a'] }),
        400,
        'validation_error',
        'CONFLICTING_LABELS',
      );
      expectError(
        await call(url, org.key, 'PATCH', path, { add_labels: ['\u0007'] }),
        400,
        'validation_error',
        'INVALID_LABEL',
        'add_labels',
      );
      const same = await call(url, org.key, 'PATCH', path, {});
      expect(same.status).toBe(200);
      expect(same.body.labels).toEqual(['received', 'unread']);
      expect(same.body.text).toBe('x');
    });
  });

  describe('reply', () => {
    it('answers the sender in the same thread on both sides, with In-Reply-To, References and Re:', async () => {
      const org = await organization(server, [
        { username: unique('ann'), displayName: 'Ann' },
        { username: unique('ben'), displayName: 'Ben' },
      ]);
      const [ann, ben] = org.inboxes as [string, string];
      const first = await org.client.inboxes.messages.send(ann, { to: ben, subject: 'Plan', text: 'Shall we?' });
      const reply = await org.client.inboxes.messages.reply(ben, first.messageId, {
        text: 'Yes.\n\nOn Monday, Ann wrote:\n> Shall we?',
      });
      const benCopy = await org.client.inboxes.messages.get(ben, first.messageId);
      expect(reply.threadId).toBe(benCopy.threadId);

      const annReply = await call(url, org.key, 'GET', `/v0/inboxes/${enc(ann)}/messages/${enc(reply.messageId)}`);
      expect(annReply.body).toMatchObject({
        thread_id: first.threadId,
        labels: ['received', 'unread'],
        from: `Ben <${ben}>`,
        to: [`Ann <${ann}>`],
        subject: 'Re: Plan',
        in_reply_to: first.messageId,
        references: [first.messageId],
        text: 'Yes.\n\nOn Monday, Ann wrote:\n> Shall we?',
        extracted_text: 'Yes.',
      });
      const annThread = await org.client.inboxes.threads.get(ann, first.threadId);
      expect(annThread.messages.map((m) => m.messageId)).toEqual([first.messageId, reply.messageId]);
      const benThread = await org.client.inboxes.threads.get(ben, reply.threadId);
      expect(benThread.messages.map((m) => m.messageId)).toEqual([first.messageId, reply.messageId]);

      const raw = await org.client.inboxes.messages.getRaw(ann, reply.messageId);
      const mail = await parseRaw(Buffer.from(await (await fetch(raw.downloadUrl)).arrayBuffer()));
      expect(mail.inReplyTo).toBe(first.messageId);
      expect(mail.references).toBe(first.messageId);
      expect(mail.subject).toBe('Re: Plan');

      // A reply to the reply carries the whole chain and stays in the threads.
      const third = await org.client.inboxes.messages.reply(ann, reply.messageId, { text: 'Great' });
      expect(third.threadId).toBe(first.threadId);
      const chain = await org.client.inboxes.messages.get(ben, third.messageId);
      expect(chain.references).toEqual([first.messageId, reply.messageId]);
      expect(chain.threadId).toBe(reply.threadId);
      expect(chain.subject).toBe('Re: Plan');
    });

    it('answers the original recipients when replying to a message the inbox sent, and honours Reply-To otherwise', async () => {
      const org = await organization(server, [unique('a'), unique('b'), unique('desk')]);
      const [a, b, desk] = org.inboxes as [string, string, string];
      const first = await org.client.inboxes.messages.send(a, { to: b, replyTo: desk, text: 'ask the desk' });
      const followUp = await org.client.inboxes.messages.reply(a, first.messageId, { text: 'ping' });
      expect((await org.client.inboxes.messages.get(a, followUp.messageId)).to).toEqual([b]);
      const answer = await org.client.inboxes.messages.reply(b, first.messageId, { text: 'to the desk' });
      expect((await org.client.inboxes.messages.get(b, answer.messageId)).to).toEqual([desk]);
      expect((await org.client.inboxes.messages.list(desk)).messages.map((m) => m.messageId)).toContain(
        answer.messageId,
      );
    });

    it('reply-all answers the sender and every other to and cc recipient, never the inbox itself', async () => {
      const org = await organization(server, [unique('s'), unique('me'), unique('o1'), unique('o2')]);
      const [s, me, o1, o2] = org.inboxes as [string, string, string, string];
      const first = await org.client.inboxes.messages.send(s, { to: [me, o1], cc: o2, subject: 'All', text: 'hi all' });
      const viaEndpoint = await org.client.inboxes.messages.replyAll(me, first.messageId, {
        text: 'hello everyone',
        labels: ['answered'],
      });
      const mine = await org.client.inboxes.messages.get(me, viaEndpoint.messageId);
      expect(mine.to).toEqual([s, o1]);
      expect(mine.cc).toEqual([o2]);
      expect(mine.labels).toEqual(['sent', 'answered']);
      for (const inbox of [s, o1, o2]) {
        const copy = await org.client.inboxes.messages.get(inbox, viaEndpoint.messageId);
        expect(copy.inReplyTo).toBe(first.messageId);
      }
      const viaFlag = await org.client.inboxes.messages.reply(me, first.messageId, { replyAll: true, text: 'again' });
      const flagged = await org.client.inboxes.messages.get(me, viaFlag.messageId);
      expect([flagged.to, flagged.cc]).toEqual([[s, o1], [o2]]);
      // Explicit recipients replace the computed ones.
      const narrowed = await org.client.inboxes.messages.reply(me, first.messageId, { to: [o2], text: 'just you' });
      expect((await org.client.inboxes.messages.get(me, narrowed.messageId)).to).toEqual([o2]);
    });

    it('validates replies like sends and answers 404 for unknown originals', async () => {
      const org = await organization(server, [unique('r'), unique('q')]);
      const [r, q] = org.inboxes as [string, string];
      const first = await org.client.inboxes.messages.send(r, { to: q, text: 'x' });
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc(q)}/messages/${enc(first.messageId)}/reply`, {}),
        400,
        'validation_error',
        'MISSING_CONTENT',
      );
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc(q)}/messages/${enc(first.messageId)}/reply`, {
          text: 'x',
          cc: 'bad',
        }),
        400,
        'validation_error',
        'INVALID_EMAIL',
        'cc',
      );
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc(q)}/messages/${enc('<none@inbox.test>')}/reply`, {
          text: 'x',
        }),
        404,
        'not_found',
        'MESSAGE_NOT_FOUND',
      );
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc(q)}/messages/${enc('<none@inbox.test>')}/reply-all`, {
          text: 'x',
        }),
        404,
        'not_found',
        'MESSAGE_NOT_FOUND',
      );
    });
  });

  describe('forward', () => {
    it('forwards text, HTML and attachments under a forwarded-message block, in the original thread for the sender', async () => {
      const org = await organization(server, [unique('fa'), unique('fb'), unique('fc')]);
      const [fa, fb, fc] = org.inboxes as [string, string, string];
      const first = await org.client.inboxes.messages.send(fa, {
        to: fb,
        subject: 'Quarterly <numbers>',
        text: 'See the report.',
        html: '<p>See the <b>report</b>.</p>',
        attachments: [{ filename: 'q3.csv', contentType: 'text/csv', content: b64('a,b\n1,2\n') }],
      });
      const fwd = await org.client.inboxes.messages.forward(fb, first.messageId, { to: fc, text: 'FYI & see below' });
      const benCopy = await org.client.inboxes.messages.get(fb, first.messageId);
      expect(fwd.threadId).toBe(benCopy.threadId);

      const got = await org.client.inboxes.messages.get(fc, fwd.messageId);
      expect(got.subject).toBe('Fwd: Quarterly <numbers>');
      expect(got.from).toBe(fb);
      expect(got.to).toEqual([fc]);
      expect(got.labels).toEqual(['received', 'unread']);
      expect(got.text).toContain('FYI & see below\n\n---------- Forwarded message ---------\nFrom: ');
      expect(got.text).toContain(`From: ${fa}\n`);
      expect(got.text).toContain('Subject: Quarterly <numbers>\n');
      expect(got.text).toContain(`To: ${fb}\n`);
      expect(got.text).toContain('See the report.');
      expect(got.html).toContain('<div>FYI &#38; see below</div>');
      expect(got.html).toContain('Subject: Quarterly &#60;numbers&#62;<br>');
      expect(got.html).toContain('<p>See the <b>report</b>.</p>');
      expect(got.attachments?.map((a) => [a.filename, a.contentType, a.size])).toEqual([['q3.csv', 'text/csv', 8]]);
      const link = await org.client.inboxes.messages.getAttachment(
        fc,
        fwd.messageId,
        got.attachments?.[0]?.attachmentId as string,
      );
      expect(await (await fetch(link.downloadUrl)).text()).toBe('a,b\n1,2\n');

      // The recipient starts a thread of its own; the sender's copy names the original.
      const fcThread = await org.client.inboxes.threads.get(fc, got.threadId);
      expect(fcThread.messages.map((m) => m.messageId)).toEqual([fwd.messageId]);
      const mine = await org.client.inboxes.messages.get(fb, fwd.messageId);
      expect(mine.labels).toEqual(['sent']);
      expect(mine.references).toEqual([first.messageId]);
    });

    it("keeps a given subject and adds the caller's attachments before the original's", async () => {
      const org = await organization(server, [unique('ga'), unique('gb')]);
      const [ga, gb] = org.inboxes as [string, string];
      const first = await org.client.inboxes.messages.send(ga, {
        to: gb,
        subject: 'Fwd: already',
        text: 'x',
        attachments: [{ filename: 'one.txt', content: b64('1') }],
      });
      const fwd = await org.client.inboxes.messages.forward(gb, first.messageId, {
        to: ga,
        subject: 'Have a look',
        attachments: [{ filename: 'mine.txt', content: b64('2') }],
      });
      const got = await org.client.inboxes.messages.get(ga, fwd.messageId);
      expect(got.subject).toBe('Have a look');
      expect(got.attachments?.map((a) => a.filename)).toEqual(['mine.txt', 'one.txt']);
      expect(got.text?.startsWith('---------- Forwarded message ---------\n')).toBe(true);
      const plain = await org.client.inboxes.messages.forward(gb, first.messageId, { to: ga });
      expect((await org.client.inboxes.messages.get(ga, plain.messageId)).subject).toBe('Fwd: already');
    });

    it('validates forwards like sends and answers 404 for unknown originals and inboxes', async () => {
      const org = await organization(server, [unique('ha'), unique('hb')]);
      const [ha, hb] = org.inboxes as [string, string];
      const first = await org.client.inboxes.messages.send(ha, { to: hb, text: 'x' });
      const path = `/v0/inboxes/${enc(hb)}/messages/${enc(first.messageId)}/forward`;
      expectError(
        await call(url, org.key, 'POST', path, { text: 'no recipient' }),
        400,
        'validation_error',
        'MISSING_RECIPIENT',
        'to',
      );
      expectError(
        await call(url, org.key, 'POST', path, { to: 'not-an-address' }),
        400,
        'validation_error',
        'INVALID_EMAIL',
        'to',
      );
      expectError(
        await call(url, org.key, 'POST', path, { to: ha, attachments: [{ content: '!!' }] }),
        400,
        'validation_error',
        'INVALID_ATTACHMENT',
      );
      expectError(
        await call(url, org.key, 'POST', `/v0/inboxes/${enc(hb)}/messages/${enc('<none@inbox.test>')}/forward`, {
          to: ha,
        }),
        404,
        'not_found',
        'MESSAGE_NOT_FOUND',
      );
      expectError(
        await call(
          url,
          org.key,
          'POST',
          `/v0/inboxes/${enc(`nobody@${hb.split('@')[1]}`)}/messages/${enc(first.messageId)}/forward`,
          { to: ha },
        ),
        404,
        'not_found',
        'INBOX_NOT_FOUND',
      );
      const other = await organization(server, [unique('hx')]);
      expectError(await call(url, other.key, 'POST', path, { to: ha }), 404, 'not_found', 'INBOX_NOT_FOUND');
      expectError(await call(url, undefined, 'POST', path, { to: ha }), 401, 'authentication_error', 'MISSING_API_KEY');
    });
  });

  describe('tenancy', () => {
    it('answers 404 for every message route of another organization’s inbox and messages', async () => {
      const owner = await organization(server, [unique('own'), unique('peer')]);
      const other = await organization(server, [unique('oth')]);
      const [inbox, peer] = owner.inboxes as [string, string];
      const sent = await owner.client.inboxes.messages.send(inbox, {
        to: peer,
        text: 'private',
        attachments: [{ filename: 'a.txt', content: b64('a') }],
      });
      const got = await owner.client.inboxes.messages.get(inbox, sent.messageId);
      const att = got.attachments?.[0]?.attachmentId as string;
      const m = `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.messageId)}`;
      for (const [method, path, body] of [
        ['GET', `/v0/inboxes/${enc(inbox)}/messages`, undefined],
        ['GET', m, undefined],
        ['PATCH', m, { add_labels: ['x'] }],
        ['POST', `${m}/reply`, { text: 'x' }],
        ['POST', `${m}/reply-all`, { text: 'x' }],
        ['GET', `${m}/attachments/${att}`, undefined],
        ['GET', `${m}/raw`, undefined],
        ['POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { to: peer, text: 'x' }],
        ['POST', `/v0/inboxes/${enc(inbox)}/messages`, { to: peer, text: 'x' }],
      ] as const) {
        const res = await call(url, other.key, method, path, body);
        expect({ method, path, status: res.status, type: res.body.error?.type }).toEqual({
          method,
          path,
          status: 404,
          type: 'not_found',
        });
      }
      // Nor does another organization's message id resolve through its own inbox.
      expectError(
        await call(
          url,
          other.key,
          'GET',
          `/v0/inboxes/${enc(other.inboxes[0] as string)}/messages/${enc(sent.messageId)}`,
        ),
        404,
        'not_found',
        'MESSAGE_NOT_FOUND',
      );
      expect((await owner.client.inboxes.messages.get(inbox, sent.messageId)).labels).toEqual(['sent']);
    });

    it('answers 401 without a key', async () => {
      expectError(
        await call(url, undefined, 'GET', `/v0/inboxes/${enc('a@inbox.test')}/messages`),
        401,
        'authentication_error',
        'MISSING_API_KEY',
      );
    });
  });
});

describe.each(dialects)('%s: daily send limit', (dialect) => {
  // 23:59:00 UTC: the quota resets in 60 s.
  const clock = fixedClock(new Date('2031-03-04T23:59:00.000Z'));
  let server: InboxTestServer;

  beforeAll(async () => {
    server = await startInboxServer({ dialect, clock, env: { INBOX_SEND_LIMIT_PER_DAY: '3' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 429 SEND_LIMIT_EXCEEDED with Retry-After until UTC midnight, per organization, and stores nothing', async () => {
    const org = await organization(server, [unique('q'), unique('r')]);
    const [sender, rcpt] = org.inboxes as [string, string];
    const send = () =>
      call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, { to: rcpt, text: 'x' });
    for (let i = 0; i < 2; i++) expect((await send()).status).toBe(200);
    // A reply counts as a sent message too.
    const first = (await org.client.inboxes.messages.list(rcpt)).messages[0] as AgentMail.MessageItem;
    expect(
      (
        await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(rcpt)}/messages/${enc(first.messageId)}/reply`, {
          text: 'r',
        })
      ).status,
    ).toBe(200);

    const refused = await send();
    expectError(refused, 429, 'rate_limit_exceeded', 'SEND_LIMIT_EXCEEDED');
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.body.error.details.retry_after_seconds).toBe(60);
    expect((await org.client.inboxes.messages.list(rcpt, { labels: ['received'] })).count).toBe(2);
    const sdkError = await org.client.inboxes.messages.send(sender, { to: rcpt, text: 'x' }).catch((e: unknown) => e);
    expect((sdkError as AgentMailError).statusCode).toBe(429);

    // Another organization has its own quota.
    const other = await organization(server, [unique('o')]);
    expect(
      (
        await call(server.url, other.key, 'POST', `/v0/inboxes/${enc(other.inboxes[0] as string)}/messages/send`, {
          to: rcpt,
          text: 'x',
        })
      ).status,
    ).toBe(200);

    // The next UTC day starts afresh.
    clock.advance(61_000);
    expect((await send()).status).toBe(200);
  });

  it('counts concurrent sends exactly: the limit holds, and refused sends leave nothing behind', async () => {
    const org = await organization(server, [unique('c'), unique('d')]);
    const [sender, rcpt] = org.inboxes as [string, string];
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call(server.url, org.key, 'POST', `/v0/inboxes/${enc(sender)}/messages/send`, { to: rcpt, text: `n${i}` }),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, ...Array.from({ length: 9 }, () => 429)]);
    expect((await org.client.inboxes.messages.list(sender)).count).toBe(3);
    expect((await org.client.inboxes.messages.list(rcpt)).count).toBe(3);
    expect((await eventsOf(server, { type: 'message.sent', inboxId: sender })).length).toBe(3);
  });
});
