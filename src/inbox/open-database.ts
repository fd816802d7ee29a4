import { prepareSqliteDirectory } from '../platform/config/data-dir.js';
import { openDatabase, type Database } from '../platform/db/database.js';
import { migrateToLatest } from '../platform/db/migrate.js';
import type { InboxConfig } from './inbox.config.js';
import type { InboxDatabase } from './schema/database.js';
import { INBOX_MIGRATION_TABLE, inboxMigrations } from './migrations/index.js';

/**
 * Opening and migrating the inbox database, apart from the services (`service.ts`) so that a
 * command that needs only the database (the CLI) does not load the HTTP, SMTP and worker code.
 */

export async function openInboxDatabase(config: InboxConfig): Promise<Database<InboxDatabase>> {
  prepareSqliteDirectory({ url: config.databaseUrl, dataDir: config.dataDir, urlVariable: 'INBOX_DATABASE_URL' });
  // FULL: a message the API or SMTP acknowledged survives power loss, not only a process crash.
  return openDatabase<InboxDatabase>({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    defaultFile: 'inbox.db',
    poolSize: config.databasePoolSize,
    sqliteSynchronous: 'FULL',
    verifyStatementCache: config.verifyStatementCache,
    preparedStatements: config.preparedStatements,
  });
}

export async function migrateInbox(database: Database<InboxDatabase>): Promise<string[]> {
  return migrateToLatest(database.db, inboxMigrations, INBOX_MIGRATION_TABLE);
}
