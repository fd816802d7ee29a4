import { readFileSync } from 'node:fs';
import type { InboxTestServer } from '../support/inbox-server.js';
import { call, enc, type Reply } from './fixtures.js';

/** Helpers of the inbound SMTP suites: reading back what arrived, through the REST API. */

export function smtpPort(server: InboxTestServer): number {
  const port = server.service.smtp?.port;
  if (port === undefined) throw new Error('the smtp role is not running');
  return port;
}

export function fixture(name: string): Buffer {
  return readFileSync(new URL(`../fixtures/eml/${name}`, import.meta.url));
}

export function getMessage(server: InboxTestServer, key: string, inboxId: string, messageId: string): Promise<Reply> {
  return call(server.url, key, 'GET', `/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}`);
}

/** The bytes behind a download link of the API (attachment or raw source). */
async function follow(reply: Reply): Promise<Buffer> {
  if (reply.status !== 200) throw new Error(`download link: ${reply.status} ${JSON.stringify(reply.body)}`);
  const res = await fetch(reply.body.download_url as string);
  if (res.status !== 200) throw new Error(`download: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

export async function downloadAttachment(
  server: InboxTestServer,
  key: string,
  inboxId: string,
  messageId: string,
  attachmentId: string,
): Promise<Buffer> {
  return follow(
    await call(
      server.url,
      key,
      'GET',
      `/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}/attachments/${enc(attachmentId)}`,
    ),
  );
}

export async function downloadRaw(
  server: InboxTestServer,
  key: string,
  inboxId: string,
  messageId: string,
): Promise<Buffer> {
  return follow(await call(server.url, key, 'GET', `/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}/raw`));
}

/** Rows of the inbox in each table that inbound delivery writes: nothing may be half-stored. */
export async function storedRows(
  server: InboxTestServer,
  inboxId: string,
): Promise<{ messages: number; threads: number; events: number; labels: number; attachments: number }> {
  const db = server.service.database.db;
  const count = async (q: { executeTakeFirstOrThrow(): Promise<{ n: string | number | bigint }> }) =>
    Number((await q.executeTakeFirstOrThrow()).n);
  return {
    messages: await count(
      db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('inbox_id', '=', inboxId),
    ),
    threads: await count(
      db
        .selectFrom('threads')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('inbox_id', '=', inboxId),
    ),
    events: await count(
      db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('inbox_id', '=', inboxId),
    ),
    labels: await count(
      db
        .selectFrom('message_labels')
        .innerJoin('messages', 'messages.id', 'message_labels.message_pk')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('messages.inbox_id', '=', inboxId),
    ),
    attachments: await count(
      db
        .selectFrom('attachments')
        .innerJoin('messages', 'messages.id', 'attachments.message_pk')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('messages.inbox_id', '=', inboxId),
    ),
  };
}

/** A small RFC 5322 message. */
export function simpleMessage(
  o: { from?: string; to?: string; subject?: string; messageId?: string; body?: string; headers?: string } = {},
): string {
  return [
    `From: ${o.from ?? 'Sender <sender@sender.example>'}`,
    `To: ${o.to ?? 'agent@inbox.test'}`,
    `Subject: ${o.subject ?? 'Hello'}`,
    ...(o.messageId ? [`Message-ID: ${o.messageId}`] : []),
    'Date: Mon, 16 Nov 2026 09:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(o.headers ? [o.headers] : []),
    '',
    o.body ?? 'Hello agent.',
    '',
  ].join('\r\n');
}
