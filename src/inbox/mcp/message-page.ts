import type { AttachmentMeta, Message } from '../core/message.js';
import type { ListPage } from '../core/page.wire.js';

/**
 * The JSON of a page of messages as the MCP door answers it (`list_messages`, `search_messages`),
 * written straight from the messages (decision 0051, "Later"), as REST's `messageListJson` does:
 * one object per item and one `JSON.stringify`, instead of the REST presenters' objects, camel.ts's
 * renamed copy of them and a stringify of that copy. The bytes are those of
 * `JSON.stringify(camelKeys(pageEnvelope('messages', page, toMessageItemResponse)))`: the same
 * property names and order (`count`, `limit`, `nextPageToken`, `messages`; in an item the order of
 * `toMessageItemResponse`), the same fields left out. Absent fields are `undefined`, which
 * `JSON.stringify` leaves out, so every item has one shape. test/inbox/mcp-answer.test.ts compares
 * the two on messages with and without every optional field.
 */
export function mcpMessagePageJson(page: ListPage<Message>): string {
  return JSON.stringify({
    count: page.items.length,
    limit: page.limit,
    nextPageToken: page.nextPageToken || undefined,
    messages: page.items.map(item),
  });
}

const some = (list: readonly string[]) => (list.length ? list : undefined);

function item(m: Message) {
  return {
    inboxId: m.inboxId,
    threadId: m.threadId,
    messageId: m.messageId,
    labels: m.labels,
    timestamp: m.timestamp,
    from: m.from,
    to: m.to,
    cc: some(m.cc),
    bcc: some(m.bcc),
    subject: m.subject ?? undefined,
    preview: m.preview ?? undefined,
    attachments: m.attachments.length ? m.attachments.map(attachment) : undefined,
    inReplyTo: m.inReplyTo ?? undefined,
    references: some(m.references),
    // The sender's own header names: never renamed (camel.ts).
    headers: m.headers && Object.keys(m.headers).length ? m.headers : undefined,
    size: m.size,
    updatedAt: m.updatedAt,
    createdAt: m.createdAt,
  };
}

function attachment(a: AttachmentMeta) {
  return {
    attachmentId: a.attachmentId,
    filename: a.filename ?? undefined,
    size: a.size,
    contentType: a.contentType ?? undefined,
    contentDisposition: a.contentDisposition ?? undefined,
    contentId: a.contentId ?? undefined,
  };
}
