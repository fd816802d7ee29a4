import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// Large bytes stored once per message, ahead of its delivery
// (docs/decisions/0027-large-bytes-stored-once-ahead-of-the-delivery.md): `blobs` and their pieces
// in `blob_chunks` replace `message_chunks`, whose pieces belonged to one copy each. Every copy
// names the blob (`messages.source_blob`, `attachments.content_blob`); `state` is 0 while no copy
// has claimed it yet, 1 once one has, -1 while it is being deleted. The pieces `message_chunks`
// held move into one blob per (copy, part), already claimed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  // PostgreSQL runs a migration in a transaction; Kysely runs SQLite's outside one, and this one
  // moves data: all of it or none.
  if (dialectOf(db) === 'postgres' || db.isTransaction) await move(db);
  else await db.transaction().execute(move);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function move(db: Kysely<any>): Promise<void> {
  const postgres = dialectOf(db) === 'postgres';
  const serial = postgres ? 'bigserial' : 'integer';
  const blob = postgres ? 'bytea' : 'blob';
  // Ids are never used again (AUTOINCREMENT on SQLite): a reader that found a blob's id just
  // before the blob was swept must not get another message's bytes under it.
  await db.schema
    .createTable('blobs')
    .addColumn('id', serial, (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('state', 'integer', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blobs_state_created').on('blobs').columns(['state', 'created_at']).execute();
  await db.schema
    .createTable('blob_chunks')
    .addColumn('blob_id', 'bigint', (c) => c.notNull().references('blobs.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('bytes', blob, (c) => c.notNull())
    .addPrimaryKeyConstraint('blob_chunks_pk', ['blob_id', 'seq'])
    .execute();
  await db.schema
    .alterTable('messages')
    .addColumn('source_blob', 'bigint', (c) => c.references('blobs.id'))
    .execute();
  await db.schema
    .alterTable('attachments')
    .addColumn('content_blob', 'bigint', (c) => c.references('blobs.id'))
    .execute();
  // For the sweep's "does any copy still name it" (few rows have one).
  await db.schema
    .createIndex('messages_source_blob')
    .on('messages')
    .column('source_blob')
    .where('source_blob', 'is not', null)
    .execute();
  await db.schema
    .createIndex('attachments_content_blob')
    .on('attachments')
    .column('content_blob')
    .where('content_blob', 'is not', null)
    .execute();

  const now = new Date().toISOString();
  const parts = await db.selectFrom('message_chunks').select(['message_pk', 'part']).distinct().execute();
  for (const { message_pk: messagePk, part } of parts) {
    const { size } = await db
      .selectFrom('message_chunks')
      .select(sql<number | string>`coalesce(sum(length(bytes)), 0)`.as('size'))
      .where('message_pk', '=', messagePk)
      .where('part', '=', part)
      .executeTakeFirstOrThrow();
    const { id } = await db
      .insertInto('blobs')
      .values({ state: 1, size: Number(size), created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    await sql`insert into blob_chunks (blob_id, seq, bytes) select ${id}, seq, bytes from message_chunks where message_pk = ${messagePk} and part = ${part}`.execute(
      db,
    );
    if (part === 'source')
      await db.updateTable('messages').set({ source_blob: id }).where('id', '=', messagePk).execute();
    else
      await db
        .updateTable('attachments')
        .set({ content_blob: id })
        .where('message_pk', '=', messagePk)
        .where('attachment_id', '=', part)
        .execute();
  }
  await db.schema.dropTable('message_chunks').execute();
}
