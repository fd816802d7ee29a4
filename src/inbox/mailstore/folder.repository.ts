import { sql } from 'kysely';
import { insertCompiledOnce, runSqlOnce } from '../../platform/db/compiled-once.js';
import type { Folder } from '../core/folders.js';
import type { Db } from '../schema/database.js';

/**
 * The folders of mail clients in SQL (decision 0045): UID counters and folder memberships. Only
 * the mail store writes them (ESLint), in the transaction of the change that causes them; the
 * IMAP sessions read them.
 */

/**
 * Takes `count` UIDs (0 for none) and the next modseq of an inbox's folder (migration 0019) and
 * returns the first UID and the modseq: one statement that creates the counter or adds to it. On
 * PostgreSQL the counter row stays locked until the commit, so UIDs and modseqs of one folder
 * become visible in the order they were taken, never a lower one after a higher one.
 */
export async function takeUids(
  db: Db,
  inboxId: string,
  folder: Folder,
  count: number,
): Promise<{ first: number; modseq: number }> {
  const next = 1 + count;
  const rows = await runSqlOnce(
    db,
    'folder_counters.take',
    [inboxId, folder, next, count],
    () => sql<{
      uid_next: number | string;
      modseq: number | string;
    }>`insert into folder_counters (inbox_id, folder, uid_next, modseq)
    values (${inboxId}, ${folder}, ${next}, 1)
    on conflict (inbox_id, folder) do update
      set uid_next = folder_counters.uid_next + ${count}, modseq = folder_counters.modseq + 1
    returning uid_next, modseq`,
  );
  return { first: Number(rows[0]?.uid_next) - count, modseq: Number(rows[0]?.modseq) };
}

/** Marks the rows of `messagePks` in a folder as changed at `modseq` (their labels changed). */
export async function stampFolderMessages(
  db: Db,
  folder: Folder,
  messagePks: readonly number[],
  modseq: number,
): Promise<void> {
  for (let i = 0; i < messagePks.length; i += 500)
    await db
      .updateTable('folder_messages')
      .set({ modseq })
      .where('folder', '=', folder)
      .where('message_pk', 'in', messagePks.slice(i, i + 500))
      .execute();
}

export async function insertFolderMessages(
  db: Db,
  rows: readonly { inboxId: string; folder: Folder; uid: number; messagePk: number; modseq: number }[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const values = rows.slice(i, i + 500).map((r) => ({
      inbox_id: r.inboxId,
      folder: r.folder,
      uid: r.uid,
      message_pk: r.messagePk,
      modseq: r.modseq,
    }));
    await insertCompiledOnce(db, 'folder_messages.insert', values, () =>
      db.insertInto('folder_messages').values(values),
    );
  }
}

export async function deleteFolderMessage(db: Db, messagePk: number, folder: Folder): Promise<void> {
  await db.deleteFrom('folder_messages').where('message_pk', '=', messagePk).where('folder', '=', folder).execute();
}

/** The next UID of a folder (1 when none was ever taken) and its modseq (0 then). */
export async function findFolderState(
  db: Db,
  inboxId: string,
  folder: Folder,
): Promise<{ uidNext: number; modseq: number }> {
  const row = await db
    .selectFrom('folder_counters')
    .select(['uid_next', 'modseq'])
    .where('inbox_id', '=', inboxId)
    .where('folder', '=', folder)
    .executeTakeFirst();
  return row ? { uidNext: Number(row.uid_next), modseq: Number(row.modseq) } : { uidNext: 1, modseq: 0 };
}

/** The next UID of a folder (1 when none was ever taken). */
export async function findUidNext(db: Db, inboxId: string, folder: Folder): Promise<number> {
  return (await findFolderState(db, inboxId, folder)).uidNext;
}

/** A message as a folder lists it: its UID, key and labels. */
export interface FolderEntry {
  readonly uid: number;
  readonly pk: number;
  readonly labels: readonly string[];
}

/**
 * The messages of a folder by UID, with their labels (the state a session keeps): every one, or
 * with `sinceModseq` only those whose row was written after it (new ones and those whose labels
 * changed), what an incremental resync reads instead of the whole folder.
 */
export async function listFolder(
  db: Db,
  inboxId: string,
  folder: Folder,
  sinceModseq?: number,
): Promise<FolderEntry[]> {
  let query = db
    .selectFrom('folder_messages')
    .innerJoin('messages', 'messages.id', 'folder_messages.message_pk')
    .select(['folder_messages.uid', 'folder_messages.message_pk', 'messages.labels'])
    .where('folder_messages.inbox_id', '=', inboxId)
    .where('folder_messages.folder', '=', folder);
  if (sinceModseq !== undefined) query = query.where('folder_messages.modseq', '>', sinceModseq);
  const rows = await query.orderBy('folder_messages.uid').execute();
  return rows.map((r) => ({ uid: Number(r.uid), pk: Number(r.message_pk), labels: JSON.parse(r.labels) as string[] }));
}

/** How many messages of a folder have a UID up to `maxUid` (one range of the primary key). */
export async function countFolderUpTo(db: Db, inboxId: string, folder: Folder, maxUid: number): Promise<number> {
  const row = await db
    .selectFrom('folder_messages')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('inbox_id', '=', inboxId)
    .where('folder', '=', folder)
    .where('uid', '<=', maxUid)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The UIDs of a folder up to `maxUid` (which of them are gone, when the count says some are). */
export async function listFolderUidsUpTo(db: Db, inboxId: string, folder: Folder, maxUid: number): Promise<number[]> {
  const rows = await db
    .selectFrom('folder_messages')
    .select('uid')
    .where('inbox_id', '=', inboxId)
    .where('folder', '=', folder)
    .where('uid', '<=', maxUid)
    .orderBy('uid')
    .execute();
  return rows.map((r) => Number(r.uid));
}

/** How many messages a folder holds below `uidNext`, and how many of them carry `label` (STATUS). */
export async function countFolder(
  db: Db,
  inboxId: string,
  folder: Folder,
  uidNext: number,
  label: string,
): Promise<{ messages: number; labelled: number }> {
  const messages = await countFolderUpTo(db, inboxId, folder, uidNext - 1);
  const labelled = await db
    .selectFrom('folder_messages')
    .innerJoin('message_labels', 'message_labels.message_pk', 'folder_messages.message_pk')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('folder_messages.inbox_id', '=', inboxId)
    .where('folder_messages.folder', '=', folder)
    .where('folder_messages.uid', '<', uidNext)
    .where('message_labels.label', '=', label)
    .executeTakeFirst();
  return { messages, labelled: Number(labelled?.n ?? 0) };
}

/** The folders of `messagePks` (for a change that moves them). */
export async function findFoldersOf(
  db: Db,
  messagePks: readonly number[],
): Promise<{ messagePk: number; folder: Folder; uid: number }[]> {
  if (!messagePks.length) return [];
  const rows = await db
    .selectFrom('folder_messages')
    .select(['message_pk', 'folder', 'uid'])
    .where('message_pk', 'in', [...messagePks])
    .execute();
  return rows.map((r) => ({ messagePk: Number(r.message_pk), folder: r.folder as Folder, uid: Number(r.uid) }));
}
