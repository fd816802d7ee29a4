import { MetadataValue } from '../core/inbox.wire.js';
import { Type, type Static } from 'typebox';
import type { InboxMetadata, InboxStatus } from '../core/inbox.js';

/** AgentMail's InboxStatus: `paused` refuses every send of the inbox (403 INBOX_PAUSED); mail still arrives. */
const InboxStatusBody = Type.Union([Type.Literal('active'), Type.Literal('paused')], {
  description: '`paused`: the inbox sends nothing (403 INBOX_PAUSED) and still receives; `active` (default) resumes',
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
  status: Type.Optional(InboxStatusBody),
});

export const UpdateInboxBody = Type.Object({
  display_name: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
  metadata: Type.Optional(
    Type.Union([Type.Record(Type.String(), Type.Union([MetadataValue, Type.Null()])), Type.Null()], {
      description: 'Merged into the metadata: a key set to null is removed; null clears all metadata',
    }),
  ),
  status: Type.Optional(InboxStatusBody),
});

/** The update body as the service takes it (the same at /v0/inboxes/:id and the pod route). */
export function toUpdateInboxInput(b: Static<typeof UpdateInboxBody>): {
  displayName?: string | null;
  metadata?: Readonly<Record<string, string | number | boolean | null>> | null;
  status?: InboxStatus;
} {
  return {
    ...(b.display_name !== undefined ? { displayName: b.display_name } : {}),
    ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
    ...(b.status !== undefined ? { status: b.status } : {}),
  };
}

/** The create body as the service takes it (the same at /v0/inboxes and /v0/pods/:pod_id/inboxes). */
export function toCreateInboxInput(b: Static<typeof CreateInboxBody>): {
  username?: string;
  domain?: string;
  displayName?: string;
  clientId?: string;
  metadata?: InboxMetadata;
  status?: InboxStatus;
} {
  return {
    ...(b.username !== undefined ? { username: b.username } : {}),
    ...(b.domain !== undefined ? { domain: b.domain } : {}),
    ...(b.display_name !== undefined ? { displayName: b.display_name } : {}),
    ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
    ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
    ...(b.status !== undefined ? { status: b.status } : {}),
  };
}
