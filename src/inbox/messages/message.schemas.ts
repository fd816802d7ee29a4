import { Type, type Static } from 'typebox';
import { toPageQuery } from '../lists/list-query.js';
import { receivedBytes } from '../../platform/http/json-body.js';
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
  content: Type.Optional(Type.String({ description: 'The file, base64-encoded; or give url instead' })),
  url: Type.Optional(
    Type.String({
      maxLength: 8000,
      description:
        'An http(s) URL of the file, instead of content: fetched before the send (redirects followed, public addresses only unless INBOX_WEBHOOK_ALLOW_PRIVATE); filename and content_type default to what it answers',
    }),
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
