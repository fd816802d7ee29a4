import { dialectOf, forUpdate } from '../../platform/db/dialect.js';
import { afterKey } from '../../platform/db/keyset.js';
import type { Db } from '../schema/database.js';
import type { Cursor } from '../../platform/db/cursor.js';
import type { WebhookDeliveryRow, WebhookRow } from '../schema/webhook.table.js';

export interface Webhook {
  readonly webhookId: string;
  readonly organizationId: string;
  readonly url: string;
  /** `whsec_` + standard base64 of the HMAC key. */
  readonly secret: string;
  readonly enabled: boolean;
  /** null: every event type. */
  readonly eventTypes: readonly string[] | null;
  /** null (and null podIds): every inbox. */
  readonly inboxIds: readonly string[] | null;
  readonly podIds: readonly string[] | null;
  readonly clientId: string | null;
  /** Why the service disabled it (a 410 from the receiver); null when enabled or disabled by a user. */
  readonly disabledReason: string | null;
  /**
   * The scope of the key that created it: a pod (scopePodId), or an inbox (scopeInboxId with its
   * pod). Only keys of that scope or wider see it, and it hears only events of that scope.
   */
  readonly scopePodId: string | null;
  readonly scopeInboxId: string | null;
  /** Custom headers sent with every delivery; values are write-only (never returned, never logged). */
  readonly headers: Readonly<Record<string, string>> | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** The fields a replacement (PUT) or an update (PATCH) may change. */
export type WebhookChanges = Pick<
  Webhook,
  'url' | 'enabled' | 'eventTypes' | 'inboxIds' | 'podIds' | 'clientId' | 'disabledReason' | 'updatedAt'
>;

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed';

/** One attempt to deliver one event to one webhook. */
export interface WebhookDelivery {
  readonly id: number;
  readonly webhookId: string;
  readonly eventId: string;
  /** From the event; null if the event is gone. */
  readonly eventType: string | null;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly statusCode: number | null;
  readonly error: string | null;
  readonly durationMs: number;
  readonly responseExcerpt: string | null;
  readonly outcome: DeliveryOutcome;
  readonly createdAt: string;
}

const list = (text: string | null): string[] | null => (text ? (JSON.parse(text) as string[]) : null);
const text = (items: readonly string[] | null): string | null => (items?.length ? JSON.stringify(items) : null);
// better-sqlite3 cannot bind booleans; PostgreSQL reads '1'/'0' as boolean input.
const flag = (b: boolean): number => (b ? 1 : 0);

export function webhookFromRow(row: WebhookRow): Webhook {
  return {
    webhookId: row.webhook_id,
    organizationId: row.organization_id,
    url: row.url,
    secret: row.secret,
    enabled: Boolean(row.enabled),
    eventTypes: list(row.event_types),
    inboxIds: list(row.inbox_ids),
    podIds: list(row.pod_ids),
    clientId: row.client_id,
    disabledReason: row.disabled_reason,
    scopePodId: row.pod_id ?? null,
    scopeInboxId: row.inbox_id ?? null,
    headers: row.headers ? (JSON.parse(row.headers) as Record<string, string>) : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertWebhook(db: Db, webhook: Webhook): Promise<void> {
  await db
    .insertInto('webhooks')
    .values({
      webhook_id: webhook.webhookId,
      organization_id: webhook.organizationId,
      url: webhook.url,
      secret: webhook.secret,
      enabled: flag(webhook.enabled),
      event_types: text(webhook.eventTypes),
      inbox_ids: text(webhook.inboxIds),
      pod_ids: text(webhook.podIds),
      client_id: webhook.clientId,
      disabled_reason: webhook.disabledReason,
      pod_id: webhook.scopePodId,
      inbox_id: webhook.scopeInboxId,
      headers: webhook.headers && Object.keys(webhook.headers).length ? JSON.stringify(webhook.headers) : null,
      created_at: webhook.createdAt,
      updated_at: webhook.updatedAt,
    })
    .execute();
}

export async function findWebhook(db: Db, organizationId: string, webhookId: string): Promise<Webhook | undefined> {
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return row ? webhookFromRow(row) : undefined;
}

/** The webhook, locked until the transaction ends: for read-modify-write updates. */
export async function findWebhookForUpdate(
  trx: Db,
  organizationId: string,
  webhookId: string,
): Promise<Webhook | undefined> {
  const row = await forUpdate(
    trx
      .selectFrom('webhooks')
      .selectAll()
      .where('webhook_id', '=', webhookId)
      .where('organization_id', '=', organizationId),
    dialectOf(trx),
  ).executeTakeFirst();
  return row ? webhookFromRow(row) : undefined;
}

/** Any organization's webhook: for the delivery worker, which acts for no caller. */
export async function findWebhookById(db: Db, webhookId: string): Promise<Webhook | undefined> {
  const row = await db.selectFrom('webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
  return row ? webhookFromRow(row) : undefined;
}

export async function findWebhookByClientId(
  db: Db,
  organizationId: string,
  clientId: string,
): Promise<Webhook | undefined> {
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? webhookFromRow(row) : undefined;
}

/** With `scope`: only the webhooks of that pod (its inboxes' included) or of that inbox. */
export async function listWebhooks(
  db: Db,
  organizationId: string,
  options: { limit: number; direction: 'asc' | 'desc'; after?: Cursor; scope?: { podId?: string; inboxId?: string } },
): Promise<Webhook[]> {
  let q = db.selectFrom('webhooks').selectAll().where('organization_id', '=', organizationId);
  const scope = options.scope;
  if (scope?.podId !== undefined) q = q.where('pod_id', '=', scope.podId);
  if (scope?.inboxId !== undefined) q = q.where('inbox_id', '=', scope.inboxId);
  const after = options.after;
  if (after) q = q.where((eb) => afterKey(eb, 'created_at', 'webhook_id', after, options.direction));
  const rows = await q
    .orderBy('created_at', options.direction)
    .orderBy('webhook_id', options.direction)
    .limit(options.limit + 1)
    .execute();
  return rows.map(webhookFromRow);
}

export async function updateWebhook(
  db: Db,
  organizationId: string,
  webhookId: string,
  changes: WebhookChanges,
): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({
      url: changes.url,
      enabled: flag(changes.enabled),
      event_types: text(changes.eventTypes),
      inbox_ids: text(changes.inboxIds),
      pod_ids: text(changes.podIds),
      client_id: changes.clientId,
      disabled_reason: changes.disabledReason,
      updated_at: changes.updatedAt,
    })
    .where('webhook_id', '=', webhookId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Turns a webhook off on the service's own initiative (the receiver said 410 Gone). */
export async function disableWebhook(db: Db, webhookId: string, reason: string, at: string): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ enabled: flag(false), disabled_reason: reason, updated_at: at })
    .where('webhook_id', '=', webhookId)
    .execute();
}

/** Deletes a webhook and its delivery log; its pending deliveries find it gone and end. */
export async function deleteWebhook(db: Db, organizationId: string, webhookId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('webhooks')
    .where('webhook_id', '=', webhookId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  if (Number(result.numDeletedRows) === 0) return false;
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', webhookId).execute();
  return true;
}

export async function insertDelivery(db: Db, delivery: Omit<WebhookDelivery, 'id' | 'eventType'>): Promise<void> {
  await db
    .insertInto('webhook_deliveries')
    .values({
      webhook_id: delivery.webhookId,
      event_id: delivery.eventId,
      attempt: delivery.attempt,
      status_code: delivery.statusCode,
      error: delivery.error,
      duration_ms: delivery.durationMs,
      response_excerpt: delivery.responseExcerpt,
      outcome: delivery.outcome,
      created_at: delivery.createdAt,
    })
    .execute();
}

function deliveryFromRow(row: WebhookDeliveryRow & { event_type: string | null }): WebhookDelivery {
  return {
    id: Number(row.id),
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: row.attempt,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    responseExcerpt: row.response_excerpt,
    outcome: row.outcome,
    createdAt: row.created_at,
  };
}

/** A webhook's attempts in insertion order (newest first unless ascending), keyset-paginated on the id. */
export async function listDeliveries(
  db: Db,
  webhookId: string,
  options: { limit: number; direction: 'asc' | 'desc'; afterId?: number; eventId?: string },
): Promise<WebhookDelivery[]> {
  let q = db
    .selectFrom('webhook_deliveries as d')
    .leftJoin('events as e', 'e.event_id', 'd.event_id')
    .selectAll('d')
    .select('e.event_type')
    .where('d.webhook_id', '=', webhookId);
  if (options.eventId !== undefined) q = q.where('d.event_id', '=', options.eventId);
  if (options.afterId !== undefined) q = q.where('d.id', options.direction === 'asc' ? '>' : '<', options.afterId);
  const rows = await q
    .orderBy('d.id', options.direction)
    .limit(options.limit + 1)
    .execute();
  return rows.map(deliveryFromRow);
}

/** Replaces the custom delivery headers of a webhook (null: none). */
export async function updateWebhookHeaders(
  db: Db,
  organizationId: string,
  webhookId: string,
  headers: Readonly<Record<string, string>> | null,
  updatedAt: string,
): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({ headers: headers && Object.keys(headers).length ? JSON.stringify(headers) : null, updated_at: updatedAt })
    .where('webhook_id', '=', webhookId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
