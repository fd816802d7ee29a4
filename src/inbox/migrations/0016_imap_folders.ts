import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// The folders of mail clients (IMAP, docs/decisions/0045-imap-server.md): which stored message is
// in which folder of its inbox under which UID. `folder_counters.uid_next` is the next UID of an
// inbox's folder (no row: 1); `folder_messages` holds one row per message and folder it is in.
// The mail store keeps both in the transaction of every change (delivery, labels, removal); UIDs
// are never given twice, since the counter only grows and goes only with its inbox.
//
// Self-contained on purpose: the folder rule is written out here in SQL (core/folders.ts has it
// for the code) and no application module is imported, so renumbering this file changes nothing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres' || db.isTransaction) await create(db);
  else await db.transaction().execute(create);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function create(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('folder_counters')
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull().references('inboxes.inbox_id').onDelete('cascade'))
    .addColumn('folder', 'varchar(16)', (c) => c.notNull())
    .addColumn('uid_next', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('folder_counters_pk', ['inbox_id', 'folder'])
    .execute();
  await db.schema
    .createTable('folder_messages')
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull())
    .addColumn('folder', 'varchar(16)', (c) => c.notNull())
    .addColumn('uid', 'bigint', (c) => c.notNull())
    .addColumn('message_pk', 'bigint', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('folder_messages_pk', ['inbox_id', 'folder', 'uid'])
    .addUniqueConstraint('folder_messages_message', ['message_pk', 'folder'])
    .execute();

  // Messages stored before: UIDs in the order they were stored, per inbox and folder.
  const rows = await db
    .selectFrom('messages')
    .leftJoin('message_labels', 'message_labels.message_pk', 'messages.id')
    .select(['messages.id', 'messages.inbox_id', 'message_labels.label'])
    .orderBy('messages.id')
    .execute();
  const labels = new Map<number, { inboxId: string; labels: string[] }>();
  for (const r of rows as { id: number | string; inbox_id: string; label: string | null }[]) {
    const id = Number(r.id);
    const entry = labels.get(id) ?? { inboxId: r.inbox_id, labels: [] };
    if (r.label !== null) entry.labels.push(r.label);
    labels.set(id, entry);
  }
  const next = new Map<string, number>();
  const values: { inbox_id: string; folder: string; uid: number; message_pk: number }[] = [];
  for (const [pk, m] of labels) {
    for (const folder of foldersAtMigration(m.labels)) {
      const key = `${m.inboxId}\u0000${folder}`;
      const uid = next.get(key) ?? 1;
      next.set(key, uid + 1);
      values.push({ inbox_id: m.inboxId, folder, uid, message_pk: pk });
    }
  }
  for (let i = 0; i < values.length; i += 500)
    await db
      .insertInto('folder_messages')
      .values(values.slice(i, i + 500))
      .execute();
  const counters = [...next].map(([key, uidNext]) => {
    const [inboxId, folder] = key.split('\u0000') as [string, string];
    return { inbox_id: inboxId, folder, uid_next: uidNext };
  });
  for (let i = 0; i < counters.length; i += 500)
    await db
      .insertInto('folder_counters')
      .values(counters.slice(i, i + 500))
      .execute();
}

/** The folder rule of core/folders.ts `foldersOf` as it stood when this migration was written. */
function foldersAtMigration(labels: readonly string[]): string[] {
  if (labels.includes('trash')) return ['Trash'];
  if (labels.includes('spam')) return ['Spam'];
  if (labels.includes('blocked')) return [];
  return [...(labels.includes('received') ? ['INBOX'] : []), ...(labels.includes('sent') ? ['Sent'] : [])];
}
