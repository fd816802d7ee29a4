import type { MigrationSet } from '../../platform/db/migrate.js';
import * as createTables from './0001_create_tables.js';
import * as webhookDeliveryOutcome from './0003_webhook_delivery_outcome.js';

export const inboxMigrations: MigrationSet = {
  '0001_create_tables': createTables,
  '0003_webhook_delivery_outcome': webhookDeliveryOutcome,
};

export const INBOX_MIGRATION_TABLE = 'inbox_migrations';
