import { mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import Sqlite from 'better-sqlite3';
import { checkpointOffThread, WAL_FINISH_BYTES } from '../../src/platform/db/sqlite-checkpoint.js';

/**
 * A commit on the service's SQLite connection never copies the WAL into the database file (that
 * copy and its fsync would hold the event loop); a thread of its own does, soon after.
 */
describe('sqlite: WAL checkpoints off the event loop', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'checkpoint-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A database of the service's kind on `file`, synchronous FULL as the services run it. */
  const openBlobs = (file: string) =>
    openDatabase<{ blobs: { id: number; content: Buffer } }>({
      url: `sqlite:${file}`,
      dataDir: dir,
      defaultFile: path.basename(file),
      sqliteSynchronous: 'FULL',
    });

  it('commits megabytes without checkpointing them, and the checkpoint thread copies them into the file', async () => {
    const file = path.join(dir, 'c.db');
    const database = await openBlobs(file);
    try {
      await sql`create table blobs (id integer primary key, content blob not null)`.execute(database.db);
      const before = statSync(file).size;
      // 8 MiB: 2,000 pages, twice SQLite's automatic checkpoint threshold.
      await database.commits.run((trx) =>
        trx
          .insertInto('blobs')
          .values({ id: 1, content: Buffer.alloc(8 * 2 ** 20, 7) })
          .execute(),
      );
      expect(statSync(file).size - before).toBeLessThan(2 ** 20);
      expect(statSync(`${file}-wal`).size).toBeGreaterThan(8 * 2 ** 20);
      const deadline = Date.now() + 20_000;
      while (statSync(file).size < 8 * 2 ** 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(statSync(file).size).toBeGreaterThan(8 * 2 ** 20);
      // The data reads back through the service's connection.
      const row = await database.db
        .selectFrom('blobs')
        .select(sql<number>`length(content)`.as('n'))
        .executeTakeFirstOrThrow();
      expect(row.n).toBe(8 * 2 ** 20);
    } finally {
      await database.destroy();
    }
  });
  it('checkpoints in the commit again, as SQLite does by default, once the checkpoint thread fails', async () => {
    const file = path.join(dir, 'f.db');
    const moved = path.join(dir, 'f-moved.db');
    const database = await openDatabase<{ blobs: { id: number; content: Buffer } }>({
      url: `sqlite:${file}`,
      dataDir: dir,
      defaultFile: 'f.db',
    });
    try {
      await sql`create table blobs (id integer primary key, content blob not null)`.execute(database.db);
      // The thread opens the file by its name: gone from there, its checkpoint fails. The service's
      // connection keeps the file it opened, now under another name.
      renameSync(file, moved);
      await database.commits.run((trx) =>
        trx
          .insertInto('blobs')
          .values({ id: 1, content: Buffer.alloc(8 * 2 ** 20, 7) })
          .execute(),
      );
      expect(statSync(moved).size).toBeLessThan(2 ** 20);
      // After the failure a commit past SQLite's threshold copies the WAL itself.
      const deadline = Date.now() + 20_000;
      for (let id = 2; statSync(moved).size < 8 * 2 ** 20 && Date.now() < deadline; id++) {
        await new Promise((r) => setTimeout(r, 50));
        await database.commits.run((trx) =>
          trx
            .insertInto('blobs')
            .values({ id, content: Buffer.alloc(16, 1) })
            .execute(),
        );
      }
      expect(statSync(moved).size).toBeGreaterThan(8 * 2 ** 20);
    } finally {
      await database.destroy();
    }
  });

  it('keeps the WAL bounded under writes that never pause: it starts over instead of growing with everything written', async () => {
    const file = path.join(dir, 'steady.db');
    const database = await openDatabase<{ blobs: { id: number; content: Buffer } }>({
      url: `sqlite:${file}`,
      dataDir: dir,
      defaultFile: 'steady.db',
      sqliteSynchronous: 'NORMAL',
    });
    try {
      await sql`create table blobs (id integer primary key, content blob not null)`.execute(database.db);
      const content = Buffer.alloc(128 * 1024, 7);
      let written = 0;
      let largest = 0;
      // For five seconds, one unit after the other, each replacing the last row: the database
      // stays small, the WAL takes every page written, and the writer pauses a few milliseconds
      // at most, never the quiet moment in which SQLite would start the WAL over by itself.
      const until = Date.now() + 5_000;
      for (let id = 1; Date.now() < until; id++) {
        await database.commits.run(async (trx) => {
          await trx.deleteFrom('blobs').execute();
          await trx.insertInto('blobs').values({ id, content }).execute();
        });
        written += content.length;
        largest = Math.max(largest, statSync(`${file}-wal`).size);
        await new Promise((r) => setTimeout(r, 4));
      }
      // Without the finish on the service's connection, the WAL held about everything written.
      expect(written).toBeGreaterThan(4 * WAL_FINISH_BYTES);
      expect(largest).toBeGreaterThan(WAL_FINISH_BYTES);
      expect(largest).toBeLessThan(written / 2);
      expect((await database.db.selectFrom('blobs').select('id').execute()).length).toBe(1);
    } finally {
      await database.destroy();
    }
  });
  it("destroy() returns only once a checkpoint under way has ended: the file is then the caller's to copy", async () => {
    const file = path.join(dir, 'destroy.db');
    const database = await openBlobs(file);
    await sql`create table blobs (id integer primary key, content blob not null)`.execute(database.db);
    const before = statSync(file).size;
    // 64 MiB: the thread's copy takes a while, and is under way when destroy() is called.
    for (let id = 1; id <= 8; id++)
      await database.commits.run((trx) =>
        trx
          .insertInto('blobs')
          .values({ id, content: Buffer.alloc(8 * 2 ** 20, id) })
          .execute(),
      );
    const deadline = Date.now() + 20_000;
    while (statSync(file).size < before + 2 ** 20 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(statSync(file).size).toBeGreaterThan(before + 2 ** 20);
    await database.destroy();
    // No other connection is at work on the file: a full checkpoint succeeds at once.
    const after = new Sqlite(file, { timeout: 0 });
    try {
      expect(after.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
    } finally {
      after.close();
    }
  });

  it('finishes a large WAL in the thread only while the writer holds back (quiet), and the next write starts the WAL over', async () => {
    const file = path.join(dir, 'quiet.db');
    const sqlite = new Sqlite(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.exec('create table blobs (id integer primary key, content blob not null)');
    let held = false;
    let windows = 0;
    const checkpointer = checkpointOffThread(sqlite, file, {
      intervalMs: 50,
      quiet: async (work) => {
        held = true;
        windows++;
        try {
          return await work();
        } finally {
          held = false;
        }
      },
    });
    try {
      const insert = sqlite.prepare('insert or replace into blobs (id, content) values (1, ?)');
      const content = Buffer.alloc(128 * 1024, 7);
      let restartedAfterFinish = false;
      const deadline = Date.now() + 20_000;
      // A writer that pauses only between its writes, as the service's connection does; it never
      // writes while held (the service's writes wait for Kysely's connection then).
      while (Date.now() < deadline && !restartedAfterFinish) {
        if (held) {
          await new Promise((r) => setTimeout(r, 1));
          continue;
        }
        const finishesBefore = checkpointer.finishes;
        insert.run(content);
        if (finishesBefore > 0 && statSync(`${file}-wal`).size < WAL_FINISH_BYTES) restartedAfterFinish = true;
        await new Promise((r) => setTimeout(r, 2));
      }
      expect(windows).toBeGreaterThan(0);
      expect(checkpointer.finishes).toBeGreaterThan(0);
      expect(restartedAfterFinish).toBe(true);
    } finally {
      await checkpointer.stop();
      sqlite.close();
    }
  });
});
