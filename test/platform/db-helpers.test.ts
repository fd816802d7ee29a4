import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CompiledQuery, Kysely, SqliteDialect, sql, type Generated } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, walSync, type Database } from '../../src/platform/db/database.js';
import { commitSyncOf } from '../../src/platform/db/driver.js';
import { incrementCounter } from '../../src/platform/db/dialect.js';
import { insertCompiledOnce, runCompiledOnce, runSqlOnce } from '../../src/platform/db/compiled-once.js';
import { afterUnits, createGroupCommit, MAX_ATTEMPTS } from '../../src/platform/db/group-commit.js';
import { afterKey } from '../../src/platform/db/keyset.js';
import { systemIds, timeOrderedUuid } from '../../src/platform/ids.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';

interface TestDb {
  counters: { name: string; day: string; n: number };
  rows: { id: Generated<number>; ts: string; note: string };
}

describe.each(dialects)('%s: database helpers', (dialect) => {
  let database: Database<TestDb>;
  let db: Kysely<TestDb>;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dbh-'));
    const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    database = await openDatabase<TestDb>({
      url: pg ? pg.url : `sqlite:${path.join(dir, 't.db')}`,
      dataDir: dir,
      defaultFile: 'x.db',
      poolSize: 4,
      sqliteSynchronous: 'FULL',
    });
    db = database.db;
    await db.schema
      .createTable('counters')
      .addColumn('name', 'varchar(32)', (c) => c.notNull())
      .addColumn('day', 'varchar(10)', (c) => c.notNull())
      .addColumn('n', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('counters_pk', ['name', 'day'])
      .execute();
    await db.schema
      .createTable('rows')
      .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) => c.primaryKey())
      .addColumn('ts', 'varchar(32)', (c) => c.notNull())
      .addColumn('note', 'varchar(64)', (c) => c.notNull())
      .execute();
    cleanup = async () => {
      await database.destroy();
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    };
  });
  afterAll(() => cleanup());
  beforeEach(async () => {
    await db.deleteFrom('counters').execute();
    await db.deleteFrom('rows').execute();
  });

  it('incrementCounter creates the row, then counts atomically under concurrency', async () => {
    expect(await incrementCounter(db, 'counters', { name: 'a', day: '2030-01-01' }, 'n')).toBe(1);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        db.transaction().execute((trx) => incrementCounter(trx, 'counters', { name: 'a', day: '2030-01-01' }, 'n')),
      ),
    );
    expect([...results].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    expect(await incrementCounter(db, 'counters', { name: 'a', day: '2030-01-02' }, 'n', 5)).toBe(5);
  });

  it('runCompiledOnce runs a shape compiled once with new parameters, and refuses parameters that are not the compiled ones', async () => {
    await insertCompiledOnce(
      db,
      'rows.insert',
      [
        { ts: 't1', note: 'one' },
        { ts: 't2', note: 'two' },
      ],
      () =>
        db.insertInto('rows').values([
          { ts: 't1', note: 'one' },
          { ts: 't2', note: 'two' },
        ]),
    );
    const find = (ts: string, note: string) =>
      runCompiledOnce(db, 'rows.find', [ts, note], () =>
        db.selectFrom('rows').select(['ts', 'note']).where('ts', '=', ts).where('note', '=', note),
      );
    expect(await find('t1', 'one')).toEqual([{ ts: 't1', note: 'one' }]);
    // Same key, other values: the cached statement, not the first values.
    expect(await find('t2', 'two')).toEqual([{ ts: 't2', note: 'two' }]);
    expect(await find('t2', 'one')).toEqual([]);
    // A hand-written list in another order than Kysely compiles fails on the shape's first run.
    await expect(
      runCompiledOnce(db, 'rows.swapped', ['one', 't1'], () =>
        db.selectFrom('rows').select('ts').where('ts', '=', 't1').where('note', '=', 'one'),
      ),
    ).rejects.toThrow(/rows\.swapped: parameter 1 is given in another place than Kysely compiled it/);
    await expect(
      runCompiledOnce(db, 'rows.short', ['t1'], () =>
        db.selectFrom('rows').select('ts').where('ts', '=', 't1').where('note', '=', 'one'),
      ),
    ).rejects.toThrow(/rows\.short: 2 parameters compiled, 1 given/);
    // Nothing of a refused shape is cached: the right list then works under the same key.
    expect(
      await runCompiledOnce(db, 'rows.swapped', ['t1', 'one'], () =>
        db.selectFrom('rows').select('ts').where('ts', '=', 't1').where('note', '=', 'one'),
      ),
    ).toEqual([{ ts: 't1' }]);
  });

  it('runSqlOnce runs a sql template compiled once with new values, and refuses values not in the compiled order', async () => {
    await db
      .insertInto('rows')
      .values([
        { ts: 's1', note: 'uno' },
        { ts: 's2', note: 'dos' },
      ])
      .execute();
    const find = (ts: string, note: string) =>
      runSqlOnce<{ ts: string }>(
        db,
        'rows.sql-find',
        [ts, note],
        () => sql<{ ts: string }>`select ts from rows where ts = ${ts} and note = ${note}`,
      );
    expect(await find('s1', 'uno')).toEqual([{ ts: 's1' }]);
    expect(await find('s2', 'dos')).toEqual([{ ts: 's2' }]);
    expect(await find('s2', 'uno')).toEqual([]);
    await expect(
      runSqlOnce(
        db,
        'rows.sql-swapped',
        ['uno', 's1'],
        () => sql`select ts from rows where ts = ${'s1'} and note = ${'uno'}`,
      ),
    ).rejects.toThrow(/rows\.sql-swapped: parameter 1 is given in another place than Kysely compiled it/);
    await expect(
      runSqlOnce(db, 'rows.sql-short', ['s1'], () => sql`select ts from rows where ts = ${'s1'} and note = ${'uno'}`),
    ).rejects.toThrow(/rows\.sql-short: 2 parameters compiled, 1 given/);
  });

  it("runCompiledOnce inside a unit of the commit batcher: its writes are the unit's, seen by its own reads, undone with it when it fails", async () => {
    const insert = (trx: Kysely<TestDb>, ts: string, note: string) =>
      runCompiledOnce(trx, 'rows.insert-in-unit', [ts, note], () => trx.insertInto('rows').values({ ts, note }));
    const notes = (trx: Kysely<TestDb>, ts: string) =>
      runCompiledOnce<{ note: string }>(trx, 'rows.notes-in-unit', [ts], () =>
        trx.selectFrom('rows').select('note').where('ts', '=', ts),
      );
    const units = await Promise.allSettled([
      database.commits.run(async (trx) => {
        await insert(trx, 'u1', 'kept');
        return notes(trx, 'u1');
      }),
      database.commits.run(async (trx) => {
        await insert(trx, 'u2', 'undone');
        expect(await notes(trx, 'u2')).toEqual([{ note: 'undone' }]);
        throw new Error('the unit fails after its write');
      }),
      database.commits.run(async (trx) => {
        await insert(trx, 'u3', 'kept too');
        return notes(trx, 'u3');
      }),
    ]);
    expect(units.map((u) => u.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((units[0] as PromiseFulfilledResult<unknown>).value).toEqual([{ note: 'kept' }]);
    expect((units[1] as PromiseRejectedResult).reason).toHaveProperty('message', 'the unit fails after its write');
    expect((await db.selectFrom('rows').select('ts').orderBy('ts').execute()).map((r) => r.ts)).toEqual(['u1', 'u3']);
  });

  it('runCompiledOnce on a database that verifies its statement cache: a key that misses what shapes the SQL fails on the run that differs', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dbv-'));
    const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    const open = (verifyStatementCache: boolean) =>
      openDatabase<TestDb>({
        url: pg ? pg.url : `sqlite:${path.join(dir, 't.db')}`,
        dataDir: dir,
        defaultFile: 'x.db',
        poolSize: 2,
        verifyStatementCache,
      });
    const checked = await open(true);
    const unchecked = await open(false);
    try {
      await checked.db.schema
        .createTable('rows')
        .ifNotExists()
        .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) => c.primaryKey())
        .addColumn('ts', 'varchar(32)', (c) => c.notNull())
        .addColumn('note', 'varchar(64)', (c) => c.notNull())
        .execute();
      await checked.db
        .insertInto('rows')
        .values([
          { ts: 'a', note: 'x' },
          { ts: 'b', note: 'y' },
        ])
        .execute();
      // The key names the statement but not the length of its IN list, which shapes the SQL.
      const byTs = (db: Kysely<TestDb>, list: string[]) =>
        runCompiledOnce(db, 'rows.byTs', list, () =>
          db.selectFrom('rows').select('note').where('ts', 'in', list).orderBy('note'),
        );
      expect(await byTs(checked.db, ['a'])).toEqual([{ note: 'x' }]);
      await expect(byTs(checked.db, ['a', 'b'])).rejects.toThrow(
        /rows\.byTs: the SQL compiled now differs from the SQL cached under this key/,
      );
      // Inside a transaction too (it shares the database's adapter).
      await expect(
        checked.db.transaction().execute((trx) => byTs(trx as unknown as Kysely<TestDb>, ['a', 'b'])),
      ).rejects.toThrow(/differs from the SQL cached/);
      // The same values in another place than compiled fail on every run, not only on the first.
      const byNote = (db: Kysely<TestDb>, given: string[]) =>
        runCompiledOnce(db, 'rows.byNote', given, () =>
          db.selectFrom('rows').select('ts').where('ts', '=', 'a').where('note', '=', 'x'),
        );
      expect(await byNote(checked.db, ['a', 'x'])).toEqual([{ ts: 'a' }]);
      await expect(byNote(checked.db, ['x', 'a'])).rejects.toThrow(
        /rows\.byNote: parameter 1 is given in another place/,
      );
      // Without verification the cached SQL runs as it is: only the database notices, and only
      // because the parameter count happens to differ.
      expect(await byTs(unchecked.db, ['a'])).toEqual([{ note: 'x' }]);
      const error = await byTs(unchecked.db, ['a', 'b']).then(
        () => undefined,
        (err: Error) => err,
      );
      expect(error?.message).toMatch(/parameter/i);
      expect(error?.message).not.toMatch(/differs from the SQL cached/);
    } finally {
      await checked.destroy();
      await unchecked.destroy();
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('group commit: every unit settles after the commit, and a failing unit undoes only itself', async () => {
    const commits = createGroupCommit(db);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) =>
        commits.run(async (trx) => {
          await trx
            .insertInto('rows')
            .values({ ts: `t${i}`, note: 'kept' })
            .execute();
          if (i % 3 === 0) {
            await trx
              .insertInto('rows')
              .values({ ts: `t${i}`, note: 'undone' })
              .execute();
            throw new Error(`unit ${i} fails`);
          }
          return i;
        }),
      ),
    );
    expect(
      outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason.message),
    ).toEqual(Array.from({ length: 10 }, (_, k) => `unit ${k * 3} fails`));
    expect(
      outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<number>).value),
    ).toEqual(Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3 !== 0));
    const rows = await db.selectFrom('rows').select(['ts', 'note']).execute();
    expect(rows.map((r) => r.note)).toEqual(Array.from({ length: 20 }, () => 'kept'));
    expect(rows.map((r) => r.ts).sort()).toEqual(
      Array.from({ length: 30 }, (_, i) => i)
        .filter((i) => i % 3 !== 0)
        .map((i) => `t${i}`)
        .sort(),
    );
  });

  it('FULL on a SQLite file: the connection commits at NORMAL and the WAL is synced after each commit, off the event loop; every path waits for it', async () => {
    if (dialect !== 'sqlite') return expect(commitSyncOf(db)).toBeUndefined();
    // 1 = NORMAL: COMMIT writes the WAL without its fsync; the commit sync does it afterwards.
    expect((await sql<{ synchronous: number }>`pragma synchronous`.execute(db)).rows[0]?.synchronous).toBe(1);
    expect(commitSyncOf(db)).toBeDefined();
    // The paths a write can take each settle, and the rows are there afterwards: a batch of the
    // group commit, a write outside a transaction through Kysely, one compiled once (the direct
    // runner), and a transaction of Kysely's own.
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        database.commits.run((trx) =>
          trx
            .insertInto('rows')
            .values({ ts: `g${i}`, note: 'batch' })
            .execute(),
        ),
      ),
    );
    await db.insertInto('rows').values({ ts: 'a', note: 'autocommit' }).execute();
    await runCompiledOnce(db, 'rows.full-direct', ['d', 'direct'], () =>
      db.insertInto('rows').values({ ts: 'd', note: 'direct' }),
    );
    await db.transaction().execute((trx) => trx.insertInto('rows').values({ ts: 't', note: 'transaction' }).execute());
    expect(
      await db
        .selectFrom('rows')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirst(),
    ).toEqual({
      n: 13,
    });
    // An in-memory database and NORMAL have no commit sync.
    const memory = await openDatabase<TestDb>({
      url: 'sqlite::memory:',
      dataDir: tmpdir(),
      defaultFile: 'x.db',
      sqliteSynchronous: 'FULL',
    });
    const dir = mkdtempSync(path.join(tmpdir(), 'dbh-normal-'));
    const normal = await openDatabase<TestDb>({
      url: `sqlite:${path.join(dir, 'n.db')}`,
      dataDir: dir,
      defaultFile: 'x.db',
    });
    try {
      expect(commitSyncOf(memory.db)).toBeUndefined();
      expect(commitSyncOf(normal.db)).toBeUndefined();
    } finally {
      await memory.destroy();
      await normal.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('walSync: a sync asked for while one runs waits for the next one, which all such callers share', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dbh-wal-'));
    const other = await openDatabase<TestDb>({
      url: `sqlite:${path.join(dir, 'w.db')}`,
      dataDir: dir,
      defaultFile: 'x.db',
    });
    await sql`create table t (x integer)`.execute(other.db);
    const syncs = walSync(path.join(dir, 'w.db'));
    try {
      const first = syncs.sync();
      const second = syncs.sync();
      const third = syncs.sync();
      expect(second).toBe(third);
      expect(second).not.toBe(first);
      const order: string[] = [];
      await Promise.all([first.then(() => order.push('first')), second.then(() => order.push('second'))]);
      expect(order).toEqual(['first', 'second']);
      // Nothing running: a new call starts a sync of its own.
      const fourth = syncs.sync();
      expect(fourth).not.toBe(second);
      await fourth;
    } finally {
      await syncs.close();
      await other.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
    // A database file whose WAL does not exist: the sync fails rather than claim durability.
    const missing = walSync(path.join(dir, 'gone.db'));
    await expect(missing.sync()).rejects.toMatchObject({ code: 'ENOENT' });
    await missing.close();
  });

  it('group commit (SQLite): units arriving on the next turns of the event loop join the batch, up to maxWaitMs', async () => {
    if (dialect === 'postgres') return;
    const Sqlite = (await import('better-sqlite3')).default;
    const dir = mkdtempSync(path.join(tmpdir(), 'dbh-gc-'));
    const sqlite = new Sqlite(path.join(dir, 'gc.db'));
    const committed: number[] = [];
    let units = 0;
    const logged = new Kysely<TestDb>({
      dialect: new SqliteDialect({ database: sqlite }),
      log: (event) => void (event.query.sql === 'commit' && committed.push(units)),
    });
    try {
      await logged.schema
        .createTable('rows')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('ts', 'varchar(32)', (c) => c.notNull())
        .addColumn('note', 'varchar(64)', (c) => c.notNull())
        .execute();
      const commits = createGroupCommit(logged, { maxWaitMs: 50 });
      const unit = (i: number) =>
        commits.run(
          async (trx) =>
            void (
              await trx
                .insertInto('rows')
                .values({ ts: `t${i}`, note: 'kept' })
                .execute(),
              units++
            ),
        );
      // Arrivals in the turns of the event loop after the first unit's, as sessions finishing their
      // DATA would arrive: one batch, one commit.
      const arrivals = (from: number, to: number, done: Promise<void>[]) => {
        if (from < to) setImmediate(() => (done.push(unit(from)), arrivals(from + 1, to, done)));
      };
      const done: Promise<void>[] = [];
      arrivals(1, 5, done);
      done.push(unit(0));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await Promise.all(done);
      expect(committed).toEqual([5]);
      // Arrivals that never stop: the batch starts once the first unit has waited maxWaitMs.
      const patient = createGroupCommit(logged, { maxWaitMs: 10, maxBatch: 1_000_000 });
      const more = (i: number) =>
        patient.run(
          async (trx) =>
            void (
              await trx
                .insertInto('rows')
                .values({ ts: `e${i}`, note: 'kept' })
                .execute(),
              units++
            ),
        );
      let stop = false;
      const endless: Promise<void>[] = [];
      const forever = (i: number) => setImmediate(() => stop || (endless.push(more(i)), forever(i + 1)));
      const started = performance.now();
      forever(1);
      endless.push(more(0));
      await endless[0];
      const waited = performance.now() - started;
      stop = true;
      expect(waited).toBeGreaterThanOrEqual(9);
      expect(waited).toBeLessThan(2000);
      expect(committed.length).toBeGreaterThanOrEqual(2);
      await Promise.all(endless);
      expect(units).toBe(5 + endless.length);
    } finally {
      await logged.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compiled-once reads outside a transaction answer while a write transaction is open, from the last committed state; writes wait for it', async () => {
    await db.insertInto('rows').values({ ts: 'before', note: 'committed' }).execute();
    const find = () =>
      runCompiledOnce(db, 'rows.by-note', ['committed'], () =>
        db.selectFrom('rows').select('ts').where('note', '=', 'committed'),
      );
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let opened!: () => void;
    const isOpen = new Promise<void>((resolve) => (opened = resolve));
    const writer = db.transaction().execute(async (trx) => {
      await trx.insertInto('rows').values({ ts: 'inside', note: 'committed' }).execute();
      opened();
      await held;
      order.push('commit');
    });
    await isOpen;
    // On SQLite the read runs on the read-only connection and does not see the open transaction's
    // row; on PostgreSQL it takes another pool connection and does not see it either.
    expect((await find()).map((r) => r.ts)).toEqual(['before']);
    order.push('read');
    const write = insertCompiledOnce(db, 'rows.insert-one', [{ ts: 'after', note: 'committed' }], () =>
      db.insertInto('rows').values({ ts: 'after', note: 'committed' }),
    ).then(() => order.push('write'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await Promise.all([writer, write]);
    // SQLite has one writing connection: the write queued behind the transaction.
    if (dialect === 'sqlite') expect(order).toEqual(['read', 'commit', 'write']);
    expect((await find()).map((r) => r.ts).sort()).toEqual(['after', 'before', 'inside']);
  });

  it("group commit: afterUnits writes run after every unit of the batch, before the commit; a failed unit's are dropped", async () => {
    const commits = createGroupCommit(db);
    const order: string[] = [];
    const unit = (i: number) =>
      commits.run(async (trx) => {
        await trx
          .insertInto('rows')
          .values({ ts: `u${i}`, note: 'unit' })
          .execute();
        order.push(`unit ${i}`);
        await afterUnits(trx, async (afterOthers) => {
          order.push(`deferred ${i}${afterOthers ? ' after others' : ''}`);
          await trx
            .insertInto('rows')
            .values({ ts: `d${i}`, note: 'deferred' })
            .execute();
        });
        if (i === 1) throw new Error('unit 1 fails');
        return i;
      });
    const outcomes = await Promise.allSettled([0, 1, 2].map(unit));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    if (dialect === 'sqlite') {
      // One batch: the units, then the deferred writes of those that succeeded, in their order.
      expect(order).toEqual(['unit 0', 'unit 1', 'unit 2', 'deferred 0 after others', 'deferred 2 after others']);
    } else {
      // A transaction per unit: the write runs where the unit asks for it, and is undone with it.
      for (const i of [0, 1, 2]) expect(order.indexOf(`deferred ${i}`)).toBe(order.indexOf(`unit ${i}`) + 1);
    }
    expect((await db.selectFrom('rows').select('ts').execute()).map((r) => r.ts).sort()).toEqual([
      'd0',
      'd2',
      'u0',
      'u2',
    ]);
    // Alone in its batch (SQLite: after the unit; PostgreSQL: at once), and outside any unit of work: at once.
    order.length = 0;
    await commits.run(async (trx) => {
      await afterUnits(trx, async (afterOthers) => void order.push(`alone${afterOthers ? ' after others' : ''}`));
      order.push('unit');
    });
    await afterUnits(db, async (afterOthers) => void order.push(`outside${afterOthers ? ' after others' : ''}`));
    expect(order).toEqual(dialect === 'sqlite' ? ['unit', 'alone', 'outside'] : ['alone', 'unit', 'outside']);
  });

  it('group commit: when a deferred write fails, the batch is undone and each unit runs again alone, so the error reaches only its own unit', async () => {
    const commits = createGroupCommit(db);
    const runs = [0, 0, 0];
    const unit = (i: number) =>
      commits.run(async (trx) => {
        runs[i] = (runs[i] as number) + 1;
        await trx
          .insertInto('rows')
          .values({ ts: `u${i}`, note: 'unit' })
          .execute();
        await afterUnits(trx, async () => {
          if (i === 1) throw new Error('deferred 1 fails');
          await trx
            .insertInto('rows')
            .values({ ts: `d${i}`, note: 'deferred' })
            .execute();
        });
        return i;
      });
    const outcomes = await Promise.allSettled([0, 1, 2].map(unit));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      0,
      'deferred 1 fails',
      2,
    ]);
    // SQLite ran the batch, then each unit alone; PostgreSQL ran each unit in its own transaction.
    expect(runs).toEqual(dialect === 'sqlite' ? [2, 2, 2] : [1, 1, 1]);
    expect((await db.selectFrom('rows').select('ts').execute()).map((r) => r.ts).sort()).toEqual([
      'd0',
      'd2',
      'u0',
      'u2',
    ]);
  });

  it('group commit: a lone failing unit rolls back and the next units still run', async () => {
    const commits = createGroupCommit(db);
    await expect(
      commits.run(async (trx) => {
        await trx.insertInto('rows').values({ ts: 'x', note: 'undone' }).execute();
        throw new Error('nope');
      }),
    ).rejects.toThrow('nope');
    expect(
      await commits.run(
        async (trx) =>
          (await trx.insertInto('rows').values({ ts: 'y', note: 'kept' }).returning('id').executeTakeFirstOrThrow()).id,
      ),
    ).toEqual(expect.any(Number));
    expect((await db.selectFrom('rows').select('note').execute()).map((r) => r.note)).toEqual(['kept']);
  });

  it('group commit: units fail (rather than wait forever) when no transaction can be opened', async () => {
    const unreachable = new Kysely<TestDb>({
      dialect: new SqliteDialect({ database: async () => Promise.reject(new Error('no database')) }),
    });
    const commits = createGroupCommit(unreachable);
    const outcomes = await Promise.allSettled([commits.run(async () => 1), commits.run(async () => 2)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    // And it recovers: later units get a new attempt.
    await expect(commits.run(async () => 3)).rejects.toThrow('no database');
  });

  it('group commit (PostgreSQL): a unit that loses a deadlock runs again; one that keeps failing so gives up after MAX_ATTEMPTS', async () => {
    if (dialect !== 'postgres') return;
    const [one, two] = await Promise.all(
      [1, 2].map(async (i) =>
        Number(
          (
            await db
              .insertInto('rows')
              .values({ ts: `r${i}`, note: '0' })
              .returning('id')
              .executeTakeFirstOrThrow()
          ).id,
        ),
      ),
    );
    const commits = createGroupCommit(db);
    // Two units lock the same two rows crosswise, each waiting until the other holds its first row.
    const held: (() => void)[] = [];
    const bothHeld = Promise.all([0, 1].map((k) => new Promise<void>((resolve) => (held[k] = resolve))));
    const attempts = [0, 0];
    const unit = (k: number, first: number, second: number) =>
      commits.run(async (trx) => {
        attempts[k] = (attempts[k] as number) + 1;
        await trx
          .updateTable('rows')
          .set({ note: sql`note || ${String(k)}` })
          .where('id', '=', first)
          .execute();
        (held[k] as () => void)();
        await bothHeld;
        await trx
          .updateTable('rows')
          .set({ note: sql`note || ${String(k)}` })
          .where('id', '=', second)
          .execute();
        return k;
      });
    expect(await Promise.all([unit(0, one as number, two as number), unit(1, two as number, one as number)])).toEqual([
      0, 1,
    ]);
    expect((attempts[0] as number) + (attempts[1] as number)).toBe(3);
    expect(
      (await db.selectFrom('rows').select('note').orderBy('id').execute()).map((r) => [...r.note].sort().join('')),
    ).toEqual(['001', '001']);

    let tries = 0;
    const conflict = Object.assign(new Error('could not serialize access'), { code: '40001' });
    await expect(
      commits.run(async () => {
        tries += 1;
        throw conflict;
      }),
    ).rejects.toBe(conflict);
    expect(tries).toBe(MAX_ATTEMPTS);
    // Other errors are not retried.
    tries = 0;
    await expect(
      commits.run(async () => {
        tries += 1;
        throw new Error('plain');
      }),
    ).rejects.toThrow('plain');
    expect(tries).toBe(1);
  });

  it('afterKey pages by (sort, tiebreak) in both directions without skipping ties', async () => {
    for (let i = 0; i < 9; i++)
      await db
        .insertInto('rows')
        .values({ ts: `2030-01-0${1 + Math.floor(i / 3)}`, note: String(i) })
        .execute();
    for (const direction of ['asc', 'desc'] as const) {
      const seen: string[] = [];
      let key: { sort: string; tiebreak: number } | undefined;
      for (;;) {
        let q = db.selectFrom('rows').selectAll();
        const k = key;
        if (k) q = q.where((eb) => afterKey(eb, 'ts', 'id', k, direction));
        const page = await q.orderBy('ts', direction).orderBy('id', direction).limit(2).execute();
        if (!page.length) break;
        seen.push(...page.map((r) => r.note));
        const last = page[page.length - 1] as { ts: string; id: number };
        key = { sort: last.ts, tiebreak: last.id };
      }
      const expected = Array.from({ length: 9 }, (_, i) => String(i));
      expect(seen).toEqual(direction === 'asc' ? expected : expected.reverse());
    }
  });

  it('afterKey lets SQLite seek the index instead of scanning from the start', async () => {
    if (dialect !== 'sqlite') return;
    await sql`create index rows_ts on rows (ts, id)`.execute(db);
    const query = db
      .selectFrom('rows')
      .selectAll()
      .where((eb) => afterKey(eb, 'ts', 'id', { sort: '2030-01-02', tiebreak: 5 }, 'desc'))
      .orderBy('ts', 'desc')
      .orderBy('id', 'desc')
      .compile();
    // With bound parameters, as the service runs it (literals would let SQLite see more).
    const plan = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    expect(plan.rows.map((r) => r.detail).join(' ')).toMatch(/USING (COVERING )?INDEX rows_ts \(ts<\?\)/);
  });
});

describe('timeOrderedUuid', () => {
  it('is a version 7 UUID that sorts by time', () => {
    const a = timeOrderedUuid(new Date('2030-01-01T00:00:00.000Z'), systemIds);
    const b = timeOrderedUuid(new Date('2030-01-01T00:00:00.001Z'), systemIds);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a < b).toBe(true);
    expect(a.replace(/-/g, '').slice(0, 12)).toBe(
      new Date('2030-01-01T00:00:00.000Z').getTime().toString(16).padStart(12, '0'),
    );
    expect(new Set(Array.from({ length: 1000 }, () => timeOrderedUuid(new Date(0), systemIds))).size).toBe(1000);
  });

  it("carries the v4 UUID's random digits after its version digit, and sets the variant whatever the source's", () => {
    const from = (uuid: string) => timeOrderedUuid(new Date(0x0123456789ab), { ...systemIds, uuid: () => uuid });
    expect(from('0123abcd-4567-4def-b89a-bcdef0123456')).toBe('01234567-89ab-7def-b89a-bcdef0123456');
    expect(from('0123abcd-4567-4def-789a-bcdef0123456')).toBe('01234567-89ab-7def-b89a-bcdef0123456');
    expect(from('0123abcd-4567-4def-089a-bcdef0123456')).toBe('01234567-89ab-7def-889a-bcdef0123456');
  });
});
