import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import pg from 'pg';
import { MAX_NAMED_PER_CONNECTION, namingClient, PREPARE_AFTER } from '../../src/platform/db/pg-prepared.js';
import { dialects, freshPostgresSchema, type TestDialect } from '../support/dialects.js';

interface Tables {
  t: { id: number; label: string; extra?: string | null };
}

/**
 * The statements prepared on the connection a query runs on (PostgreSQL; a pool of one connection),
 * but for this query's own, which is named too once it has run often enough.
 */
async function preparedTexts(database: Database<Tables>): Promise<string[]> {
  const { rows } = await sql<{
    statement: string;
  }>`select statement from pg_prepared_statements where statement not like ${'%pg_prepared_statements%'}`.execute(
    database.db,
  );
  return rows.map((r) => r.statement);
}

/** A fresh database with table `t` holding one row, and the instances of the service opened on it. */
function useFixture(dialect: TestDialect) {
  let dir: string;
  let pg: ReturnType<typeof freshPostgresSchema> | undefined;
  let url: string;
  const opened: Database<Tables>[] = [];

  /** An instance of the service: its own pool of one connection, so every statement meets the same one. */
  async function instance(preparedStatements = true): Promise<Database<Tables>> {
    const database = await openDatabase<Tables>({
      url,
      dataDir: dir,
      defaultFile: 'x.db',
      poolSize: 1,
      preparedStatements,
    });
    opened.push(database);
    return database;
  }

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'pg-prepared-'));
    pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    url = pg ? pg.url : `sqlite:${path.join(dir, 'prepared.db')}`;
    const setup = await instance();
    await setup.db.schema
      .createTable('t')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('label', 'text', (c) => c.notNull())
      .execute();
    await setup.db.insertInto('t').values({ id: 1, label: 'one' }).execute();
  });

  afterEach(async () => {
    for (const database of opened.splice(0)) await database.destroy();
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const readAll = (database: Database<Tables>) => database.db.selectFrom('t').selectAll().where('id', '=', 1).execute();
  // A text of its own, so that the one path's recovery does not do the other's.
  const readAllInUnit = (database: Database<Tables>) =>
    database.commits.run((trx) => trx.selectFrom('t').selectAll().where('id', '<=', 1).execute());

  return { instance, readAll, readAllInUnit };
}

describe.each(dialects)('%s: statements prepared under a name', (dialect) => {
  const { instance, readAll, readAllInUnit } = useFixture(dialect);

  it("another instance's migration adds a column under a prepared `select *`: both paths see it, none fails", async () => {
    const old = await instance();
    const migrating = await instance();
    for (let i = 0; i <= PREPARE_AFTER; i++) {
      expect(await readAll(old)).toEqual([{ id: 1, label: 'one' }]);
      expect(await readAllInUnit(old)).toEqual([{ id: 1, label: 'one' }]);
    }
    if (dialect === 'postgres') {
      // Otherwise the rest of the test would pass without anything prepared.
      const texts = await preparedTexts(old);
      expect(texts).toContain('select * from "t" where "id" = $1');
      expect(texts).toContain('select * from "t" where "id" <= $1');
    }

    await migrating.db.schema.alterTable('t').addColumn('extra', 'text').execute();
    await migrating.db.updateTable('t').set({ extra: 'new' }).where('id', '=', 1).execute();

    // Outside a transaction the statement is run again at once; inside one the unit of work is.
    expect(await readAll(old)).toEqual([{ id: 1, label: 'one', extra: 'new' }]);
    expect(await readAllInUnit(old)).toEqual([{ id: 1, label: 'one', extra: 'new' }]);
    // And from then on under the name the text was prepared again with.
    expect(await readAll(old)).toEqual([{ id: 1, label: 'one', extra: 'new' }]);
    expect(await readAllInUnit(old)).toEqual([{ id: 1, label: 'one', extra: 'new' }]);
    if (dialect === 'postgres') {
      // The stale names were given back: each text is prepared once, under its new name.
      const texts = await preparedTexts(old);
      expect(texts.filter((t) => t === 'select * from "t" where "id" = $1')).toHaveLength(1);
      expect(texts.filter((t) => t === 'select * from "t" where "id" <= $1')).toHaveLength(1);
    }
  });

  it('a statement in a transaction that is not a unit of work fails once with the error, then works', async () => {
    const old = await instance();
    const migrating = await instance();
    const inTransaction = () =>
      old.db.transaction().execute((trx) => trx.selectFrom('t').selectAll().where('id', '=', 1).execute());
    for (let i = 0; i <= PREPARE_AFTER; i++) expect(await inTransaction()).toEqual([{ id: 1, label: 'one' }]);
    await migrating.db.schema.alterTable('t').addColumn('extra', 'text').execute();
    if (dialect === 'postgres')
      await expect(inTransaction()).rejects.toThrow('cached plan must not change result type');
    expect(await inTransaction()).toEqual([{ id: 1, label: 'one', extra: null }]);
  });
});

// What only PostgreSQL prepares under a name.
describe.each(dialects.filter((d) => d === 'postgres'))('%s: which statements are named', (dialect) => {
  const { instance, readAll, readAllInUnit } = useFixture(dialect);

  it('a text run once is not named; one run again is', async () => {
    const database = await instance();
    await sql`select label from t where id = ${1}`.execute(database.db);
    expect(await preparedTexts(database)).not.toContain('select label from t where id = $1');
    for (let i = 1; i < PREPARE_AFTER; i++) await sql`select label from t where id = ${1}`.execute(database.db);
    // Named at the run that reaches PREPARE_AFTER, and prepared by it.
    expect(await preparedTexts(database)).toContain('select label from t where id = $1');
  });

  it(`a connection keeps ${MAX_NAMED_PER_CONNECTION} names, giving back the least recently used`, async () => {
    const database = await instance();
    const numbered = (i: number) => `select ${i}::int as n, label from t where id = $1`;
    const runNumbered = async (i: number) => {
      const { rows } = await sql<{
        n: number;
      }>`select ${sql.lit(i)}::int as n, label from t where id = ${1}`.execute(database.db);
      expect(rows).toEqual([{ n: i, label: 'one' }]);
    };
    // A busy text, named before any of the others and run again every 50 of them.
    for (let i = 0; i < PREPARE_AFTER; i++) expect(await readAll(database)).toEqual([{ id: 1, label: 'one' }]);
    const count = MAX_NAMED_PER_CONNECTION + 20;
    for (let round = 0; round < PREPARE_AFTER; round++)
      for (let i = 0; i < count; i++) {
        await runNumbered(i);
        if (i % 50 === 0) expect(await readAll(database)).toEqual([{ id: 1, label: 'one' }]);
      }
    const texts = await preparedTexts(database);
    // What was given back is deallocated on the server, not only forgotten by the client.
    expect(texts).toHaveLength(MAX_NAMED_PER_CONNECTION);
    expect(texts).toContain('select * from "t" where "id" = $1');
    expect(texts).toContain(numbered(count - 1));
    expect(texts).not.toContain(numbered(0));
    expect(texts).not.toContain(numbered(20));
    // A text given back is named again when it comes back, and runs.
    await runNumbered(0);
    expect(await preparedTexts(database)).toContain(numbered(0));
  });

  it("a connection that gives names back all day keeps no more than the limit in pg's own record of them", async () => {
    const Client = namingClient(pg);
    const client = new Client({ connectionString: process.env.TEST_POSTGRES_URL });
    await client.connect();
    try {
      const parsed = () =>
        Object.keys((client as unknown as { connection: { parsedStatements: object } }).connection.parsedStatements);
      for (let round = 0; round < PREPARE_AFTER; round++)
        for (let i = 0; i < 3 * MAX_NAMED_PER_CONNECTION; i++)
          expect((await client.query(`select ${i}::int as n where $1::int = 1`, [1])).rows).toEqual([{ n: i }]);
      // The last run gave one back; the next query, on an idle connection, deallocates it.
      await client.query('select 1');
      expect(parsed()).toHaveLength(MAX_NAMED_PER_CONNECTION);
      const { rows } = await client.query<{ n: string }>('select count(*) as n from pg_prepared_statements');
      expect(Number(rows[0]?.n)).toBe(MAX_NAMED_PER_CONNECTION);
    } finally {
      await client.end();
    }
  });

  it('off (DB_PREPARED_STATEMENTS=false), nothing is prepared', async () => {
    const database = await instance(false);
    for (let i = 0; i <= PREPARE_AFTER; i++) {
      expect(await readAll(database)).toEqual([{ id: 1, label: 'one' }]);
      expect(await readAllInUnit(database)).toEqual([{ id: 1, label: 'one' }]);
    }
    expect(await preparedTexts(database)).toEqual([]);
  });

  it('a named statement that fails to parse leaves the connection usable', async () => {
    const database = await instance();
    for (let i = 0; i <= PREPARE_AFTER; i++)
      await expect(sql`select nope from t where id = ${1}`.execute(database.db)).rejects.toThrow(/nope/);
    expect(await readAll(database)).toEqual([{ id: 1, label: 'one' }]);
  });
});
