import type { MigrationSet } from '../../platform/db/migrate.js';
import * as createTables from './0001_create_tables.js';

export const inboxMigrations: MigrationSet = {
  '0001_create_tables': createTables,
};

export const INBOX_MIGRATION_TABLE = 'inbox_migrations';
