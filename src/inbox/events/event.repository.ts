import { LABEL_EVENT_TYPES } from '../core/events.js';
import { insertCompiledOnce, runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db } from '../schema/database.js';

export interface StoredEvent {
  readonly eventId: string;
  readonly organizationId: string;
  readonly eventType: string;
  readonly inboxId: string | null;
  readonly podId: string | null;
  /** The exact JSON body delivered to receivers. */
  readonly payload: string;
  readonly createdAt: string;
}

/** Several events in one statement. */
export async function insertEvents(db: Db, events: readonly StoredEvent[]): Promise<void> {
  if (!events.length) return;
  const rows = events.map((e) => ({
    event_id: e.eventId,
    organization_id: e.organizationId,
    event_type: e.eventType,
    inbox_id: e.inboxId,
    pod_id: e.podId,
    payload: e.payload,
    created_at: e.createdAt,
  }));
  await insertCompiledOnce(db, 'events.insert', rows, () => db.insertInto('events').values(rows));
}

export async function findEvent(db: Db, eventId: string): Promise<StoredEvent | undefined> {
  const row = await db.selectFrom('events').selectAll().where('event_id', '=', eventId).executeTakeFirst();
  return row
    ? {
        eventId: row.event_id,
        organizationId: row.organization_id,
        eventType: row.event_type,
        inboxId: row.inbox_id,
        podId: row.pod_id,
        payload: row.payload,
        createdAt: row.created_at,
      }
    : undefined;
}

/** The enabled webhooks of an organization with their filters, for fan-out. */
export async function findEnabledWebhookFilters(
  db: Db,
  organizationId: string,
): Promise<
  {
    webhookId: string;
    eventTypes: string[] | null;
    inboxIds: string[] | null;
    podIds: string[] | null;
    scopePodId: string | null;
    scopeInboxId: string | null;
  }[]
> {
  const rows = await runCompiledOnce(db, 'webhooks.filters', [organizationId], () =>
    db
      .selectFrom('webhooks')
      .select(['webhook_id', 'event_types', 'inbox_ids', 'pod_ids', 'enabled', 'pod_id', 'inbox_id'])
      .where('organization_id', '=', organizationId),
  );
  return rows
    .filter((r) => Boolean(r.enabled))
    .map((r) => ({
      webhookId: r.webhook_id,
      eventTypes: r.event_types ? (JSON.parse(r.event_types) as string[]) : null,
      inboxIds: r.inbox_ids ? (JSON.parse(r.inbox_ids) as string[]) : null,
      podIds: r.pod_ids ? (JSON.parse(r.pod_ids) as string[]) : null,
      scopePodId: r.pod_id ?? null,
      scopeInboxId: r.inbox_id ?? null,
    }));
}

/** The stored payloads of `eventIds` that exist (committed ones, when read outside the writer's transaction). */
export async function findEventPayloads(db: Db, eventIds: readonly string[]): Promise<Map<string, string>> {
  if (!eventIds.length) return new Map();
  const rows = await db
    .selectFrom('events')
    .select(['event_id', 'payload'])
    .where('event_id', 'in', eventIds)
    .execute();
  return new Map(rows.map((r) => [r.event_id, r.payload]));
}

/** Label changes of an inbox's messages (inboxes.events.list), by event_id (time-ordered); limit + 1 rows. */
export async function listInboxLabelEvents(
  db: Db,
  inboxId: string,
  page: { limit: number; direction: 'asc' | 'desc'; after?: string },
): Promise<StoredEvent[]> {
  let q = db
    .selectFrom('events')
    .selectAll()
    .where('inbox_id', '=', inboxId)
    .where('event_type', 'in', [...LABEL_EVENT_TYPES]);
  if (page.after !== undefined) q = q.where('event_id', page.direction === 'asc' ? '>' : '<', page.after);
  const rows = await q
    .orderBy('event_id', page.direction)
    .limit(page.limit + 1)
    .execute();
  return rows.map((row) => ({
    eventId: row.event_id,
    organizationId: row.organization_id,
    eventType: row.event_type,
    inboxId: row.inbox_id,
    podId: row.pod_id,
    payload: row.payload,
    createdAt: row.created_at,
  }));
}
