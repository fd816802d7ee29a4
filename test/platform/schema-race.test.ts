import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import { openDatabase } from '../../src/platform/db/database.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import { createJobsTable } from '../../src/platform/jobs/jobs.table.js';
import { inboxConfigSpec } from '../../src/inbox/inbox.config.js';
import { migrateInbox, openInboxDatabase } from '../../src/inbox/service.js';
import { migrateProperty, openPropertyDatabase } from '../../src/property/service.js';
import { propertyConfigSpec } from '../../src/property/property.config.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';

/** The bar: 0 failures in 20 trials (3 in 21 failed before the lock). */
const TRIALS = 20;

describe.each(dialects)('%s: several instances starting at once on an empty database', (dialect) => {
  it(`all open it (creating the schema), ${TRIALS} trials of 3 at once; the first few also migrate it`, async () => {
    const failures: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      // Kysely's migrator reads the whole catalog several times (about a second on the shared test database).
      const migrate = trial < 3;
      const dir = mkdtempSync(path.join(tmpdir(), 'schema-race-'));
      const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
      const url = pg ? pg.url : `sqlite:${path.join(dir, 'race.db')}`;
      const starts = [0, 1, 2].map(async () => {
        const database = await openDatabase({ url, dataDir: dir, defaultFile: 'x.db', poolSize: 2 });
        try {
          if (migrate) await migrateToLatest(database.db, { '0001_jobs': { up: createJobsTable } }, 'race_migrations');
          await database.ping();
        } finally {
          await database.destroy();
        }
      });
      for (const result of await Promise.allSettled(starts))
        if (result.status === 'rejected') failures.push(`trial ${trial}: ${String((result.reason as Error).message)}`);
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('3 inbox and 3 property instances start at once on one empty schema', async () => {
    const failures: string[] = [];
    for (let trial = 0; trial < 1; trial++) {
      const dir = mkdtempSync(path.join(tmpdir(), 'schema-race-'));
      const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
      const url = pg ? pg.url : `sqlite:${path.join(dir, 'race.db')}`;
      const inbox = loadConfig(inboxConfigSpec, {
        DATA_DIR: dir,
        INBOX_DATABASE_URL: url,
        INBOX_DATABASE_POOL_SIZE: '2',
      });
      const property = loadConfig(propertyConfigSpec, {
        DATA_DIR: dir,
        PROPERTY_DATABASE_URL: url.replace('race.db', 'race-property.db'),
        PROPERTY_DATABASE_POOL_SIZE: '2',
      });
      const starts = [
        ...[0, 1, 2].map(async () => {
          const database = await openInboxDatabase(inbox);
          try {
            await migrateInbox(database);
          } finally {
            await database.destroy();
          }
        }),
        ...[0, 1, 2].map(async () => {
          const database = await openPropertyDatabase(property);
          try {
            await migrateProperty(database);
          } finally {
            await database.destroy();
          }
        }),
      ];
      for (const result of await Promise.allSettled(starts))
        if (result.status === 'rejected') failures.push(`trial ${trial}: ${String((result.reason as Error).message)}`);
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(failures).toEqual([]);
  }, 60_000);
});
