import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOB_CLAIMED, CHUNK_BYTES } from '../../src/inbox/mailstore/message-blobs.js';
import { findMessage, listThreadMessages } from '../../src/inbox/mailstore/message.repository.js';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver } from '../support/smtp-client.js';
import { call, enc, organization, unique } from './fixtures.js';

/**
 * Large text and HTML bodies stored once per message, as blobs that every copy names
 * (docs/decisions/0053-large-bodies-stored-once.md): what the rows hold, that every reader gets the
 * bodies back as they were sent, and that the sweep keeps a body blob while a copy names it.
 */
describe.each(dialects)('%s: large bodies stored once', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    server = await startInboxServer({ dialect });
  });
  afterAll(async () => {
    await server?.close();
  });

  const db = () => server.service.database.db;
  const rowsOf = (messageId: string) =>
    db()
      .selectFrom('messages')
      .select(['inbox_id', 'text_body', 'html_body', 'text_blob', 'html_blob'])
      .where('message_id', '=', messageId)
      .orderBy('id')
      .execute();

  /** `bytes` of UTF-8 or a little more: umlauts (two bytes) and an emoji (four) on every line, a word of its own at the end. */
  const body = (bytes: number, last: string, html = false) => {
    const line = html ? '<p>Grüße aus Köln 🙂 und die Übersicht</p>\n' : 'Grüße aus Köln 🙂 und die Übersicht\r\n';
    return `${line.repeat(Math.ceil(bytes / Buffer.byteLength(line)))}${last}`;
  };

  it('stores a large text and HTML body once for every copy and gives them back to every reader', async () => {
    const org = await organization(server, [unique('big'), unique('peer')]);
    const [from, to] = org.inboxes as [string, string];
    const word = unique('tailword').replace(/[^a-z0-9]/gi, '');
    const text = body(CHUNK_BYTES + 1000, word);
    const html = body(CHUNK_BYTES * 2, 'end', true);
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, {
      to,
      subject: 'big bodies',
      text,
      html,
    });
    expect(sent.status).toBe(200);
    const messageId = sent.body.message_id as string;

    // Two copies (the sender's and the recipient's), no body in either row, one blob each for both.
    const rows = await rowsOf(messageId);
    expect(rows.map((r) => r.inbox_id).sort()).toEqual([from, to].sort());
    for (const r of rows) expect([r.text_body, r.html_body]).toEqual([null, null]);
    const [first, second] = rows as [(typeof rows)[number], (typeof rows)[number]];
    expect(first.text_blob).not.toBeNull();
    expect(first.html_blob).not.toBeNull();
    expect([Number(second.text_blob), Number(second.html_blob)]).toEqual([
      Number(first.text_blob),
      Number(first.html_blob),
    ]);
    const blobs = await db()
      .selectFrom('blobs')
      .select(['id', 'state', 'size'])
      .where('id', 'in', [Number(first.text_blob), Number(first.html_blob)])
      .orderBy('id')
      .execute();
    expect(blobs.map((b) => [b.state, Number(b.size)])).toEqual([
      [BLOB_CLAIMED, Buffer.byteLength(text)],
      [BLOB_CLAIMED, Buffer.byteLength(html)],
    ]);

    // The message, both copies, and the thread give the bodies back as sent.
    const threadIds: string[] = [];
    for (const inbox of [from, to]) {
      const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`);
      expect(got.status).toBe(200);
      expect(got.body.text).toBe(text);
      expect(got.body.html).toBe(html);
      threadIds.push(got.body.thread_id);
    }
    // Each copy is in its inbox's own thread.
    const received = threadIds[1] as string;
    const thread = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/threads/${enc(received)}`);
    expect(thread.status).toBe(200);
    expect(thread.body.messages.map((m: { text: string }) => m.text)).toEqual([text]);
    // A list holds no bodies, only the preview.
    const list = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/messages`);
    expect(list.body.messages[0].text).toBeUndefined();
    expect(list.body.messages[0].preview.startsWith('Grüße aus Köln')).toBe(true);

    // A forward carries the text it read from the blob; it stays in the original's thread.
    const reply = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(to)}/messages/${enc(messageId)}/forward`, {
      to: from,
      text: 'see below',
    });
    expect(reply.status).toBe(200);
    const replied = await call(
      server.url,
      org.key,
      'GET',
      `/v0/inboxes/${enc(to)}/messages/${enc(reply.body.message_id)}`,
    );
    expect(replied.body.text.startsWith('see below')).toBe(true);
    expect(replied.body.text.endsWith(word)).toBe(true);

    // The word at the end of the body is found, and still is after the thread's document is
    // rebuilt from the blobs (the reply deleted).
    const found = async () =>
      (await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(from)}/messages/search?q=${word}`)).body.messages.map(
        (m: { message_id: string }) => m.message_id,
      );
    expect(await found()).toContain(messageId);
    const removed = await call(
      server.url,
      org.key,
      'DELETE',
      `/v0/inboxes/${enc(to)}/messages/${enc(reply.body.message_id)}`,
    );
    expect(removed.status).toBeLessThan(300);
    const threads = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(to)}/threads/search?q=${word}`);
    expect(threads.body.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual([received]);

    // The sweep keeps the blobs while a copy names them, and takes them once none does.
    const bodyBlobs = [Number(first.text_blob), Number(first.html_blob)];
    const left = async () =>
      (await db().selectFrom('blobs').select('id').where('id', 'in', bodyBlobs).execute()).length;
    const remove = async (inbox: string) =>
      expect(
        (await call(server.url, org.key, 'DELETE', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`)).status,
      ).toBeLessThan(300);
    await remove(to);
    await server.service.runtime.sweepBlobs();
    expect(await left()).toBe(2);
    const kept = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(from)}/messages/${enc(messageId)}`);
    expect([kept.body.text, kept.body.html]).toEqual([text, html]);
    await remove(from);
    await server.service.runtime.sweepBlobs();
    expect(await left()).toBe(0);
    expect(await db().selectFrom('blob_chunks').select('seq').where('blob_id', 'in', bodyBlobs).execute()).toEqual([]);
  });

  it('keeps bodies under CHUNK_BYTES in the row, and stores a large body received over SMTP as a blob', async () => {
    const org = await organization(server, [unique('small')]);
    const [inbox] = org.inboxes as [string];
    // Under CHUNK_BYTES in UTF-8, though over a third of it in UTF-16 units (the length pre-check).
    const text = 'ü'.repeat(CHUNK_BYTES / 2 - 1);
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
      to: inbox,
      text,
    });
    expect(sent.status).toBe(200);
    for (const r of await rowsOf(sent.body.message_id))
      expect([r.text_body, r.text_blob, r.html_blob]).toEqual([text, null, null]);

    const messageId = `<${unique('smtp')}@sender.example>`;
    const line = 'x'.repeat(76);
    const message = [
      'From: someone@sender.example',
      `To: ${inbox}`,
      'Subject: large over SMTP',
      `Message-ID: ${messageId}`,
      'Content-Type: text/plain',
      '',
      `${line}\r\n`.repeat(Math.ceil((CHUNK_BYTES * 2) / 78)),
    ].join('\r\n');
    const port = server.service.smtp?.port as number;
    expect((await deliver(port, { from: 'someone@sender.example', to: [inbox], message })).data?.code).toBe(250);
    const [row] = await rowsOf(messageId);
    expect(row?.text_body).toBeNull();
    expect(row?.text_blob).not.toBeNull();
    const got = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`);
    expect(got.status).toBe(200);
    expect(got.body.text.trimEnd()).toBe(`${line}\n`.repeat(Math.ceil((CHUNK_BYTES * 2) / 78)).trimEnd());
  });

  it("reads no body blob where the bodies are not wanted (a delete, a link, a thread's labels or summary)", async () => {
    const org = await organization(server, [unique('keep')]);
    const [inbox] = org.inboxes as [string];
    const text = body(CHUNK_BYTES * 2, 'end');
    const sent = await call(server.url, org.key, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
      to: inbox,
      text,
    });
    expect(sent.status).toBe(200);
    const messageId = sent.body.message_id as string;
    const [row] = await rowsOf(messageId);
    expect(row?.text_blob).not.toBeNull();

    // Every statement the repository runs, seen through a plugin on the same database.
    const tables: string[] = [];
    const seeing = db().withPlugin({
      transformQuery: ({ node }) => {
        for (const m of JSON.stringify(node).matchAll(/"name":"(\w+)"/g)) tables.push(m[1] as string);
        return node;
      },
      transformResult: async ({ result }) => result,
    });
    const touchedBlobs = () => tables.filter((t) => t === 'blobs' || t === 'blob_chunks').length;

    const light = await findMessage(seeing, org.organizationId, inbox, messageId, { bodies: false });
    expect(light?.messageId).toBe(messageId);
    expect([light?.text, light?.html]).toEqual([null, null]);
    const inThread = await listThreadMessages(seeing, light?.threadId as string, { bodies: false });
    expect(inThread.map((m) => [m.messageId, m.text])).toEqual([[messageId, null]]);
    expect(touchedBlobs()).toBe(0);

    // The control: a read that returns the bodies does read the blob.
    const full = await findMessage(seeing, org.organizationId, inbox, messageId);
    expect(full?.text).toBe(text);
    expect(touchedBlobs()).toBeGreaterThan(0);

    // Through the API: the raw link and the delete answer as before, and the message is gone.
    const raw = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}/raw`);
    expect(raw.status).toBe(200);
    expect(
      (await call(server.url, org.key, 'DELETE', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`)).status,
    ).toBeLessThan(300);
    expect(
      (await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`)).status,
    ).toBe(404);
  });
});
