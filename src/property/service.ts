import type { FastifyInstance } from 'fastify';
import { openDatabase, type Database } from '../platform/db/database.js';
import { migrateToLatest } from '../platform/db/migrate.js';
import { buildPropertyApp, type PropertyConfig } from './app.js';
import { createPropertyRateLimits } from './security/rate-limits.js';
import { PROPERTY_MIGRATION_TABLE, propertyMigrations } from './migrations/index.js';

export async function openPropertyDatabase(config: PropertyConfig): Promise<Database<unknown>> {
  return openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, defaultFile: 'property.db', poolSize: config.databasePoolSize });
}

export async function migrateProperty(database: Database<unknown>): Promise<string[]> {
  return migrateToLatest(database.db, propertyMigrations, PROPERTY_MIGRATION_TABLE);
}

export interface RunningPropertyService {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly database: Database<unknown>;
  close(): Promise<void>;
}

/** Opens the database, migrates it, builds the app and listens: what `main.ts` and tests run. */
export async function startPropertyService(config: PropertyConfig): Promise<RunningPropertyService> {
  const database = await openPropertyDatabase(config);
  const rateLimits = createPropertyRateLimits(config);
  try {
    await migrateProperty(database);
    const app = await buildPropertyApp({ config, database, rateLimits });
    const url = await app.listen({ host: config.host, port: config.port });
    return {
      app,
      url,
      database,
      async close() {
        await app.close();
        await rateLimits.close();
        await database.destroy();
      },
    };
  } catch (err) {
    await rateLimits.close();
    await database.destroy();
    throw err;
  }
}
