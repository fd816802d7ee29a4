import { sql } from 'kysely';
import type { Folder } from '../core/folders.js';
import type { Db } from '../schema/database.js';

/**
 * The folders of mail clients in SQL (decision 0045): UID counters and folder memberships. Only
 * the mail store writes them (ESLint), in the transaction of the change that causes them; the
 * IMAP sessions read them.
 */

/**
 * Takes `count` UIDs of an inbox's folder and returns the first: one statement that creates the
 * counter at 1 + count or adds count to it. On PostgreSQL the counter row stays locked until the
 * commit, so UIDs of one folder become visible in the order they were taken, never a lower one
 * after a higher one.
 */
export async function takeUids(db: Db, inboxId: string, folder: Folder, count: number): Promise<number> {
  const { rows } = await sql<{ uid_next: number | string }>`insert into folder_counters (inbox_id, folder, uid_next)
    values (${inboxId}, ${folder}, ${1 + count})
    on conflict (inbox_id, folder) do update set uid_next = folder_counters.uid_next + ${count}
    returning uid_next`.execute(db);
  return Number(rows[0]?.uid_next) - count;
}

export async function insertFolderMessages(
  db: Db,
  rows: readonly { inboxId: string; folder: Folder; uid: number; messagePk: number }[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += 500)
    await db
      .insertInto('folder_messages')
      .values(
        rows
          .slice(i, i + 500)
          .map((r) => ({ inbox_id: r.inboxId, folder: r.folder, uid: r.uid, message_pk: r.messagePk })),
      )
      .execute();
}

export async function deleteFolderMessage(db: Db, messagePk: number, folder: Folder): Promise<void> {
  await db.deleteFrom('folder_messages').where('message_pk', '=', messagePk).where('folder', '=', folder).execute();
}

/** The next UID of a folder (1 when none was ever taken). */
export async function findUidNext(db: Db, inboxId: string, folder: Folder): Promise<number> {
  const row = await db
    .selectFrom('folder_counters')
    .select('uid_next')
    .where('inbox_id', '=', inboxId)
    .where('folder', '=', folder)
    .executeTakeFirst();
  return row ? Number(row.uid_next) : 1;
}

/** A message as a folder lists it: its UID, key and labels. */
export interface FolderEntry {
  readonly uid: number;
  readonly pk: number;
  readonly labels: readonly string[];
}

/** Every message of a folder by UID, with its labels (the state a session keeps). */
export async function listFolder(db: Db, inboxId: string, folder: Folder): Promise<FolderEntry[]> {
  const rows = await db
    .selectFrom('folder_messages')
    .innerJoin('messages', 'messages.id', 'folder_messages.message_pk')
    .select(['folder_messages.uid', 'folder_messages.message_pk', 'messages.labels'])
    .where('folder_messages.inbox_id', '=', inboxId)
    .where('folder_messages.folder', '=', folder)
    .orderBy('folder_messages.uid')
    .execute();
  return rows.map((r) => ({ uid: Number(r.uid), pk: Number(r.message_pk), labels: JSON.parse(r.labels) as string[] }));
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
