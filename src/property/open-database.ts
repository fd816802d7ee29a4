import { prepareSqliteDirectory } from '../platform/config/data-dir.js';
import { openDatabase, type Database } from '../platform/db/database.js';
import { migrateToLatest } from '../platform/db/migrate.js';
import type { PropertyConfig } from './app.js';
import { PROPERTY_MIGRATION_TABLE, propertyMigrations } from './migrations/index.js';

/**
 * Opening and migrating the property database, apart from the service (`service.ts`) so that a
 * command that needs only the database (the CLI) does not load the HTTP app.
 */

export async function openPropertyDatabase(config: PropertyConfig): Promise<Database<unknown>> {
  prepareSqliteDirectory({ url: config.databaseUrl, dataDir: config.dataDir, urlVariable: 'PROPERTY_DATABASE_URL' });
  return openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    defaultFile: 'property.db',
    poolSize: config.databasePoolSize,
    verifyStatementCache: config.verifyStatementCache,
    preparedStatements: config.preparedStatements,
  });
}

export async function migrateProperty(database: Database<unknown>): Promise<string[]> {
  return migrateToLatest(database.db, propertyMigrations, PROPERTY_MIGRATION_TABLE);
}
