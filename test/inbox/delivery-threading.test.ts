import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startInboxServer, type InboxTestServer } from '../support/inbox-server.js';
import { deliver, storedMessageId } from '../support/smtp-client.js';
import { call, enc, organization, unique } from './fixtures.js';
import { getMessage, simpleMessage, smtpPort } from './smtp-inbound.helpers.js';

/**
 * The one threading rule (docs/decisions/0008-one-delivery-path.md) on both ways into storage:
 * In-Reply-To/References first, then a reply-prefixed subject joins the newest thread with that
 * normalized subject in which the sender already took part; else a new thread. The SMTP-only
 * cases live in smtp-inbound-threads.test.ts; here the API path, and the two paths mixed.
 */
describe.each(dialects)('%s: one threading rule for API sends and inbound SMTP', (dialect) => {
  let server: InboxTestServer;

  beforeAll(async () => {
    // A relay URL lets inboxes answer external senders; without the worker role nothing is sent.
    server = await startInboxServer({
      dialect,
      env: { INBOX_ROLES: 'api,smtp', INBOX_SMTP_RELAY_URL: 'smtp://127.0.0.1:9' },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const send = async (key: string, from: string, body: Record<string, unknown>) => {
    const r = await call(server.url, key, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, body);
    expect(r.status).toBe(200);
    return r.body as { message_id: string; thread_id: string };
  };
  const threadOf = async (key: string, inbox: string, messageId: string) =>
    (await getMessage(server, key, inbox, messageId)).body.thread_id as string;

  it('API sends: a reply-prefixed subject from a participant joins the thread on both sides; a stranger or an unprefixed subject starts one', async () => {
    const org = await organization(server, [unique('ta'), unique('tb'), unique('tc')]);
    const [a, b, c] = org.inboxes as [string, string, string];
    const first = await send(org.key, a, { to: b, subject: 'Quarterly numbers', text: 'see attached' });
    const firstInB = await threadOf(org.key, b, first.message_id);
    // B answers with a plain send (no In-Reply-To, no References), as a client that lost them would.
    const answer = await send(org.key, b, { to: a, subject: 'RE: quarterly NUMBERS', text: 'thanks' });
    expect(answer.thread_id).toBe(firstInB);
    expect(await threadOf(org.key, a, answer.message_id)).toBe(first.thread_id);
    // C never took part: its message with the same subject starts a thread in B.
    const stranger = await send(org.key, c, { to: b, subject: 'Re: Quarterly numbers', text: 'me too' });
    expect(await threadOf(org.key, b, stranger.message_id)).not.toBe(firstInB);
    // The same sender without a reply prefix is a new conversation.
    const fresh = await send(org.key, a, { to: b, subject: 'Quarterly numbers', text: 'again' });
    expect(fresh.thread_id).not.toBe(first.thread_id);
    expect(await threadOf(org.key, b, fresh.message_id)).not.toBe(firstInB);
    // Later prefixed messages join the newest matching thread.
    const later = await send(org.key, a, { to: b, subject: 'Fwd: Quarterly numbers', text: 'fyi' });
    expect(later.thread_id).toBe(fresh.thread_id);
  });

  it('API sends: References naming a message of the recipient inbox win over the subject', async () => {
    const org = await organization(server, [unique('ra'), unique('rb')]);
    const [a, b] = org.inboxes as [string, string];
    const one = await send(org.key, a, { to: b, subject: 'Topic one', text: '1' });
    const two = await send(org.key, a, { to: b, subject: 'Topic two', text: '2' });
    // A reply to the second names it; its subject says "one".
    const reply = await call(
      server.url,
      org.key,
      'POST',
      `/v0/inboxes/${enc(b)}/messages/${enc(two.message_id)}/reply`,
      { text: 'r' },
    );
    expect(reply.status).toBe(200);
    expect(await threadOf(org.key, a, reply.body.message_id)).toBe(two.thread_id);
    expect(await threadOf(org.key, a, reply.body.message_id)).not.toBe(one.thread_id);
  });

  it('mixed paths: mail received by SMTP, answered by a plain API send, answered again by SMTP, all in one thread', async () => {
    const org = await organization(server, [unique('mx')]);
    const inbox = org.inboxes[0] as string;
    const partner = 'partner@sender.example';
    const received = await deliver(smtpPort(server), {
      from: partner,
      to: [inbox],
      message: simpleMessage({
        from: partner,
        to: inbox,
        subject: 'Delivery dates',
        messageId: `<${unique('d')}@sender.example>`,
      }),
    });
    const start = await threadOf(org.key, inbox, storedMessageId(received.data));
    // The API send names no message; its subject and the partner's part in the thread place it.
    const ours = await send(org.key, inbox, { to: partner, subject: 'Re: Delivery dates', text: 'next week' });
    expect(ours.thread_id).toBe(start);
    // The partner's client drops the headers too.
    const back = await deliver(smtpPort(server), {
      from: partner,
      to: [inbox],
      message: simpleMessage({
        from: partner,
        to: inbox,
        subject: 'AW: Delivery dates',
        messageId: `<${unique('e')}@sender.example>`,
      }),
    });
    expect(await threadOf(org.key, inbox, storedMessageId(back.data))).toBe(start);
    const thread = await call(server.url, org.key, 'GET', `/v0/inboxes/${enc(inbox)}/threads/${enc(start)}`);
    expect(thread.body).toMatchObject({ message_count: 3, subject: 'Delivery dates' });
  });
});
