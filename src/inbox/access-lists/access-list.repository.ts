import { sql } from 'kysely';
import { runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db } from '../schema/database.js';

export const DIRECTIONS = ['send', 'receive', 'reply'] as const;
export type Direction = (typeof DIRECTIONS)[number];
export const LIST_TYPES = ['allow', 'block'] as const;
export type ListType = (typeof LIST_TYPES)[number];
export type EntryType = 'email' | 'domain';

/** The level a list belongs to: the organization, one pod, or one inbox (with its pod). */
export type ListLevel =
  | { readonly kind: 'organization' }
  | { readonly kind: 'pod'; readonly podId: string }
  | { readonly kind: 'inbox'; readonly podId: string; readonly inboxId: string };

export function scopeKeyOf(level: ListLevel): string {
  return level.kind === 'organization' ? '' : level.kind === 'pod' ? `pod:${level.podId}` : `inbox:${level.inboxId}`;
}

export interface AccessListEntry {
  readonly organizationId: string;
  readonly podId: string | null;
  readonly inboxId: string | null;
  readonly direction: Direction;
  readonly listType: ListType;
  readonly entry: string;
  readonly entryType: EntryType;
  readonly reason: string | null;
  readonly createdAt: string;
}

type Row = {
  organization_id: string;
  pod_id: string | null;
  inbox_id: string | null;
  direction: string;
  list_type: string;
  entry: string;
  entry_type: string;
  reason: string | null;
  created_at: string;
};

const entryOf = (r: Row): AccessListEntry => ({
  organizationId: r.organization_id,
  podId: r.pod_id,
  inboxId: r.inbox_id,
  direction: r.direction as Direction,
  listType: r.list_type as ListType,
  entry: r.entry,
  entryType: r.entry_type as EntryType,
  reason: r.reason,
  createdAt: r.created_at,
});

const COLUMNS = [
  'organization_id',
  'pod_id',
  'inbox_id',
  'direction',
  'list_type',
  'entry',
  'entry_type',
  'reason',
  'created_at',
] as const;

/** Inserts the entry; false when the list holds it already. */
export async function insertEntry(db: Db, entry: AccessListEntry, scopeKey: string): Promise<boolean> {
  const result = await db
    .insertInto('access_list_entries')
    .values({
      organization_id: entry.organizationId,
      scope_key: scopeKey,
      pod_id: entry.podId,
      inbox_id: entry.inboxId,
      direction: entry.direction,
      list_type: entry.listType,
      entry: entry.entry,
      entry_type: entry.entryType,
      reason: entry.reason,
      created_at: entry.createdAt,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'scope_key', 'direction', 'list_type', 'entry']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** The primary key of one entry, as a condition. */
const keyOf = (organizationId: string, scopeKey: string, direction: Direction, listType: ListType, entry: string) => ({
  organization_id: organizationId,
  scope_key: scopeKey,
  direction,
  list_type: listType,
  entry,
});

export async function findEntry(
  db: Db,
  organizationId: string,
  scopeKey: string,
  direction: Direction,
  listType: ListType,
  entry: string,
): Promise<AccessListEntry | undefined> {
  const row = await db
    .selectFrom('access_list_entries')
    .select(COLUMNS)
    .where((eb) => eb.and(keyOf(organizationId, scopeKey, direction, listType, entry)))
    .executeTakeFirst();
  return row ? entryOf(row) : undefined;
}

/** One page ordered by entry ascending (limit + 1 rows: the caller cuts the page). */
export async function listEntries(
  db: Db,
  organizationId: string,
  scopeKey: string,
  direction: Direction,
  listType: ListType,
  page: { limit: number; after?: string },
): Promise<AccessListEntry[]> {
  let q = db
    .selectFrom('access_list_entries')
    .select(COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('scope_key', '=', scopeKey)
    .where('direction', '=', direction)
    .where('list_type', '=', listType);
  if (page.after !== undefined) q = q.where('entry', '>', page.after);
  return (
    await q
      .orderBy('entry')
      .limit(page.limit + 1)
      .execute()
  ).map(entryOf);
}

export async function deleteEntry(
  db: Db,
  organizationId: string,
  scopeKey: string,
  direction: Direction,
  listType: ListType,
  entry: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom('access_list_entries')
    .where((eb) => eb.and(keyOf(organizationId, scopeKey, direction, listType, entry)))
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Entries of an inbox, pod or organization that go when it goes (inbox and pod deletion). */
export async function deleteEntriesOfScope(db: Db, organizationId: string, scopeKey: string): Promise<void> {
  await db
    .deleteFrom('access_list_entries')
    .where('organization_id', '=', organizationId)
    .where('scope_key', '=', scopeKey)
    .execute();
}

/**
 * Which of the lists a delivery may consult hold anything, in one statement of index seeks (the
 * primary key's prefix): for each probed (level, direction) whether it has an allow list, and for
 * each probed direction whether the organization has any block entry at all. Most organizations
 * have no lists: then this is the only statement a delivery spends on them.
 */
export async function listsPresent(
  db: Db,
  organizationId: string,
  pairs: readonly { direction: Direction; scopeKey: string }[],
): Promise<{ allow: Set<string>; block: Set<Direction> }> {
  const directions = [...new Set(pairs.map((p) => p.direction))];
  const parameters = [
    ...pairs.flatMap((p) => [organizationId, p.scopeKey, p.direction, 'allow']),
    ...directions.flatMap((direction) => [organizationId, direction, 'block']),
  ];
  const [row] = await runCompiledOnce(db, `lists.present:${pairs.length}:${directions.length}`, parameters, () =>
    db.selectNoFrom((eb) => [
      ...pairs.map((p, i) =>
        eb
          .exists(
            eb
              .selectFrom('access_list_entries')
              .select(sql.lit(1).as('one'))
              .where('organization_id', '=', organizationId)
              .where('scope_key', '=', p.scopeKey)
              .where('direction', '=', p.direction)
              .where('list_type', '=', 'allow'),
          )
          .as(`a${i}`),
      ),
      ...directions.map((direction, i) =>
        eb
          .exists(
            eb
              .selectFrom('access_list_entries')
              .select(sql.lit(1).as('one'))
              .where('organization_id', '=', organizationId)
              .where('direction', '=', direction)
              .where('list_type', '=', 'block'),
          )
          .as(`b${i}`),
      ),
    ]),
  );
  const flags = row as Record<string, unknown>;
  const isSet = (v: unknown) => v === true || v === 1 || v === '1' || v === 't';
  return {
    allow: new Set(pairs.filter((_, i) => isSet(flags[`a${i}`])).map((p) => `${p.scopeKey}|${p.direction}`)),
    block: new Set(directions.filter((_, i) => isSet(flags[`b${i}`]))),
  };
}

/** The entries of the organization in `directions` naming one of `candidates` (addresses and domains): index seeks on (organization, direction, entry). */
export async function matchingEntries(
  db: Db,
  organizationId: string,
  directions: readonly Direction[],
  candidates: readonly string[],
): Promise<{ scopeKey: string; direction: Direction; listType: ListType; entry: string }[]> {
  if (!candidates.length || !directions.length) return [];
  const rows = await db
    .selectFrom('access_list_entries')
    .select(['scope_key', 'direction', 'list_type', 'entry'])
    .where('organization_id', '=', organizationId)
    .where('direction', 'in', directions)
    .where('entry', 'in', candidates)
    .execute();
  return rows.map((r) => ({
    scopeKey: r.scope_key,
    direction: r.direction as Direction,
    listType: r.list_type as ListType,
    entry: r.entry,
  }));
}

/** The recipient inboxes that sent one of `messageIds` (mail answering our own): labelled `sent` there. */
export async function inboxesThatSent(
  db: Db,
  inboxIds: readonly string[],
  messageIds: readonly string[],
): Promise<Set<string>> {
  if (!inboxIds.length || !messageIds.length) return new Set();
  const rows = await db
    .selectFrom('messages')
    .innerJoin('message_labels', 'message_labels.message_pk', 'messages.id')
    .select('messages.inbox_id')
    .where('messages.inbox_id', 'in', inboxIds)
    .where('messages.message_id', 'in', messageIds)
    .where('message_labels.label', '=', 'sent')
    .execute();
  return new Set(rows.map((r) => r.inbox_id));
}
