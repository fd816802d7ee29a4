import type { Kysely } from 'kysely';

// Pods, API keys and agent sign-up managed through the API (docs/decisions/0018-pods-and-scoped-keys.md).
// 1. Pods get the SDK's client_id (idempotent creation) and updated_at (null until first changed:
//    read as created_at).
// 2. API keys get a scope (pod_id; inbox_id with its pod_id) and a permission set (JSON text of the
//    SDK's ApiKeyPermissions; null = every permission). A key goes with its pod or inbox.
// 3. Webhooks get the scope of the key that created them (pod_id, inbox_id): a scoped key sees only
//    the webhooks of its scope.
// 4. agent_signups: organizations an agent created for itself, limited until the human it named
//    enters the 6-digit code (stored as SHA-256, with its expiry and the attempts made).
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const ts = 'varchar(32)';
  await db.schema.alterTable('pods').addColumn('client_id', 'varchar(255)').execute();
  await db.schema.alterTable('pods').addColumn('updated_at', ts).execute();
  await db.schema
    .createIndex('pods_org_client_id')
    .unique()
    .on('pods')
    .columns(['organization_id', 'client_id'])
    .execute();
  await db.schema.createIndex('pods_org_created').on('pods').columns(['organization_id', 'created_at', 'id']).execute();

  await db.schema
    .alterTable('api_keys')
    .addColumn('pod_id', 'varchar(64)', (c) => c.references('pods.id').onDelete('cascade'))
    .execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('inbox_id', 'varchar(320)', (c) => c.references('inboxes.inbox_id').onDelete('cascade'))
    .execute();
  await db.schema.alterTable('api_keys').addColumn('permissions', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('updated_at', ts).execute();
  await db.schema
    .createIndex('api_keys_org_created')
    .on('api_keys')
    .columns(['organization_id', 'created_at', 'id'])
    .execute();

  await db.schema.alterTable('webhooks').addColumn('pod_id', 'varchar(64)').execute();
  await db.schema.alterTable('webhooks').addColumn('inbox_id', 'varchar(320)').execute();

  await db.schema
    .createTable('agent_signups')
    .addColumn('organization_id', 'varchar(64)', (c) =>
      c.primaryKey().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('human_email', 'varchar(320)', (c) => c.notNull())
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull())
    .addColumn('code_hash', 'char(64)', (c) => c.notNull())
    .addColumn('code_expires_at', ts, (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('verified_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_signups_human').on('agent_signups').column('human_email').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_signups').execute();
  await db.schema.alterTable('webhooks').dropColumn('inbox_id').execute();
  await db.schema.alterTable('webhooks').dropColumn('pod_id').execute();
  await db.schema.dropIndex('api_keys_org_created').execute();
  for (const c of ['updated_at', 'permissions', 'inbox_id', 'pod_id'])
    await db.schema.alterTable('api_keys').dropColumn(c).execute();
  await db.schema.dropIndex('pods_org_created').execute();
  await db.schema.dropIndex('pods_org_client_id').execute();
  for (const c of ['updated_at', 'client_id']) await db.schema.alterTable('pods').dropColumn(c).execute();
}
