import { Type, type Static } from 'typebox';
import type { Inbox } from './inbox.js';

/** The wire shape of inboxes (AgentMail's) and its presenter, for every route that answers with inboxes. */

export const MetadataValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);

export const InboxResponse = Type.Object({
  pod_id: Type.String(),
  inbox_id: Type.String(),
  email: Type.String({ description: 'The address (same as inbox_id)' }),
  display_name: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Record(Type.String(), MetadataValue)),
  status: Type.Optional(
    Type.Union([Type.Literal('active'), Type.Literal('paused')], {
      description: '`paused` while the inbox is paused (it sends nothing, and still receives); omitted when active',
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const ListInboxesResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  inboxes: Type.Array(InboxResponse),
});

export function toInboxResponse(inbox: Inbox): Static<typeof InboxResponse> {
  return {
    pod_id: inbox.podId,
    inbox_id: inbox.inboxId,
    email: inbox.inboxId,
    ...(inbox.displayName !== null ? { display_name: inbox.displayName } : {}),
    ...(inbox.clientId !== null ? { client_id: inbox.clientId } : {}),
    ...(inbox.metadata ? { metadata: { ...inbox.metadata } } : {}),
    ...(inbox.status === 'paused' ? { status: 'paused' as const } : {}),
    created_at: inbox.createdAt,
    updated_at: inbox.updatedAt,
  };
}
