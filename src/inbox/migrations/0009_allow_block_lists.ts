import type { Kysely } from 'kysely';

// Allow and block lists (docs/decisions/0020-allow-block-lists-and-usage.md): one row per entry, at
// the organization (scope_key ''), a pod ('pod:<id>') or an inbox ('inbox:<id>'). scope_key is
// never null, so the primary key is the same unique rule in both dialects. The delivery path looks
// entries up by (organization, direction, entry) for the addresses and domains of one message,
// and asks whether a level has an allow list by the primary key's prefix: both are index seeks.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('access_list_entries')
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('scope_key', 'varchar(400)', (c) => c.notNull())
    .addColumn('pod_id', 'varchar(64)')
    .addColumn('inbox_id', 'varchar(320)')
    .addColumn('direction', 'varchar(16)', (c) => c.notNull())
    .addColumn('list_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('entry', 'varchar(320)', (c) => c.notNull())
    .addColumn('entry_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('reason', 'varchar(1000)')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('access_list_entries_pk', [
      'organization_id',
      'scope_key',
      'direction',
      'list_type',
      'entry',
    ])
    .execute();
  await db.schema
    .createIndex('access_list_entries_match')
    .on('access_list_entries')
    .columns(['organization_id', 'direction', 'entry'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('access_list_entries').execute();
}
