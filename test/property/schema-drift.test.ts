import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import type { Database } from '../../src/platform/db/database.js';
import { propertyConfigSpec } from '../../src/property/property.config.js';
import { propertyRegistry } from '../../src/property/registry.js';
import { migrateProperty, openPropertyDatabase } from '../../src/property/service.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// The resources do not generate DDL; this test keeps the hand-written migrations and the
// definitions in step: every stored field has its column, and a NOT NULL column belongs to a
// required field (else an explicit null in a request would reach the database as a 500).
describe.each(dialects)('%s: resource definitions match the migrated schema', (dialect) => {
  let database: Database<unknown>;
  let cleanup: () => Promise<void>;
  let pgUrl: string | undefined;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'drift-'));
    const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    pgUrl = pg?.url;
    const config = loadConfig(propertyConfigSpec, {
      DATA_DIR: dir,
      PROPERTY_DATABASE_URL: pg ? pg.url : `sqlite:${path.join(dir, 'p.db')}`,
    });
    database = await openPropertyDatabase(config);
    await migrateProperty(database);
    cleanup = async () => {
      await database.destroy();
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    };
  });
  afterAll(() => cleanup());

  it('has a column for every stored field, nullable exactly where the field is optional', async () => {
    const tables = await database.db.introspection.getTables();
    for (const resource of propertyRegistry.resources.filter((r) => r.persisted)) {
      // Other suites' PostgreSQL schemas live in the same database: look only in our own.
      const ownSchema = dialect === 'postgres' ? new URL(pgUrl as string).searchParams.get('schema') : undefined;
      const table = tables.find(
        (t) => t.name === resource.table && (ownSchema === undefined || t.schema === ownSchema),
      );
      expect(table, `table ${resource.table}`).toBeDefined();
      for (const field of resource.fields.filter((f) => f.stored)) {
        const column = table?.columns.find((c) => c.name === field.column);
        expect(column, `${resource.shortName}.${field.name} → ${resource.table}.${field.column}`).toBeDefined();
        if (field.kind === 'id') continue;
        expect(
          column?.isNullable,
          `${resource.shortName}.${field.name}: NOT NULL column must be a required field`,
        ).toBe(!field.required);
      }
    }
  });
});
