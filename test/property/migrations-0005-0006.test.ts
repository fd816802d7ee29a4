import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import type { Database } from '../../src/platform/db/database.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import { PROPERTY_MIGRATION_TABLE, propertyMigrations } from '../../src/property/migrations/index.js';
import { propertyConfigSpec } from '../../src/property/property.config.js';
import { migrateProperty, openPropertyDatabase } from '../../src/property/service.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';

/**
 * An existing database (migrated up to 0004, with data) taken through 0005 and 0006: the states
 * get their rates, case-only duplicate e-mail addresses are separated without losing an account,
 * rows keep their ids, the collection counts' triggers survive the SQLite rebuild, and the id of
 * a deleted last row is not given out again.
 */
describe.each(dialects)(
  '%s: migrations 0005 (transfer tax rates) and 0006 (ids, e-mail case) on existing data',
  (dialect) => {
    let database: Database<unknown>;
    let cleanup: () => Promise<void>;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test writes raw rows
    let db: any;

    beforeAll(async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'mig-'));
      const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
      const config = loadConfig(propertyConfigSpec, {
        DATA_DIR: dir,
        PROPERTY_DATABASE_URL: pg ? pg.url : `sqlite:${path.join(dir, 'p.db')}`,
      });
      database = await openPropertyDatabase(config);
      db = database.db;
      const upTo0004 = Object.fromEntries(Object.entries(propertyMigrations).filter(([name]) => name < '0005'));
      await migrateToLatest(db, upTo0004, PROPERTY_MIGRATION_TABLE);
      const user = (email: string, hash: string) =>
        db
          .insertInto('users')
          .values({ name: email, email, role: 'user', api_key_hash: hash.padEnd(64, '0') })
          .returning('id')
          .executeTakeFirstOrThrow();
      const a = await user('Anna@Example.org', 'a');
      await user('anna@example.org', 'b');
      await user('ANNA@EXAMPLE.ORG', 'c');
      await user('bob@example.org', 'd');
      for (let i = 0; i < 3; i++)
        await db
          .insertInto('immobilie')
          .values({ verwalter_id: a.id, adresse: `Weg ${i}`, typ: 'haus', bundesland_id: 13 })
          .execute();
      const last = await db
        .selectFrom('immobilie')
        .select(sql<number>`max(id)`.as('m'))
        .executeTakeFirstOrThrow();
      await db.deleteFrom('immobilie').where('id', '=', last.m).execute();
      await migrateProperty(database);
      cleanup = async () => {
        await database.destroy();
        await pg?.drop();
        rmSync(dir, { recursive: true, force: true });
      };
    });
    afterAll(() => cleanup?.());

    it('seeds the rates in force', async () => {
      const rows = await db.selectFrom('bundesland').select(['code', 'grunderwerbsteuer_satz']).orderBy('id').execute();
      expect(
        Object.fromEntries(
          rows.map((r: { code: string; grunderwerbsteuer_satz: number }) => [r.code, Number(r.grunderwerbsteuer_satz)]),
        ),
      ).toMatchObject({ BY: 3.5, BE: 6, NW: 6.5, SN: 5.5, HB: 5.5, TH: 5 });
    });

    it('keeps the oldest address and gives the later case duplicates +duplicate-<id> addresses; nothing is deleted', async () => {
      const users = await db.selectFrom('users').select(['id', 'email']).orderBy('id').execute();
      expect(users).toHaveLength(4);
      expect(users[0].email).toBe('Anna@Example.org');
      expect(users[1].email).toBe(`anna+duplicate-${users[1].id}@example.org`);
      expect(users[2].email).toBe(`ANNA+duplicate-${users[2].id}@EXAMPLE.ORG`);
      expect(users[3].email).toBe('bob@example.org');
      await expect(
        db
          .insertInto('users')
          .values({ name: 'x', email: 'BOB@example.org', role: 'user', api_key_hash: 'e'.padEnd(64, '0') })
          .execute(),
      ).rejects.toThrow();
    });

    it('keeps rows, ids, counts and foreign keys, and never reuses the id of a deleted last row', async () => {
      const before = await db.selectFrom('immobilie').select('id').orderBy('id').execute();
      expect(before).toHaveLength(2);
      // A row deleted before the migration left no trace SQLite could keep; from now on none is reused.
      const insert = () =>
        db
          .insertInto('immobilie')
          .values({ verwalter_id: 1, adresse: 'Neu', typ: 'haus', bundesland_id: 13 })
          .returning('id')
          .executeTakeFirstOrThrow();
      const gone = await insert();
      expect(gone.id).toBeGreaterThan(before[1].id);
      await db.deleteFrom('immobilie').where('id', '=', gone.id).execute();
      const next = await insert();
      expect(next.id).toBe(gone.id + 1);
      // The count triggers survived the rebuild: 2 rows kept + 2 inserted − 1 deleted = 3 for the owner.
      const owner = await db
        .selectFrom('collection_counts')
        .select('total')
        .where('resource_table', '=', 'immobilie')
        .where('owner_id', '=', 1)
        .executeTakeFirst();
      expect(Number(owner?.total)).toBe(3);
      await expect(
        db
          .insertInto('immobilie')
          .values({ verwalter_id: 999, adresse: 'x', typ: 'haus', bundesland_id: 13 })
          .execute(),
      ).rejects.toThrow();
    });
  },
);
