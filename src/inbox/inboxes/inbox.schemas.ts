import { Type, type Static } from 'typebox';
import type { Inbox } from './inbox.repository.js';

export const InboxIdParams = Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320, description: 'The inbox address, e.g. agent@inbox.localhost' }) });

export const CreateInboxBody = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 64, description: 'Local part of the address; random when omitted' })),
  domain: Type.Optional(Type.String({ maxLength: 255, description: 'One of the service domains; the default domain when omitted' })),
  display_name: Type.Optional(Type.String({ maxLength: 255 })),
  client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Idempotency key: a repeat returns the inbox created first' })),
});

export const UpdateInboxBody = Type.Object({ display_name: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]) });

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
export function toCreateInboxInput(b: Static<typeof CreateInboxBody>): { username?: string; domain?: string; displayName?: string; clientId?: string } {
  return {
    ...(b.username !== undefined ? { username: b.username } : {}),
    ...(b.domain !== undefined ? { domain: b.domain } : {}),
    ...(b.display_name !== undefined ? { displayName: b.display_name } : {}),
    ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
  };
}

export function toInboxResponse(inbox: Inbox): Static<typeof InboxResponse> {
  return {
    pod_id: inbox.podId,
    inbox_id: inbox.inboxId,
    email: inbox.inboxId,
    ...(inbox.displayName !== null ? { display_name: inbox.displayName } : {}),
    ...(inbox.clientId !== null ? { client_id: inbox.clientId } : {}),
    created_at: inbox.createdAt,
    updated_at: inbox.updatedAt,
  };
}
