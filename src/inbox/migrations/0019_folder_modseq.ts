import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// Incremental resyncs of mail clients' folders (IMAP, docs/decisions/0052-imap-incremental-sync.md):
// a change sequence per folder. `folder_counters.modseq` grows by one with every write that takes
// UIDs in a folder or changes the labels of a message in it (the same upsert, the same row lock as
// the UIDs, so on PostgreSQL modseqs of one folder become visible in the order they were taken);
// `folder_messages.modseq` is the modseq of the last such write of its row. A session asks only for
// the rows above the modseq it last read. Rows stored before start at 0, which every session's
// first read (SELECT, the whole folder) covers. Self-contained, as 0016 is.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres' || db.isTransaction) await create(db);
  else await db.transaction().execute(create);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function create(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('folder_counters')
    .addColumn('modseq', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('folder_messages')
    .addColumn('modseq', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('folder_messages_modseq')
    .on('folder_messages')
    .columns(['inbox_id', 'folder', 'modseq'])
    .execute();
}
