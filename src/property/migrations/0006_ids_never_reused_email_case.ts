import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

/** Every table of the property service whose ids clients see in IRIs. */
const TABLES = ['users', 'bundesland', 'heizungstyp', 'immobilie'] as const;

/**
 * Two things a client relies on:
 *
 * 1. Ids are never reused. PostgreSQL's sequences never hand out an id twice; SQLite's plain
 *    `INTEGER PRIMARY KEY` gives the id of a deleted last row to the next one, so on SQLite each
 *    table is rebuilt with `AUTOINCREMENT` (SQLite's documented twelve-step procedure: foreign
 *    key enforcement off, new table from the stored definition plus AUTOINCREMENT, rows copied
 *    with their ids, old table dropped, new one renamed, indexes and triggers re-created, foreign
 *    keys checked).
 *    The stored definition is reused as it stands, so columns added by other migrations survive.
 * 2. E-mail addresses are unique regardless of case (`A@x.de` and `a@x.de` are one account), by a
 *    unique index on `lower(email)` in both dialects (addresses are ASCII, so both lower() agree).
 *    Accounts that already clash keep working: the oldest keeps its address, each later one gets
 *    `local+duplicate-<id>@domain`, which its owner (or an admin) can change; nothing is deleted.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'sqlite') await rebuildWithAutoincrement(db);
  await separateCaseDuplicates(db);
  await db.schema
    .createIndex('users_email_lower')
    .on('users')
    .unique()
    .expression(sql`lower(email)`)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function rebuildWithAutoincrement(db: Kysely<any>): Promise<void> {
  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await db.transaction().execute(async (trx) => {
      for (const table of TABLES) {
        const definition = (
          await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = ${table}`.execute(
            trx,
          )
        ).rows[0]?.sql;
        if (!definition) throw new Error(`table ${table} not found`);
        if (/\bautoincrement\b/i.test(definition)) continue;
        // Indexes and triggers (the collection counts of 0004) go with the old table: keep their SQL.
        const dependents = (
          await sql<{
            sql: string;
          }>`select sql from sqlite_master where type in ('index', 'trigger') and tbl_name = ${table} and sql is not null order by type`.execute(
            trx,
          )
        ).rows;
        const renamed = definition.replace(/^create table\s+("?)\w+\1/i, `create table "${table}__rebuilt"`);
        const created = renamed.replace(
          /("id"\s+integer\s+(?:not null\s+)?primary key)(?!\s+autoincrement)/i,
          '$1 autoincrement',
        );
        if (created === renamed || renamed === definition)
          throw new Error(`cannot add AUTOINCREMENT to ${table}: unexpected definition ${definition}`);
        await sql.raw(created).execute(trx);
        await sql.raw(`insert into "${table}__rebuilt" select * from "${table}"`).execute(trx);
        await sql.raw(`drop table "${table}"`).execute(trx);
        await sql.raw(`alter table "${table}__rebuilt" rename to "${table}"`).execute(trx);
        for (const dependent of dependents) await sql.raw(dependent.sql).execute(trx);
      }
      const broken = (await sql`PRAGMA foreign_key_check`.execute(trx)).rows;
      if (broken.length) throw new Error(`foreign keys broken by the rebuild: ${JSON.stringify(broken)}`);
    });
  } finally {
    await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
async function separateCaseDuplicates(db: Kysely<any>): Promise<void> {
  const rows = await db.selectFrom('users').select(['id', 'email']).orderBy('id').execute();
  const taken = new Set(rows.map((r) => String(r.email).toLowerCase()));
  const seen = new Set<string>();
  for (const row of rows) {
    const key = String(row.email).toLowerCase();
    if (!seen.has(key)) {
      seen.add(key);
      continue;
    }
    const email = String(row.email);
    const at = email.lastIndexOf('@');
    const suffix = `+duplicate-${String(row.id)}`;
    const local = email.slice(0, at).slice(0, Math.max(1, 255 - (email.length - at) - suffix.length - 8));
    let candidate = `${local}${suffix}${email.slice(at)}`;
    for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${local}${suffix}-${n}${email.slice(at)}`;
    taken.add(candidate.toLowerCase());
    seen.add(candidate.toLowerCase());
    await db.updateTable('users').set({ email: candidate }).where('id', '=', row.id).execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('users_email_lower').execute();
}
