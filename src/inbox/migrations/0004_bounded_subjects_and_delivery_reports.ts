import { sql, type Kysely } from 'kysely';

// 1. Thread subjects are indexed (threads_subject) by at most their first 255 characters: a longer
//    key can exceed PostgreSQL's B-tree row limit (about 2.7 kB), and an insert that fails on it
//    would answer 451 to the same message forever. Existing keys are cut the same way, so that the
//    subject fallback of inbound threading still finds their threads.
// 2. Delivery status notifications turned into message.bounced are not stored as messages; this
//    table remembers their Message-IDs per inbox, so that a report delivered twice (a retry after a
//    lost 250) bounces once. docs/decisions/0005-inbound-smtp.md.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await sql`update threads set normalized_subject = substr(normalized_subject, 1, 255) where length(normalized_subject) > 255`.execute(
    db,
  );
  await db.schema
    .createTable('delivery_reports')
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull().references('inboxes.inbox_id').onDelete('cascade'))
    .addColumn('message_id', 'varchar(998)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('delivery_reports_pk', ['inbox_id', 'message_id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('delivery_reports').execute();
}
