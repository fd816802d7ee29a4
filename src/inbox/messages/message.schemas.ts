import { Type, type Static } from 'typebox';
import { extractNewHtml, extractNewText } from '../mail/compose.js';
import { toPageQuery } from '../lists/list-query.js';
import { receivedBytes } from '../../platform/http/json-body.js';
import type { AttachmentMeta, Message } from '../mailstore/message.repository.js';
import type { MessageListQuery, SendAttachmentInput, SendInput } from './message.service.js';

// Request shapes are deliberately loose about content (strings, arrays): the service checks every
// rule and answers each broken one with its own detail code.

export const InboxIdParams = Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320 }) });
export const MessageParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  message_id: Type.String({
    minLength: 1,
    maxLength: 998,
    description: 'The Message-ID, URL-encoded: %3Cabc%40example.org%3E',
  }),
});
export const AttachmentParams = Type.Object({
  ...MessageParams.properties,
  attachment_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const DownloadParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 2000 }) });

export const Addresses = Type.Union(
  [Type.String({ maxLength: 20_000 }), Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 1000 })],
  {
    description: 'One address (`addr` or `Name <addr>`), a comma-separated list, or an array of them',
  },
);
export const Labels = Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 100 });
const Headers = Type.Record(Type.String(), Type.String({ maxLength: 20_000 }), {
  description: 'Extra message headers; names and values without line breaks',
});

export const SendAttachmentBody = Type.Object({
  filename: Type.Optional(Type.String({ maxLength: 1000 })),
  content_type: Type.Optional(Type.String({ maxLength: 1000 })),
  content_disposition: Type.Optional(Type.Union([Type.Literal('attachment'), Type.Literal('inline')])),
  content_id: Type.Optional(Type.String({ maxLength: 1000 })),
  content: Type.Optional(Type.String({ description: 'The file, base64-encoded' })),
  url: Type.Optional(
    Type.String({ description: 'Not supported: the service never fetches URLs (ATTACHMENT_URL_NOT_SUPPORTED)' }),
  ),
});

const bodyFields = {
  labels: Type.Optional(Labels),
  reply_to: Type.Optional(Addresses),
  text: Type.Optional(Type.String()),
  html: Type.Optional(Type.String()),
  attachments: Type.Optional(Type.Array(SendAttachmentBody, { maxItems: 100 })),
  headers: Type.Optional(Headers),
};

export const SendMessageBody = Type.Object({
  ...bodyFields,
  to: Type.Optional(Addresses),
  cc: Type.Optional(Addresses),
  bcc: Type.Optional(Addresses),
  subject: Type.Optional(Type.String({ maxLength: 998 })),
});

export const ReplyBody = Type.Object({
  ...bodyFields,
  to: Type.Optional(Addresses),
  cc: Type.Optional(Addresses),
  bcc: Type.Optional(Addresses),
  reply_all: Type.Optional(
    Type.Boolean({ description: 'Answer the sender and every to and cc recipient of the original' }),
  ),
});

export const ReplyAllBody = Type.Object(bodyFields);

/** A label or a list of labels (SDK 0.5 UpdateMessageLabels). */
const LabelOrLabels = Type.Union([Type.String({ maxLength: 1000 }), Labels]);
export const labelList = (v: string | readonly string[] | undefined): string[] | undefined =>
  v === undefined ? undefined : typeof v === 'string' ? [v] : [...v];

export const UpdateMessageBody = Type.Object({
  add_labels: Type.Optional(LabelOrLabels),
  remove_labels: Type.Optional(LabelOrLabels),
});

export const BatchGetBody = Type.Object({
  message_ids: Type.Array(Type.String({ minLength: 1, maxLength: 998 }), { minItems: 1, maxItems: 500 }),
});
export const BatchUpdateBody = Type.Object({
  message_ids: Type.Array(Type.String({ minLength: 1, maxLength: 998 }), { minItems: 1, maxItems: 50 }),
  add_labels: Type.Optional(LabelOrLabels),
  remove_labels: Type.Optional(LabelOrLabels),
});

function StringList(description: string) {
  return Type.Union(
    [Type.String({ maxLength: 20_000 }), Type.Array(Type.String({ maxLength: 998 }), { maxItems: 20 })],
    { description: `${description}; a JSON array of strings, e.g. ["a"]` },
  );
}

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  labels: Type.Optional(
    Type.Union([Type.String({ maxLength: 10_000 }), Type.Array(Type.String({ maxLength: 1000 }))], {
      description: 'JSON array of labels, e.g. ["unread"]: items having all of them',
    }),
  ),
  before: Type.Optional(Type.String({ format: 'date-time', description: 'Only items strictly before this time' })),
  after: Type.Optional(Type.String({ format: 'date-time', description: 'Only items strictly after this time' })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
  include_spam: Type.Optional(
    Type.Boolean({
      description: 'Also list items labelled spam (inbound mail failing DMARC with a quarantine or reject policy)',
    }),
  ),
  include_blocked: Type.Optional(Type.Boolean({ description: 'Also list items labelled blocked' })),
  include_trash: Type.Optional(
    Type.Boolean({ description: 'Also list items labelled trash (threads deleted without permanent=true)' }),
  ),
  include_unauthenticated: Type.Optional(
    Type.Boolean({ description: 'false leaves out items labelled unauthenticated (listed by default)' }),
  ),
  from: Type.Optional(StringList('Messages whose sender contains each value (ASCII letters without case)')),
  to: Type.Optional(StringList('Messages whose to, cc or bcc contain each value')),
  subject: Type.Optional(StringList('Items whose subject contains each value')),
});

/** The thread lists' query: the message list's without from/to, with senders/recipients. */
export const ThreadListQuery = Type.Object({
  ...Type.Omit(ListQuery, ['from', 'to']).properties,
  senders: Type.Optional(StringList('Threads whose senders contain each value (ASCII letters without case)')),
  recipients: Type.Optional(StringList('Threads whose recipients contain each value')),
});

export const SendMessageResponse = Type.Object({ message_id: Type.String(), thread_id: Type.String() });

export const AttachmentResponse = Type.Object({
  attachment_id: Type.String(),
  filename: Type.Optional(Type.String()),
  size: Type.Integer(),
  content_type: Type.Optional(Type.String()),
  content_disposition: Type.Optional(Type.Union([Type.Literal('attachment'), Type.Literal('inline')])),
  content_id: Type.Optional(Type.String()),
});

export const AttachmentDownloadResponse = Type.Object({
  ...AttachmentResponse.properties,
  download_url: Type.String({ description: 'Absolute, signed, short-lived URL of the bytes; needs no API key' }),
  expires_at: Type.String({ format: 'date-time' }),
});

export const RawMessageResponse = Type.Object({
  message_id: Type.String(),
  size: Type.Integer(),
  download_url: Type.String({
    description: 'Absolute, signed, short-lived URL of the RFC 5322 source (message/rfc822); needs no API key',
  }),
  expires_at: Type.String({ format: 'date-time' }),
});

const itemFields = {
  inbox_id: Type.String(),
  thread_id: Type.String(),
  message_id: Type.String(),
  labels: Type.Array(Type.String()),
  timestamp: Type.String({ format: 'date-time' }),
  from: Type.String({ description: '`addr` or `Name <addr>`' }),
  to: Type.Array(Type.String()),
  cc: Type.Optional(Type.Array(Type.String())),
  bcc: Type.Optional(Type.Array(Type.String())),
  subject: Type.Optional(Type.String()),
  preview: Type.Optional(Type.String()),
  attachments: Type.Optional(Type.Array(AttachmentResponse)),
  in_reply_to: Type.Optional(Type.String()),
  references: Type.Optional(Type.Array(Type.String())),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
  size: Type.Integer({ description: 'Bytes of the RFC 5322 source' }),
  updated_at: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
};

/** Items of message lists: a Message without reply_to and the bodies. */
export const MessageItemResponse = Type.Object(itemFields);

export const MessageResponse = Type.Object({
  ...itemFields,
  reply_to: Type.Optional(Type.Array(Type.String())),
  text: Type.Optional(Type.String()),
  html: Type.Optional(Type.String()),
  extracted_text: Type.Optional(Type.String({ description: 'text without quoted history' })),
  extracted_html: Type.Optional(Type.String({ description: 'html without quoted history' })),
});

export const ListMessagesResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  messages: Type.Array(MessageItemResponse),
});

export type MessageWire = Static<typeof MessageResponse>;
export type MessageItemWire = Static<typeof MessageItemResponse>;

export function toAttachmentResponse(a: AttachmentMeta): Static<typeof AttachmentResponse> {
  return {
    attachment_id: a.attachmentId,
    ...(a.filename !== null ? { filename: a.filename } : {}),
    size: a.size,
    ...(a.contentType !== null ? { content_type: a.contentType } : {}),
    ...(a.contentDisposition !== null ? { content_disposition: a.contentDisposition } : {}),
    ...(a.contentId !== null ? { content_id: a.contentId } : {}),
  };
}

const nonEmpty = <K extends string>(key: K, list: readonly string[]) =>
  list.length ? ({ [key]: [...list] } as Record<K, string[]>) : {};

export function toMessageItemResponse(m: Message): MessageItemWire {
  return {
    inbox_id: m.inboxId,
    thread_id: m.threadId,
    message_id: m.messageId,
    labels: [...m.labels],
    timestamp: m.timestamp,
    from: m.from,
    to: [...m.to],
    ...nonEmpty('cc', m.cc),
    ...nonEmpty('bcc', m.bcc),
    ...(m.subject !== null ? { subject: m.subject } : {}),
    ...(m.preview !== null ? { preview: m.preview } : {}),
    ...(m.attachments.length ? { attachments: m.attachments.map(toAttachmentResponse) } : {}),
    ...(m.inReplyTo !== null ? { in_reply_to: m.inReplyTo } : {}),
    ...nonEmpty('references', m.references),
    ...(m.headers && Object.keys(m.headers).length ? { headers: { ...m.headers } } : {}),
    size: m.size,
    updated_at: m.updatedAt,
    created_at: m.createdAt,
  };
}

/**
 * The JSON of a page of messages, written by `JSON.stringify` rather than the route's compiled
 * serializer: on this string-heavy body (50 items of addresses, subjects and previews)
 * fast-json-stringify's escaping is the slower of the two. The bytes are the same as the
 * serializer's: its property order (the required properties first, then the optional ones, each
 * in schema order), and only the properties of ListMessagesResponse, since every object here is
 * built field by field (test/inbox/messages.test.ts compares the two).
 */
export function messageListJson(page: {
  items: readonly Message[];
  limit: number;
  nextPageToken: string | undefined;
}): string {
  const body: { count: number; limit: number; messages: Record<string, unknown>[]; next_page_token?: string } = {
    count: page.items.length,
    limit: page.limit,
    messages: page.items.map(listItem),
  };
  if (page.nextPageToken) body.next_page_token = page.nextPageToken;
  return JSON.stringify(body);
}

function listItem(m: Message): Record<string, unknown> {
  const item: Record<string, unknown> = {
    inbox_id: m.inboxId,
    thread_id: m.threadId,
    message_id: m.messageId,
    labels: m.labels,
    timestamp: m.timestamp,
    from: m.from,
    to: m.to,
    size: m.size,
    updated_at: m.updatedAt,
    created_at: m.createdAt,
  };
  if (m.cc.length) item.cc = m.cc;
  if (m.bcc.length) item.bcc = m.bcc;
  if (m.subject !== null) item.subject = m.subject;
  if (m.preview !== null) item.preview = m.preview;
  if (m.attachments.length) item.attachments = m.attachments.map(listAttachment);
  if (m.inReplyTo !== null) item.in_reply_to = m.inReplyTo;
  if (m.references.length) item.references = m.references;
  if (m.headers && Object.keys(m.headers).length) item.headers = m.headers;
  return item;
}

function listAttachment(a: AttachmentMeta): Record<string, unknown> {
  const out: Record<string, unknown> = { attachment_id: a.attachmentId, size: a.size };
  if (a.filename !== null) out.filename = a.filename;
  if (a.contentType !== null) out.content_type = a.contentType;
  if (a.contentDisposition !== null) out.content_disposition = a.contentDisposition;
  if (a.contentId !== null) out.content_id = a.contentId;
  return out;
}

export function toMessageResponse(m: Message): MessageWire {
  return {
    ...toMessageItemResponse(m),
    ...nonEmpty('reply_to', m.replyTo),
    ...(m.text !== null ? { text: m.text, extracted_text: extractNewText(m.text) } : {}),
    ...(m.html !== null ? { html: m.html, extracted_html: extractNewHtml(m.html) } : {}),
  };
}

type SendLikeBody = Static<typeof ReplyAllBody> &
  Partial<Pick<Static<typeof SendMessageBody>, 'to' | 'cc' | 'bcc' | 'subject'>>;

/** Wire body of send, reply and reply-all → the service's input (fields left out stay out). */
export function toSendInput(b: SendLikeBody): SendInput {
  const attachment = (a: Static<typeof SendAttachmentBody>): SendAttachmentInput => ({
    ...(a.filename !== undefined ? { filename: a.filename } : {}),
    ...(a.content_type !== undefined ? { contentType: a.content_type } : {}),
    ...(a.content_disposition !== undefined ? { contentDisposition: a.content_disposition } : {}),
    ...(a.content_id !== undefined ? { contentId: a.content_id } : {}),
    ...(a.content !== undefined ? { content: a.content } : {}),
    ...(receivedBytes(a) !== undefined ? { bytes: receivedBytes(a) } : {}),
    ...(a.url !== undefined ? { url: a.url } : {}),
  });
  return {
    ...(b.to !== undefined ? { to: b.to } : {}),
    ...(b.cc !== undefined ? { cc: b.cc } : {}),
    ...(b.bcc !== undefined ? { bcc: b.bcc } : {}),
    ...(b.reply_to !== undefined ? { replyTo: b.reply_to } : {}),
    ...(b.subject !== undefined ? { subject: b.subject } : {}),
    ...(b.text !== undefined ? { text: b.text } : {}),
    ...(b.html !== undefined ? { html: b.html } : {}),
    ...(b.labels !== undefined ? { labels: b.labels } : {}),
    ...(b.attachments !== undefined ? { attachments: b.attachments.map(attachment) } : {}),
    ...(b.headers !== undefined ? { headers: b.headers } : {}),
  };
}

/** Query string of message and thread lists → the services' list query. */
export function toListQuery(q: Static<typeof ListQuery> | Static<typeof ThreadListQuery>): MessageListQuery {
  return {
    ...toPageQuery(q),
    ...(q.include_spam !== undefined ? { includeSpam: q.include_spam } : {}),
    ...(q.include_blocked !== undefined ? { includeBlocked: q.include_blocked } : {}),
    ...(q.include_trash !== undefined ? { includeTrash: q.include_trash } : {}),
    ...(q.include_unauthenticated !== undefined ? { includeUnauthenticated: q.include_unauthenticated } : {}),
    ...(q.subject !== undefined ? { subject: q.subject } : {}),
    ...('from' in q && q.from !== undefined ? { from: q.from } : {}),
    ...('to' in q && q.to !== undefined ? { to: q.to } : {}),
    ...('senders' in q && q.senders !== undefined ? { senders: q.senders } : {}),
    ...('recipients' in q && q.recipients !== undefined ? { recipients: q.recipients } : {}),
  };
}
