import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// Large bodies stored once per message, ahead of its delivery, as its source already is
// (docs/decisions/0053-large-bodies-stored-once.md): a text or HTML body of CHUNK_BYTES or more
// is a blob that every copy names (`messages.text_blob`, `messages.html_blob`, the body column
// NULL) instead of each copy holding it in its row. Rows stored before keep their bodies in
// their columns. Self-contained, as 0019 is.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres' || db.isTransaction) await create(db);
  else await db.transaction().execute(create);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function create(db: Kysely<any>): Promise<void> {
  for (const column of ['text_blob', 'html_blob']) {
    await db.schema
      .alterTable('messages')
      .addColumn(column, 'bigint', (c) => c.references('blobs.id'))
      .execute();
    // For the blob sweep's "does any copy still name it" (few rows have one).
    await db.schema
      .createIndex(`messages_${column}`)
      .on('messages')
      .column(column)
      .where(column, 'is not', null)
      .execute();
  }
}
