import { Type, type Static } from 'typebox';
import type { Inbox, InboxMetadata } from '../core/inbox.js';

export const InboxIdParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320, description: 'The inbox address, e.g. agent@inbox.localhost' }),
});

export const CreateInboxBody = Type.Object({
  username: Type.Optional(
    Type.String({ maxLength: 64, description: 'Local part of the address; random when omitted' }),
  ),
  domain: Type.Optional(
    Type.String({ maxLength: 255, description: 'One of the service domains; the default domain when omitted' }),
  ),
  display_name: Type.Optional(Type.String({ maxLength: 255 })),
  client_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Idempotency key: a repeat returns the inbox created first',
    }),
  ),
  metadata: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
      description: 'Up to 256 keys (1–256 characters); values: strings (≤ 256 characters), numbers, booleans',
    }),
  ),
});

const MetadataValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);

export const UpdateInboxBody = Type.Object({
  display_name: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
  metadata: Type.Optional(
    Type.Union([Type.Record(Type.String(), Type.Union([MetadataValue, Type.Null()])), Type.Null()], {
      description: 'Merged into the metadata: a key set to null is removed; null clears all metadata',
    }),
  ),
});

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
});

export const InboxResponse = Type.Object({
  pod_id: Type.String(),
  inbox_id: Type.String(),
  email: Type.String({ description: 'The address (same as inbox_id)' }),
  display_name: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Record(Type.String(), MetadataValue)),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const ListInboxesResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  inboxes: Type.Array(InboxResponse),
});

/** The create body as the service takes it (the same at /v0/inboxes and /v0/pods/:pod_id/inboxes). */
export function toCreateInboxInput(b: Static<typeof CreateInboxBody>): {
  username?: string;
  domain?: string;
  displayName?: string;
  clientId?: string;
  metadata?: InboxMetadata;
} {
  return {
    ...(b.username !== undefined ? { username: b.username } : {}),
    ...(b.domain !== undefined ? { domain: b.domain } : {}),
    ...(b.display_name !== undefined ? { displayName: b.display_name } : {}),
    ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
    ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
  };
}

export function toInboxResponse(inbox: Inbox): Static<typeof InboxResponse> {
  return {
    pod_id: inbox.podId,
    inbox_id: inbox.inboxId,
    email: inbox.inboxId,
    ...(inbox.displayName !== null ? { display_name: inbox.displayName } : {}),
    ...(inbox.clientId !== null ? { client_id: inbox.clientId } : {}),
    ...(inbox.metadata ? { metadata: { ...inbox.metadata } } : {}),
    created_at: inbox.createdAt,
    updated_at: inbox.updatedAt,
  };
}
