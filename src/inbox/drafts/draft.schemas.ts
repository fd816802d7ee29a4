import { Type, type Static } from 'typebox';
import {
  Addresses,
  Labels,
  ListQuery,
  SendAttachmentBody,
  UpdateMessageBody,
  toSendInput,
} from '../messages/message.schemas.js';
import { AttachmentResponse, toAttachmentResponse } from '../core/message.wire.js';
import type { Draft } from './draft.repository.js';
import { toPageQuery } from '../lists/list-query.js';
import type { CreateDraftInput, DraftListQuery, UpdateDraftInput } from './draft.service.js';

// Request shapes are loose about content, as a send's: the service checks every rule and answers
// each broken one with its own detail code (the same codes as a send).

const DraftId = Type.String({ minLength: 1, maxLength: 64 });
const AttachmentId = Type.String({ minLength: 1, maxLength: 64 });
const InboxId = Type.String({ minLength: 1, maxLength: 320 });
const PodId = Type.String({ minLength: 1, maxLength: 64 });

export const InboxDraftsParams = Type.Object({ inbox_id: InboxId });
export const InboxDraftParams = Type.Object({ inbox_id: InboxId, draft_id: DraftId });
export const InboxDraftAttachmentParams = Type.Object({
  inbox_id: InboxId,
  draft_id: DraftId,
  attachment_id: AttachmentId,
});
export const DraftParams = Type.Object({ draft_id: DraftId });
export const DraftAttachmentParams = Type.Object({ draft_id: DraftId, attachment_id: AttachmentId });
export const PodDraftsParams = Type.Object({ pod_id: PodId });
export const PodDraftParams = Type.Object({ pod_id: PodId, draft_id: DraftId });
export const PodDraftAttachmentParams = Type.Object({ pod_id: PodId, draft_id: DraftId, attachment_id: AttachmentId });

const SendAt = Type.String({
  maxLength: 64,
  description: 'ISO-8601 date-time: the draft is sent then by a worker (a time already past: at once)',
});

export const CreateDraftBody = Type.Object({
  labels: Type.Optional(Labels),
  reply_to: Type.Optional(Addresses),
  to: Type.Optional(Addresses),
  cc: Type.Optional(Addresses),
  bcc: Type.Optional(Addresses),
  subject: Type.Optional(Type.String({ maxLength: 998 })),
  text: Type.Optional(Type.String()),
  html: Type.Optional(Type.String()),
  attachments: Type.Optional(Type.Array(SendAttachmentBody, { maxItems: 100 })),
  in_reply_to: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 998,
      description: 'A reply draft: recipients, subject and threading come from this message of the inbox',
    }),
  ),
  forward_of: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 998,
      description:
        'A forward draft: subject and threading come from this message; its body and attachments are merged in at send time',
    }),
  ),
  reply_all: Type.Optional(
    Type.Boolean({ description: 'With in_reply_to: address the whole thread (then leave out to, cc and bcc)' }),
  ),
  send_at: Type.Optional(SendAt),
  client_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'A repeat with the same client_id in the inbox returns the draft created first',
    }),
  ),
});

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) =>
  Type.Optional(Type.Union([t, Type.Null()]));

export const UpdateDraftBody = Type.Object({
  reply_to: Nullable(Addresses),
  to: Nullable(Addresses),
  cc: Nullable(Addresses),
  bcc: Nullable(Addresses),
  subject: Nullable(Type.String({ maxLength: 998 })),
  text: Nullable(Type.String()),
  html: Nullable(Type.String()),
  add_attachments: Type.Optional(Type.Array(SendAttachmentBody, { maxItems: 100 })),
  remove_attachments: Type.Optional(Type.Array(AttachmentId, { maxItems: 100 })),
  add_labels: Type.Optional(Labels),
  remove_labels: Type.Optional(Labels),
  send_at: Nullable(SendAt),
});

/** Fields of other draft shapes that an update cannot take: answered 400 rather than dropped. */
export const NOT_UPDATABLE: Readonly<Record<string, string>> = {
  in_reply_to: "a draft's kind (plain, reply or forward) is fixed when it is created.",
  forward_of: "a draft's kind (plain, reply or forward) is fixed when it is created.",
  reply_all: "a draft's recipients are changed with to, cc and bcc.",
  labels: 'use add_labels and remove_labels.',
  attachments: 'use add_attachments and remove_attachments.',
  client_id: 'is given when the draft is created.',
};

/** The send body is the SDK's UpdateMessageRequest: labels of the sent message. */
export const SendDraftBody = UpdateMessageBody;

/** The SDK's draft list parameters: those of message lists but the include_* flags (drafts are never spam or trash). */
export const DraftListQuerystring = Type.Object({
  limit: ListQuery.properties.limit,
  page_token: ListQuery.properties.page_token,
  labels: ListQuery.properties.labels,
  before: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only drafts last updated strictly before this time' }),
  ),
  after: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only drafts last updated strictly after this time' }),
  ),
  ascending: ListQuery.properties.ascending,
});

const SendStatus = Type.Union([Type.Literal('scheduled'), Type.Literal('sending'), Type.Literal('failed')]);

const itemFields = {
  inbox_id: Type.String(),
  draft_id: Type.String(),
  labels: Type.Array(Type.String()),
  to: Type.Optional(Type.Array(Type.String())),
  cc: Type.Optional(Type.Array(Type.String())),
  bcc: Type.Optional(Type.Array(Type.String())),
  subject: Type.Optional(Type.String()),
  preview: Type.Optional(Type.String()),
  attachments: Type.Optional(Type.Array(AttachmentResponse)),
  in_reply_to: Type.Optional(Type.String({ description: 'Reply drafts: the Message-ID answered' })),
  forward_of: Type.Optional(Type.String({ description: 'Forward drafts: the id of the message forwarded' })),
  send_status: Type.Optional(SendStatus),
  send_at: Type.Optional(Type.String({ format: 'date-time' })),
  updated_at: Type.String({ format: 'date-time' }),
};

/** Items of draft lists (the SDK's DraftItem): a Draft without reply_to, bodies and references. */
export const DraftItemResponse = Type.Object(itemFields);

export const DraftResponse = Type.Object({
  ...itemFields,
  client_id: Type.Optional(Type.String()),
  reply_to: Type.Optional(Type.Array(Type.String())),
  text: Type.Optional(Type.String()),
  html: Type.Optional(Type.String()),
  references: Type.Optional(Type.Array(Type.String())),
  created_at: Type.String({ format: 'date-time' }),
});

export const ListDraftsResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  drafts: Type.Array(DraftItemResponse),
});

const nonEmpty = <K extends string>(key: K, list: readonly string[]) =>
  list.length ? ({ [key]: [...list] } as Record<K, string[]>) : {};

export function toDraftItemResponse(d: Draft): Static<typeof DraftItemResponse> {
  return {
    inbox_id: d.inboxId,
    draft_id: d.draftId,
    labels: [...d.labels],
    ...nonEmpty('to', d.to),
    ...nonEmpty('cc', d.cc),
    ...nonEmpty('bcc', d.bcc),
    ...(d.subject !== null ? { subject: d.subject } : {}),
    ...(d.preview !== null ? { preview: d.preview } : {}),
    ...(d.attachments.length ? { attachments: d.attachments.map(toAttachmentResponse) } : {}),
    ...(d.inReplyTo !== null ? { in_reply_to: d.inReplyTo } : {}),
    ...(d.forwardOf !== null ? { forward_of: d.forwardOf } : {}),
    ...(d.sendStatus !== null ? { send_status: d.sendStatus } : {}),
    ...(d.sendAt !== null ? { send_at: d.sendAt } : {}),
    updated_at: d.updatedAt,
  };
}

export function toDraftResponse(d: Draft): Static<typeof DraftResponse> {
  return {
    ...toDraftItemResponse(d),
    ...(d.clientId !== null ? { client_id: d.clientId } : {}),
    ...nonEmpty('reply_to', d.replyTo),
    ...(d.text !== null ? { text: d.text } : {}),
    ...(d.html !== null ? { html: d.html } : {}),
    ...nonEmpty('references', d.references),
    created_at: d.createdAt,
  };
}

export function toCreateDraftInput(b: Static<typeof CreateDraftBody>): CreateDraftInput {
  return {
    ...toSendInput(b),
    ...(b.in_reply_to !== undefined ? { inReplyTo: b.in_reply_to } : {}),
    ...(b.forward_of !== undefined ? { forwardOf: b.forward_of } : {}),
    ...(b.reply_all !== undefined ? { replyAll: b.reply_all } : {}),
    ...(b.send_at !== undefined ? { sendAt: b.send_at } : {}),
    ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
  };
}

export function toUpdateDraftInput(b: Static<typeof UpdateDraftBody>): UpdateDraftInput {
  const added =
    b.add_attachments !== undefined ? toSendInput({ attachments: b.add_attachments }).attachments : undefined;
  return {
    ...(b.reply_to !== undefined ? { replyTo: b.reply_to } : {}),
    ...(b.to !== undefined ? { to: b.to } : {}),
    ...(b.cc !== undefined ? { cc: b.cc } : {}),
    ...(b.bcc !== undefined ? { bcc: b.bcc } : {}),
    ...(b.subject !== undefined ? { subject: b.subject } : {}),
    ...(b.text !== undefined ? { text: b.text } : {}),
    ...(b.html !== undefined ? { html: b.html } : {}),
    ...(added !== undefined ? { addAttachments: added } : {}),
    ...(b.remove_attachments !== undefined ? { removeAttachments: b.remove_attachments } : {}),
    ...(b.add_labels !== undefined ? { addLabels: b.add_labels } : {}),
    ...(b.remove_labels !== undefined ? { removeLabels: b.remove_labels } : {}),
    ...(b.send_at !== undefined ? { sendAt: b.send_at } : {}),
  };
}

export function toDraftListQuery(q: Static<typeof DraftListQuerystring>): DraftListQuery {
  return {
    ...toPageQuery(q),
  };
}
