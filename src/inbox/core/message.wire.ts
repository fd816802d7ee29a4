import { Type, type Static } from 'typebox';
import type { AttachmentMeta, Message } from './message.js';
import { extractNewText, extractNewHtml } from '../mail/compose.js';

/**
 * The wire shapes of messages (AgentMail's) and their presenters, for routes, webhooks, WebSocket and every door
 * to come. Request schemas stay with their routes.
 */

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
