import type { Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// Drafts (docs/decisions/0016-drafts-and-scheduled-sends.md): unsent messages of an inbox, their
// labels (one row each, for label filters) and their attachments' bytes until the draft is sent.
// A scheduled draft names the job of the durable queue that sends it (send_job_id); `revision`
// rises with every change, so that a send removes exactly the draft it composed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = dialectOf(db) === 'postgres';
  const serial = postgres ? 'bigserial' : 'integer';
  const blob = postgres ? 'bytea' : 'blob';
  const ts = 'varchar(32)';

  await db.schema
    .createTable('drafts')
    .addColumn('id', serial, (c) => c.primaryKey())
    .addColumn('draft_id', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('pod_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull().references('inboxes.inbox_id').onDelete('cascade'))
    .addColumn('client_id', 'varchar(255)')
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('reply_to', 'text')
    .addColumn('to_addresses', 'text')
    .addColumn('cc_addresses', 'text')
    .addColumn('bcc_addresses', 'text')
    .addColumn('subject', 'text')
    .addColumn('preview', 'text')
    .addColumn('text_body', 'text')
    .addColumn('html_body', 'text')
    .addColumn('attachments', 'text')
    .addColumn('in_reply_to', 'varchar(998)')
    .addColumn('forward_of', 'varchar(998)')
    .addColumn('references_ids', 'text')
    .addColumn('send_at', ts)
    .addColumn('send_status', 'varchar(16)')
    .addColumn('send_job_id', 'bigint')
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('drafts_inbox_client_id', ['inbox_id', 'client_id'])
    .execute();
  // Lists run newest-updated first per inbox, pod and organization.
  await db.schema.createIndex('drafts_inbox_updated').on('drafts').columns(['inbox_id', 'updated_at', 'id']).execute();
  await db.schema.createIndex('drafts_pod_updated').on('drafts').columns(['pod_id', 'updated_at', 'id']).execute();
  await db.schema
    .createIndex('drafts_org_updated')
    .on('drafts')
    .columns(['organization_id', 'updated_at', 'id'])
    .execute();

  await db.schema
    .createTable('draft_labels')
    .addColumn('draft_pk', 'bigint', (c) => c.notNull().references('drafts.id').onDelete('cascade'))
    .addColumn('label', 'varchar(255)', (c) => c.notNull())
    .addPrimaryKeyConstraint('draft_labels_pk', ['draft_pk', 'label'])
    .execute();

  await db.schema
    .createTable('draft_attachments')
    .addColumn('id', serial, (c) => c.primaryKey())
    .addColumn('draft_pk', 'bigint', (c) => c.notNull().references('drafts.id').onDelete('cascade'))
    .addColumn('attachment_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('filename', 'text')
    .addColumn('content_type', 'varchar(255)')
    .addColumn('content_disposition', 'varchar(16)')
    .addColumn('content_id', 'varchar(998)')
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('content', blob, (c) => c.notNull())
    .addUniqueConstraint('draft_attachments_draft_attachment', ['draft_pk', 'attachment_id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('draft_attachments').execute();
  await db.schema.dropTable('draft_labels').execute();
  await db.schema.dropTable('drafts').execute();
}
