import type { Inbox, InboxMetadata, InboxStatus } from '../core/inbox.js';
import type { Selectable } from 'kysely';
import { afterKey } from '../../platform/db/keyset.js';
import { runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db } from '../schema/database.js';
import type { Cursor } from '../../platform/db/cursor.js';
import type { InboxTable } from '../schema/inbox.table.js';
import { inboxSearchWords } from '../core/search-text.js';

export function inboxFromRow(row: Selectable<InboxTable>): Inbox {
  return {
    inboxId: row.inbox_id,
    organizationId: row.organization_id,
    podId: row.pod_id,
    username: row.username,
    domain: row.domain,
    displayName: row.display_name,
    clientId: row.client_id,
    metadata: row.metadata ? (JSON.parse(row.metadata) as InboxMetadata) : null,
    status: row.status === 'paused' ? 'paused' : 'active',
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertInbox(db: Db, inbox: Inbox): Promise<void> {
  await db
    .insertInto('inboxes')
    .values({
      inbox_id: inbox.inboxId,
      organization_id: inbox.organizationId,
      pod_id: inbox.podId,
      username: inbox.username,
      domain: inbox.domain,
      display_name: inbox.displayName,
      client_id: inbox.clientId,
      metadata: inbox.metadata ? JSON.stringify(inbox.metadata) : null,
      status: inbox.status === 'paused' ? 'paused' : null,
      search_words: inboxSearchWords(inbox.inboxId, inbox.displayName),
      created_at: inbox.createdAt,
      updated_at: inbox.updatedAt,
    })
    .execute();
}

export async function findInbox(db: Db, organizationId: string, inboxId: string): Promise<Inbox | undefined> {
  const [row] = await runCompiledOnce(db, 'inboxes.find', [inboxId, organizationId], () =>
    db.selectFrom('inboxes').selectAll().where('inbox_id', '=', inboxId).where('organization_id', '=', organizationId),
  );
  return row ? inboxFromRow(row) : undefined;
}

/** Any organization's inbox at an address: for local delivery and address uniqueness. */
export async function findInboxByAddress(db: Db, address: string): Promise<Inbox | undefined> {
  const row = await db.selectFrom('inboxes').selectAll().where('inbox_id', '=', address).executeTakeFirst();
  return row ? inboxFromRow(row) : undefined;
}

export async function findInboxesByAddresses(db: Db, addresses: readonly string[]): Promise<Inbox[]> {
  if (!addresses.length) return [];
  const rows = await runCompiledOnce(db, `inboxes.by-addresses:${addresses.length}`, addresses, () =>
    db.selectFrom('inboxes').selectAll().where('inbox_id', 'in', addresses),
  );
  return rows.map(inboxFromRow);
}

export async function findInboxByClientId(
  db: Db,
  organizationId: string,
  clientId: string,
): Promise<Inbox | undefined> {
  const row = await db
    .selectFrom('inboxes')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? inboxFromRow(row) : undefined;
}

export async function listInboxes(
  db: Db,
  scope: { organizationId: string; podId?: string; inboxId?: string },
  options: { limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<Inbox[]> {
  let q = db.selectFrom('inboxes').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.podId !== undefined) q = q.where('pod_id', '=', scope.podId);
  if (scope.inboxId !== undefined) q = q.where('inbox_id', '=', scope.inboxId);
  const after = options.after;
  if (after) q = q.where((eb) => afterKey(eb, 'created_at', 'inbox_id', after, options.direction));
  const rows = await q
    .orderBy('created_at', options.direction)
    .orderBy('inbox_id', options.direction)
    .limit(options.limit + 1)
    .execute();
  return rows.map(inboxFromRow);
}

/** Changes the display name, the status and/or replaces the metadata (undefined: unchanged). */
export async function updateInbox(
  db: Db,
  organizationId: string,
  inboxId: string,
  change: { displayName?: string | null; metadata?: InboxMetadata | null; status?: InboxStatus },
  updatedAt: string,
): Promise<boolean> {
  const set: {
    display_name?: string | null;
    search_words?: string;
    metadata?: string | null;
    status?: string | null;
    updated_at: string;
  } = { updated_at: updatedAt };
  if (change.status !== undefined) set.status = change.status === 'paused' ? 'paused' : null;
  if (change.displayName !== undefined) {
    set.display_name = change.displayName;
    set.search_words = inboxSearchWords(inboxId, change.displayName);
  }
  if (change.metadata !== undefined)
    set.metadata = change.metadata && Object.keys(change.metadata).length ? JSON.stringify(change.metadata) : null;
  const result = await db
    .updateTable('inboxes')
    .set(set)
    .where('inbox_id', '=', inboxId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteInbox(db: Db, organizationId: string, inboxId: string): Promise<boolean> {
  // Messages, threads and attachments go with it (foreign keys cascade).
  const result = await db
    .deleteFrom('inboxes')
    .where('inbox_id', '=', inboxId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
