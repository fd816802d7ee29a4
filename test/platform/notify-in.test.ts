import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFY_PAYLOAD_LIMIT, openDatabase, type Database } from '../../src/platform/db/database.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';

/** `Database.notifyIn`: a signal that belongs to a transaction (decision 0015). */
describe.each(dialects)('%s: signals inside a transaction', (dialect) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'notify-in-'));
  const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
  let database: Database<{ t: { v: number } }>;
  let other: Database<{ t: { v: number } }> | undefined;
  beforeAll(async () => {
    const url = pg ? pg.url : `sqlite:${path.join(dir, 'n.db')}`;
    database = await openDatabase({ url, dataDir: dir, defaultFile: 'n.db', poolSize: 4 });
    // Another "instance" on the same PostgreSQL schema: what one commits, the other hears.
    if (pg) other = await openDatabase({ url, dataDir: dir, defaultFile: 'n.db', poolSize: 2 });
    await sql`create table t (v integer)`.execute(database.db);
  });
  afterAll(async () => {
    await other?.destroy();
    await database.destroy();
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is heard after the commit, in commit order, and never for a rolled-back transaction or savepoint', async () => {
    const heard: string[] = [];
    const listener = other ?? database;
    const stop = await listener.listen('topic_in', (payload) => {
      if (payload) heard.push(payload);
    });
    try {
      await database.db.transaction().execute(async (trx) => {
        await database.notifyIn(trx, 'topic_in', 'first');
        await sql`insert into t (v) values (1)`.execute(trx);
        // Not heard while the transaction is open.
        expect(heard).toEqual([]);
      });
      await expect(
        database.db.transaction().execute(async (trx) => {
          await database.notifyIn(trx, 'topic_in', 'rolled back');
          throw new Error('undo');
        }),
      ).rejects.toThrow('undo');
      await database.db.transaction().execute(async (trx) => {
        await sql`savepoint s`.execute(trx);
        await database.notifyIn(trx, 'topic_in', 'savepoint undone');
        await sql`rollback to savepoint s`.execute(trx);
        await database.notifyIn(trx, 'topic_in', 'second');
      });
      await database.db.transaction().execute(async (trx) => database.notifyIn(trx, 'topic_in', 'third'));
      await expect.poll(() => heard.includes('third'), { timeout: 5_000 }).toBe(true);
      if (dialect === 'postgres') expect(heard).toEqual(['first', 'second', 'third']);
      // SQLite signals once the transaction ended, whatever its outcome: listeners read committed rows, not the signal.
      else
        expect(heard.filter((h) => !['rolled back', 'savepoint undone'].includes(h))).toEqual([
          'first',
          'second',
          'third',
        ]);
    } finally {
      await stop();
    }
  });

  it('refuses a payload PostgreSQL would refuse', async () => {
    await expect(
      database.db
        .transaction()
        .execute((trx) => database.notifyIn(trx, 'topic_in', 'x'.repeat(NOTIFY_PAYLOAD_LIMIT + 1))),
    ).rejects.toThrow(/exceeds/);
  });
});
