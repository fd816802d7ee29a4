import type { Kysely } from 'kysely';

// 1. usage_counts: what metrics.queryEvents and queryUsage answer from (src/inbox/usage/). One row
//    per (organization, pod, inbox, metric, second, shard) holding a sum; a unit of work adds to
//    its rows with an upsert on one shard it picks at random, so concurrent sends of one inbox in
//    one second rarely wait for the same row (no second send_counters), and every row of a unit
//    is locked in key order (no deadlock between two units). Pod-level facts use inbox_id '',
//    organization-level ones pod_id ''.
// 2. The custom headers sent with every delivery of a webhook (JSON object; values never returned
//    or logged). Webhooks limited to a pod or an inbox (inboxes.webhooks, pods.webhooks) use the
//    scope columns pod_id and inbox_id of migration 0005.
// 3. inboxes.events.list pages an inbox's stored events by event_id (time-ordered).
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('usage_counts')
    .addColumn('organization_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('pod_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('inbox_id', 'varchar(320)', (c) => c.notNull())
    .addColumn('metric', 'varchar(64)', (c) => c.notNull())
    .addColumn('bucket', 'bigint', (c) => c.notNull())
    .addColumn('shard', 'integer', (c) => c.notNull())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_counts_pk', ['organization_id', 'pod_id', 'inbox_id', 'metric', 'bucket', 'shard'])
    .execute();
  await db.schema
    .createIndex('usage_counts_org_metric')
    .on('usage_counts')
    .columns(['organization_id', 'metric', 'bucket'])
    .execute();

  await db.schema.alterTable('webhooks').addColumn('headers', 'text').execute();

  await db.schema.createIndex('events_inbox_event').on('events').columns(['inbox_id', 'event_id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('events_inbox_event').execute();
  await db.schema.alterTable('webhooks').dropColumn('headers').execute();
  await db.schema.dropTable('usage_counts').execute();
}
