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

  /** The payloads heard on `topic` by the other instance (PostgreSQL) or this process (SQLite). */
  async function hearing(topic: string): Promise<{ heard: string[]; stop: () => Promise<void> }> {
    const heard: string[] = [];
    const stop = await (other ?? database).listen(topic, (payload) => {
      if (payload) heard.push(payload);
    });
    return { heard, stop };
  }

  it('is heard after the commit, in commit order, and never for a rolled-back transaction or savepoint', async () => {
    const { heard, stop } = await hearing('topic_in');
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

  it("the signals of a batch's units are each heard once, after their commit; a later transaction's wait for its own end", async () => {
    const { heard, stop } = await hearing('topic_batch');
    try {
      // Units given at once: on SQLite one transaction (one wait for the connection serves them all).
      const units = Array.from({ length: 20 }, (_, i) =>
        database.commits.run(async (trx) => {
          await sql`insert into t (v) values (${100 + i})`.execute(trx);
          await database.notifyIn(trx, 'topic_batch', `unit ${i}`);
          await database.notifyIn(trx, 'topic_batch', [`unit ${i} again`]);
        }),
      );
      await Promise.all(units);
      const expected = Array.from({ length: 20 }, (_, i) => [`unit ${i}`, `unit ${i} again`]).flat();
      await expect.poll(() => heard.length, { timeout: 5_000 }).toBe(expected.length);
      if (dialect === 'sqlite') expect(heard).toEqual(expected);
      else expect([...heard].sort()).toEqual([...expected].sort());

      // A transaction begun while the one before's signals may still wait for the connection.
      heard.length = 0;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      await database.db.transaction().execute((trx) => database.notifyIn(trx, 'topic_batch', 'before'));
      const open = database.db.transaction().execute(async (trx) => {
        await database.notifyIn(trx, 'topic_batch', 'open');
        await held;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).not.toContain('open');
      release();
      await open;
      await expect.poll(() => heard, { timeout: 5_000 }).toEqual(['before', 'open']);
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
