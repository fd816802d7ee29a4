import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { call, enc, organization, unique } from './fixtures.js';
import { getMessage, simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/** Threading of inbound mail: In-Reply-To and References first, then a careful subject fallback. */
describe.each(dialects)('%s: inbound SMTP threading', (dialect) => {
  let server: InboxTestServer;
  let org: Awaited<ReturnType<typeof organization>>;

  beforeAll(async () => {
    // A relay URL lets the inbox answer external senders; without the worker role nothing is sent.
    server = await startInboxServer({
      dialect,
      env: { INBOX_ROLES: 'api,smtp', INBOX_SMTP_RELAY_URL: 'smtp://127.0.0.1:9' },
    });
    org = await organization(server, [unique('thr')]);
  });
  afterAll(async () => {
    await server.close();
  });

  async function receive(inbox: string, o: { from?: string; subject: string; messageId?: string; headers?: string }) {
    const from = o.from ?? 'partner@sender.example';
    const result = await deliver(smtpPort(server), {
      from,
      to: [inbox],
      message: simpleMessage({
        from,
        to: inbox,
        subject: o.subject,
        messageId: o.messageId ?? `<${unique('m')}@sender.example>`,
        headers: o.headers,
      }),
    });
    return (await getMessage(server, await keyOf(inbox), inbox, storedMessageId(result.data))).body;
  }

  it('joins the thread of the message that In-Reply-To or References name, including our own reply sent through the API', async () => {
    const inbox = (await organization(server, [unique('refs')])).inboxes[0] as string;
    const first = await receive(inbox, {
      subject: 'Contract draft',
      messageId: `<draft.${unique('d')}@sender.example>`,
    });
    // Our inbox answers through the API (queued for the relay)...
    const ourReply = await call(
      server.url,
      await keyOf(inbox),
      'POST',
      `/v0/inboxes/${enc(inbox)}/messages/${enc(first.message_id)}/reply`,
      { text: 'Thanks, looking at it.' },
    );
    expect(ourReply.status).toBe(200);
    expect(ourReply.body.thread_id).toBe(first.thread_id);
    // ...and the partner's answer names our reply, with a subject that says nothing.
    const answer = await receive(inbox, {
      subject: 'ok',
      headers: `In-Reply-To: ${ourReply.body.message_id}\r\nReferences: ${first.message_id} ${ourReply.body.message_id}`,
    });
    expect(answer.thread_id).toBe(first.thread_id);
    const byReferencesOnly = await receive(inbox, {
      subject: 'another',
      headers: `References: <unknown@x.example> ${first.message_id}`,
    });
    expect(byReferencesOnly.thread_id).toBe(first.thread_id);
    const thread = await call(
      server.url,
      await keyOf(inbox),
      'GET',
      `/v0/inboxes/${enc(inbox)}/threads/${enc(first.thread_id)}`,
    );
    expect(thread.body).toMatchObject({ message_count: 4, subject: 'Contract draft' });
    expect(thread.body.labels).toEqual(expect.arrayContaining(['received', 'unread', 'sent']));
  });

  it('falls back to the subject for a reply-prefixed subject from someone already in the thread, and only then', async () => {
    const inbox = org.inboxes[0] as string;
    const start = await receive(inbox, { from: 'alice@sender.example', subject: 'Project kickoff' });
    // A reply whose client dropped In-Reply-To and References.
    const reply = await receive(inbox, { from: 'alice@sender.example', subject: 'RE: Aw: project KICKOFF ' });
    expect(reply.thread_id).toBe(start.thread_id);
    // References to messages we never saw do not stop the fallback.
    const unknownRefs = await receive(inbox, {
      from: 'alice@sender.example',
      subject: 'Re: Project kickoff',
      headers: 'References: <never-seen@sender.example>',
    });
    expect(unknownRefs.thread_id).toBe(start.thread_id);
    // A stranger with the same subject starts a thread of their own.
    const stranger = await receive(inbox, { from: 'mallory@other.example', subject: 'Re: Project kickoff' });
    expect(stranger.thread_id).not.toBe(start.thread_id);
    // The same sender with the same subject but no reply prefix is a new conversation.
    const fresh = await receive(inbox, { from: 'alice@sender.example', subject: 'Project kickoff' });
    expect(fresh.thread_id).not.toBe(start.thread_id);
    // Later replies join the newest matching thread.
    const later = await receive(inbox, { from: 'alice@sender.example', subject: 'Re: Project kickoff' });
    expect(later.thread_id).toBe(fresh.thread_id);
  });

  it('threads per inbox: a message to two inboxes joins the thread each inbox holds', async () => {
    const [a, b] = (await organization(server, [unique('pa'), unique('pb')])).inboxes as [string, string];
    const key = await keyOf(a);
    const first = await deliver(smtpPort(server), {
      from: 'x@sender.example',
      to: [a, b],
      message: simpleMessage({
        from: 'x@sender.example',
        to: `${a}, ${b}`,
        subject: 'Both',
        messageId: `<both.${unique('b')}@sender.example>`,
      }),
    });
    const id = storedMessageId(first.data);
    const second = await deliver(smtpPort(server), {
      from: 'x@sender.example',
      to: [a, b],
      message: simpleMessage({
        from: 'x@sender.example',
        to: `${a}, ${b}`,
        subject: 'Re: Both',
        headers: `In-Reply-To: ${id}`,
      }),
    });
    const id2 = storedMessageId(second.data);
    const [a1, b1, a2, b2] = await Promise.all([
      getMessage(server, key, a, id),
      getMessage(server, key, b, id),
      getMessage(server, key, a, id2),
      getMessage(server, key, b, id2),
    ]);
    expect(a1.body.thread_id).not.toBe(b1.body.thread_id);
    expect(a2.body.thread_id).toBe(a1.body.thread_id);
    expect(b2.body.thread_id).toBe(b1.body.thread_id);
  });

  const keys = new Map<string, string>();
  /** The key of the organization owning `inbox` (each test creates its own organization). */
  async function keyOf(inbox: string): Promise<string> {
    const known = keys.get(inbox);
    if (known) return known;
    const row = await server.service.database.db
      .selectFrom('inboxes')
      .select('organization_id')
      .where('inbox_id', '=', inbox)
      .executeTakeFirstOrThrow();
    const { key } = await server.createKey({ organizationId: row.organization_id });
    keys.set(inbox, key);
    return key;
  }
});
