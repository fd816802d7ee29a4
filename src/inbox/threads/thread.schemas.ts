import { Type, type Static } from 'typebox';
import type { AttachmentMeta, Message } from '../mailstore/message.repository.js';
import {
  AttachmentResponse,
  MessageResponse,
  toAttachmentResponse,
  toMessageResponse,
} from '../messages/message.schemas.js';
import type { Thread } from '../mailstore/thread.repository.js';
import { participantsOf } from './thread.service.js';

export const InboxThreadParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  thread_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const ThreadParams = Type.Object({ thread_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const InboxThreadAttachmentParams = Type.Object({
  ...InboxThreadParams.properties,
  attachment_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const ThreadAttachmentParams = Type.Object({
  ...ThreadParams.properties,
  attachment_id: Type.String({ minLength: 1, maxLength: 64 }),
});

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

export const GetThreadQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, description: 'Messages per page (at most 100); without it, every message' }),
  ),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
});

export const UpdateThreadBody = Type.Object({
  add_labels: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 100 })),
  remove_labels: Type.Optional(
    Type.Array(Type.String({ maxLength: 1000 }), {
      maxItems: 100,
      description: 'Wins over add_labels for a label in both',
    }),
  ),
});
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

/** PATCH …/threads/:thread_id body → the thread service's label change. */
export function toThreadLabelChange(b: Static<typeof UpdateThreadBody>): {
  addLabels?: readonly string[];
  removeLabels?: readonly string[];
} {
  return {
    ...(b.add_labels !== undefined ? { addLabels: b.add_labels } : {}),
    ...(b.remove_labels !== undefined ? { removeLabels: b.remove_labels } : {}),
  };
}

export function toUpdateThreadResponse(u: {
  threadId: string;
  labels: readonly string[];
}): Static<typeof UpdateThreadResponse> {
  return { thread_id: u.threadId, labels: [...u.labels] };
}
