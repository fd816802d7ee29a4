import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { sql } from 'kysely';
import { migrateProperty, openPropertyDatabase } from '../dist/src/property/service.js';
import { prng } from './lib/prng.mjs';

/**
 * A fresh benchmark database: the real migrations, one `user` account with an API key, and
 * `count` varied properties owned by it. Deterministic (seeded PRNG), so runs are comparable.
 */

const STREETS = [
  'Lindenweg',
  'Hauptstraße',
  'Bahnhofstraße',
  'Am Markt',
  'Schillerstraße',
  'Gartenstraße',
  'Goethestraße',
  'Kirchweg',
  'Müllerstraße',
  'Rosenallee',
  'Bergstraße',
  'Uferpromenade',
];
const CITIES = [
  '04109 Leipzig',
  '01067 Dresden',
  '10115 Berlin',
  '80331 München',
  '20095 Hamburg',
  '50667 Köln',
  '60311 Frankfurt am Main',
  '70173 Stuttgart',
  '28195 Bremen',
  '99084 Erfurt',
];
const TYPES = ['wohnung', 'haus', 'grundstueck', 'gewerbe', 'buero'];

/** A fixed creation time, so that runs are comparable (the engine would set the current second). */
const SEEDED_AT = '2026-11-01T12:00:00.000Z';

export function immobilie(random, verwalterId) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const typ = pick(TYPES);
  const land = typ === 'grundstueck';
  const wohnflaeche = land ? null : Math.round((30 + random() * 220) * 10) / 10;
  return {
    verwalter_id: verwalterId,
    adresse: `${pick(STREETS)} ${1 + Math.floor(random() * 120)}, ${pick(CITIES)}`,
    wohnflaeche,
    nutzflaeche: random() < 0.4 ? null : Math.round(random() * 600) / 10,
    zimmer: land ? null : 1 + Math.floor(random() * 8),
    typ,
    kaufpreis: Math.round((land ? 40_000 : (wohnflaeche ?? 100) * 3_500) * (0.6 + random())),
    bundesland_id: 1 + Math.floor(random() * 16),
    heizungstyp_id: land || random() < 0.1 ? null : 1 + Math.floor(random() * 8),
    created_at: SEEDED_AT,
    updated_at: SEEDED_AT,
  };
}

/** Creates the database at `url` from scratch and returns the account's API key and id. */
export async function seed({ url, sqliteFile, count }) {
  if (sqliteFile) for (const suffix of ['', '-wal', '-shm']) rmSync(sqliteFile + suffix, { force: true });
  const database = await openPropertyDatabase({ databaseUrl: url, dataDir: '.', databasePoolSize: 2 });
  try {
    const { db } = database;
    if (database.dialect === 'postgres') {
      const schema = new URL(url).searchParams.get('schema');
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
      await sql`create schema ${sql.id(schema)}`.execute(db);
    }
    await migrateProperty(database);
    const account = async (name, email, role) => {
      const key = `prop_${randomBytes(32).toString('base64url')}`;
      const hash = createHash('sha256').update(key, 'utf8').digest('hex');
      const row = await db
        .insertInto('users')
        .values({ name, email, role, api_key_hash: hash })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { key, id: Number(row.id) };
    };
    const user = await account('Bench Verwalter', 'bench@example.org', 'user');
    const admin = await account('Bench Admin', 'bench-admin@example.org', 'admin');
    const apiKey = user.key;
    const random = prng(20261121);
    // Chunks of 1,000 rows per statement, 50 statements per transaction: a million rows without
    // holding them all in memory. On SQLite the count triggers run for every row, as for any other
    // write. On PostgreSQL a row-level trigger that updates the same counter row 50,000 times in one
    // transaction is quadratic (every update walks the row's version chain, which no one may prune
    // before the commit), so the bulk load runs with the trigger disabled and sets the counts the
    // trigger would have produced from the table afterwards (the seed of migration 0004).
    const bulk = database.dialect === 'postgres';
    if (bulk) await sql`alter table immobilie disable trigger immobilie_collection_counts`.execute(db);
    const CHUNK = 1_000;
    for (let done = 0; done < count;) {
      await db.transaction().execute(async (trx) => {
        for (let s = 0; s < 50 && done < count; s++) {
          const n = Math.min(CHUNK, count - done);
          await trx
            .insertInto('immobilie')
            .values(Array.from({ length: n }, () => immobilie(random, user.id)))
            .execute();
          done += n;
        }
      });
    }
    if (bulk) {
      await sql`delete from collection_counts where resource_table = 'immobilie'`.execute(db);
      await sql`insert into collection_counts (resource_table, owner_id, total)
        select 'immobilie', verwalter_id, count(*) from immobilie group by verwalter_id
        union all select 'immobilie', 0, count(*) from immobilie`.execute(db);
      await sql`alter table immobilie enable trigger immobilie_collection_counts`.execute(db);
    }
    // Planner statistics and the visibility map, as a settled production table would have them.
    if (database.dialect === 'postgres') await sql`vacuum analyze`.execute(db);
    else await sql`analyze`.execute(db);
    return { apiKey, userId: user.id, adminKey: admin.key };
  } finally {
    await database.destroy();
  }
}

/** Removes what `seed` created on PostgreSQL (the SQLite file goes with its temporary folder). */
export async function dropSchema(url) {
  const database = await openPropertyDatabase({ databaseUrl: url, dataDir: '.', databasePoolSize: 1 });
  try {
    await sql`drop schema if exists ${sql.id(new URL(url).searchParams.get('schema'))} cascade`.execute(database.db);
  } finally {
    await database.destroy();
  }
}
