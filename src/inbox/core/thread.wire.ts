import { Type, type Static } from 'typebox';
import { AttachmentResponse, MessageResponse, toAttachmentResponse, toMessageResponse } from './message.wire.js';
import { type Thread, participantsOf } from './thread.js';
import type { Message, AttachmentMeta } from './message.js';

/**
 * The wire shapes of threads (AgentMail's) and their presenters, for routes, webhooks, WebSocket and every door
 * to come.
 */

// The SDK's Thread fields plus the spec's participants and last_message_at.
const itemFields = {
  inbox_id: Type.String(),
  thread_id: Type.String(),
  labels: Type.Array(Type.String(), { description: 'Union of the labels of its messages' }),
  timestamp: Type.String({ format: 'date-time', description: 'Time of the newest message' }),
  received_timestamp: Type.Optional(Type.String({ format: 'date-time' })),
  sent_timestamp: Type.Optional(Type.String({ format: 'date-time' })),
  senders: Type.Array(Type.String()),
  recipients: Type.Array(Type.String()),
  participants: Type.Array(Type.String(), { description: 'Addresses of every sender and recipient' }),
  subject: Type.Optional(Type.String()),
  preview: Type.Optional(Type.String()),
  last_message_id: Type.String(),
  last_message_at: Type.String({ format: 'date-time', description: 'Same as timestamp' }),
  message_count: Type.Integer(),
  size: Type.Integer(),
  updated_at: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
};

/** Items of thread lists and the `thread` of message.received events: a Thread without messages. */
export const ThreadItemResponse = Type.Object(itemFields);

export const ThreadResponse = Type.Object({
  ...itemFields,
  count: Type.Integer({ description: 'Messages in this response' }),
  limit: Type.Optional(Type.Integer()),
  next_page_token: Type.Optional(Type.String({ description: 'The next, older page of messages' })),
  attachments: Type.Optional(Type.Array(AttachmentResponse)),
  messages: Type.Array(MessageResponse, { description: 'Oldest first' }),
});

export const ListThreadsResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  threads: Type.Array(ThreadItemResponse),
});

export type ThreadItemWire = Static<typeof ThreadItemResponse>;

export function toThreadItemResponse(t: Thread): ThreadItemWire {
  return {
    inbox_id: t.inboxId,
    thread_id: t.threadId,
    labels: [...t.labels],
    timestamp: t.timestamp,
    ...(t.receivedTimestamp !== null ? { received_timestamp: t.receivedTimestamp } : {}),
    ...(t.sentTimestamp !== null ? { sent_timestamp: t.sentTimestamp } : {}),
    senders: [...t.senders],
    recipients: [...t.recipients],
    participants: participantsOf(t),
    ...(t.subject !== null ? { subject: t.subject } : {}),
    ...(t.preview !== null ? { preview: t.preview } : {}),
    last_message_id: t.lastMessageId,
    last_message_at: t.timestamp,
    message_count: t.messageCount,
    size: t.size,
    updated_at: t.updatedAt,
    created_at: t.createdAt,
  };
}

export const UpdateThreadResponse = Type.Object({ thread_id: Type.String(), labels: Type.Array(Type.String()) });

export function toThreadResponse(
  t: Thread,
  messages: readonly Message[],
  paging: { limit?: number; nextPageToken?: string } = {},
): Static<typeof ThreadResponse> {
  const attachments: AttachmentMeta[] = messages.flatMap((m) => m.attachments);
  return {
    ...toThreadItemResponse(t),
    count: messages.length,
    ...(paging.limit !== undefined ? { limit: paging.limit } : {}),
    ...(paging.nextPageToken !== undefined ? { next_page_token: paging.nextPageToken } : {}),
    ...(attachments.length ? { attachments: attachments.map(toAttachmentResponse) } : {}),
    messages: messages.map(toMessageResponse),
  };
}

export function toUpdateThreadResponse(u: {
  threadId: string;
  labels: readonly string[];
}): Static<typeof UpdateThreadResponse> {
  return { thread_id: u.threadId, labels: [...u.labels] };
}
