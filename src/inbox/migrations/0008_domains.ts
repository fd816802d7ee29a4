import type { Kysely } from 'kysely';

// Custom domains of an organization (docs/decisions/0019-custom-domains.md): one row per
// organization and domain (its ASCII spelling is the domain_id), optionally limited to a pod. Its
// DKIM private key is stored encrypted (AES-256-GCM). `claimed_domain` is set only while the domain
// is VERIFIED; its unique index makes the first organization to verify a domain its only owner.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('domains')
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('domain', 'varchar(253)', (c) => c.notNull())
    .addColumn('pod_id', 'varchar(64)', (c) => c.references('pods.id').onDelete('cascade'))
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('reason', 'varchar(64)')
    .addColumn('feedback_enabled', 'integer', (c) => c.notNull())
    .addColumn('subdomains_enabled', 'integer', (c) => c.notNull())
    .addColumn('tracking_enabled', 'integer', (c) => c.notNull())
    .addColumn('dkim_selector', 'varchar(63)', (c) => c.notNull())
    .addColumn('dkim_public_key', 'text', (c) => c.notNull())
    .addColumn('dkim_private_key', 'text', (c) => c.notNull())
    .addColumn('record_checks', 'text')
    .addColumn('claimed_domain', 'varchar(253)')
    .addColumn('checked_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('domains_pk', ['organization_id', 'domain'])
    .execute();
  await db.schema.createIndex('domains_claimed').unique().on('domains').column('claimed_domain').execute();
  await db.schema
    .createIndex('domains_list')
    .on('domains')
    .columns(['organization_id', 'created_at', 'domain'])
    .execute();
  await db.schema.createIndex('domains_by_name').on('domains').column('domain').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('domains').execute();
}
