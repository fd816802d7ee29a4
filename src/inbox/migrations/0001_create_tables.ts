import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';
import { createJobsTable } from '../../platform/jobs/jobs.table.js';

// Times are ISO-8601 UTC strings with milliseconds: they sort correctly as text in both dialects
// and cross the wire unchanged. Internal integer keys give keyset pagination a unique tiebreaker.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = dialectOf(db) === 'postgres';
  const serial = postgres ? 'bigserial' : 'integer';
  const blob = postgres ? 'bytea' : 'blob';
  const ts = 'varchar(32)';

  await db.schema
    .createTable('organizations')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('pods')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('key_hash', 'char(64)', (c) => c.notNull().unique())
    .addColumn('key_prefix', 'varchar(16)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('inboxes')
    .addColumn('inbox_id', 'varchar(320)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('pod_id', 'varchar(64)', (c) => c.notNull().references('pods.id').onDelete('cascade'))
    .addColumn('username', 'varchar(64)', (c) => c.notNull())
    .addColumn('domain', 'varchar(255)', (c) => c.notNull())
    .addColumn('display_name', 'varchar(255)')
    .addColumn('client_id', 'varchar(255)')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('inboxes_org_client_id', ['organization_id', 'client_id'])
    .execute();
  await db.schema
    .createIndex('inboxes_org_created')
    .on('inboxes')
    .columns(['organization_id', 'created_at', 'inbox_id'])
    .execute();

  await db.schema
    .createTable('threads')
    .addColumn('id', serial, (c) => c.primaryKey())
    .addColumn('thread_id', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull().references('inboxes.inbox_id').onDelete('cascade'))
    .addColumn('subject', 'text')
    .addColumn('normalized_subject', 'text')
    .addColumn('senders', 'text', (c) => c.notNull())
    .addColumn('recipients', 'text', (c) => c.notNull())
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('preview', 'text')
    .addColumn('last_message_id', 'varchar(998)', (c) => c.notNull())
    .addColumn('timestamp', ts, (c) => c.notNull())
    .addColumn('received_timestamp', ts)
    .addColumn('sent_timestamp', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('threads_inbox_ts').on('threads').columns(['inbox_id', 'timestamp', 'id']).execute();
  await db.schema.createIndex('threads_org_ts').on('threads').columns(['organization_id', 'timestamp', 'id']).execute();
  await db.schema.createIndex('threads_subject').on('threads').columns(['inbox_id', 'normalized_subject']).execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', serial, (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull().references('inboxes.inbox_id').onDelete('cascade'))
    .addColumn('thread_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('message_id', 'varchar(998)', (c) => c.notNull())
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('timestamp', ts, (c) => c.notNull())
    .addColumn('from_address', 'text', (c) => c.notNull())
    .addColumn('reply_to', 'text')
    .addColumn('to_addresses', 'text', (c) => c.notNull())
    .addColumn('cc_addresses', 'text')
    .addColumn('bcc_addresses', 'text')
    .addColumn('subject', 'text')
    .addColumn('preview', 'text')
    .addColumn('text_body', 'text')
    .addColumn('html_body', 'text')
    .addColumn('in_reply_to', 'varchar(998)')
    .addColumn('references_ids', 'text')
    .addColumn('headers', 'text')
    .addColumn('attachments', 'text')
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('raw', blob)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('messages_inbox_message_id', ['inbox_id', 'message_id'])
    .execute();
  await db.schema.createIndex('messages_inbox_ts').on('messages').columns(['inbox_id', 'timestamp', 'id']).execute();
  await db.schema.createIndex('messages_thread').on('messages').columns(['thread_id', 'timestamp', 'id']).execute();

  // One row per label of a message, so that label filters use an index instead of parsing JSON.
  await db.schema
    .createTable('message_labels')
    .addColumn('message_pk', 'bigint', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('label', 'varchar(255)', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_labels_pk', ['message_pk', 'label'])
    .execute();
  await db.schema.createIndex('message_labels_label').on('message_labels').columns(['label', 'message_pk']).execute();

  await db.schema
    .createTable('attachments')
    .addColumn('id', serial, (c) => c.primaryKey())
    .addColumn('message_pk', 'bigint', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('attachment_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('filename', 'text')
    .addColumn('content_type', 'varchar(255)')
    .addColumn('content_disposition', 'varchar(16)')
    .addColumn('content_id', 'varchar(998)')
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('content', blob, (c) => c.notNull())
    .addUniqueConstraint('attachments_message_attachment', ['message_pk', 'attachment_id'])
    .execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('webhook_id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret', 'varchar(128)', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .addColumn('event_types', 'text')
    .addColumn('inbox_ids', 'text')
    .addColumn('pod_ids', 'text')
    .addColumn('client_id', 'varchar(255)')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('webhooks_org_client_id', ['organization_id', 'client_id'])
    .execute();
  await db.schema
    .createIndex('webhooks_org_created')
    .on('webhooks')
    .columns(['organization_id', 'created_at', 'webhook_id'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('event_id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('event_type', 'varchar(64)', (c) => c.notNull())
    .addColumn('inbox_id', 'varchar(320)')
    .addColumn('pod_id', 'varchar(64)')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', serial, (c) => c.primaryKey())
    .addColumn('webhook_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('event_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_excerpt', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_webhook')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'id'])
    .execute();

  await db.schema
    .createTable('send_counters')
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('day', 'varchar(10)', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('send_counters_pk', ['organization_id', 'day'])
    .execute();

  // Secrets the service generates for itself on first start (the download-URL signing key).
  await db.schema
    .createTable('service_secrets')
    .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('value', 'varchar(255)', (c) => c.notNull())
    .execute();

  await createJobsTable(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'jobs',
    'service_secrets',
    'send_counters',
    'webhook_deliveries',
    'events',
    'webhooks',
    'attachments',
    'message_labels',
    'messages',
    'threads',
    'inboxes',
    'api_keys',
    'pods',
    'organizations',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
