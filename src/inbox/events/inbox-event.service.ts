import type { LabelEventType } from '../core/events.js';
import type { Kysely } from 'kysely';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { type KeyOwner, requireInScope, requirePermission } from '../core/scope.js';
import type { InboxDatabase } from '../schema/database.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import { normalizeInboxId } from '../core/inbox.js';
import { parseLimit } from '../lists/list-query.js';
import { listInboxLabelEvents } from './event.repository.js';

/** One label change of a message of the inbox, as inboxes.events.list returns it. */
export interface InboxEvent {
  readonly organizationId: string;
  readonly podId: string;
  readonly inboxId: string;
  readonly eventId: string;
  readonly eventType: LabelEventType;
  readonly messageId: string;
  readonly label: string;
  readonly eventAt: string;
  readonly createdAt: string;
}

/** inboxes.events.list: the stored label changes of an inbox, newest first unless ascending. */
export function createInboxEventService({ db }: { db: Kysely<InboxDatabase> }) {
  return {
    async list(owner: KeyOwner, inboxId: string, query: { limit?: number; pageToken?: string; ascending?: boolean }) {
      requirePermission(owner, 'messageRead');
      const limit = parseLimit(query.limit);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const direction = cursor?.direction ?? (query.ascending ? 'asc' : 'desc');
      const inbox = await findInbox(db, owner.organizationId, normalizeInboxId(inboxId));
      const notFound = () => new InboxNotFoundError(inboxId);
      if (!inbox) throw notFound();
      requireInScope(owner, inbox, notFound);
      const rows = await listInboxLabelEvents(db, inbox.inboxId, {
        limit,
        direction,
        ...(cursor ? { after: cursor.sort } : {}),
      });
      const events: InboxEvent[] = rows.map((row) => {
        const body = JSON.parse(row.payload) as { message_id: string; label: string; event_at: string };
        return {
          organizationId: row.organizationId,
          podId: row.podId ?? inbox.podId,
          inboxId: inbox.inboxId,
          eventId: row.eventId,
          eventType: row.eventType as InboxEvent['eventType'],
          messageId: body.message_id,
          label: body.label,
          eventAt: body.event_at,
          createdAt: row.createdAt,
        };
      });
      return { limit, ...page(events, limit, (e) => ({ sort: e.eventId, tiebreak: e.eventId }), direction) };
    },
  };
}

export type InboxEventService = ReturnType<typeof createInboxEventService>;
