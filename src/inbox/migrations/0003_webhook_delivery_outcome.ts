import type { Kysely } from 'kysely';

// What each delivery attempt led to ('delivered', 'retrying', 'failed'), so that the delivery
// log answers "is it still trying?" without joining the job queue.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('outcome', 'varchar(16)', (c) => c.notNull().defaultTo('failed'))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').dropColumn('outcome').execute();
}
