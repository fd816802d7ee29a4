import type { Kysely } from 'kysely';

// inboxes.update / create with `status: active | paused` (AgentMail's InboxStatus; issue 28,
// decision 0043): NULL is active, so existing rows need no rewrite, on either dialect.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('inboxes').addColumn('status', 'varchar(16)').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('inboxes').dropColumn('status').execute();
}
