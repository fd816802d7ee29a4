import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';

/** The files this process has open whose name SQLite gives its temporary files. */
function sqliteTempFiles(): string[] {
  const links: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      links.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // Closed since the listing.
    }
  }
  return links.filter((link) => link.includes('etilqs_'));
}

/**
 * A batch of the group commit runs each unit in a savepoint, and SQLite journals every page a unit
 * changes; that journal stays in memory instead of moving to a temporary file once it passes
 * 64 KiB (SQLITE_TEMP_STORE in database.ts).
 */
describe.runIf(process.platform === 'linux')('sqlite: savepoint journals in memory', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'temp-store-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a batch whose units each change every page of a table opens no temporary file', async () => {
    const database = await openDatabase<{ rows: { id: number; v: string } }>({
      url: `sqlite:${path.join(dir, 't.db')}`,
      dataDir: dir,
      defaultFile: 't.db',
      sqliteSynchronous: 'FULL',
    });
    try {
      await sql`create table rows (id integer primary key, v text not null)`.execute(database.db);
      // 3,000 rows of 300 bytes: over 200 pages of 4 KiB.
      await database.commits.run(async (trx) => {
        for (let id = 0; id < 3000; id += 500) {
          await trx
            .insertInto('rows')
            .values(Array.from({ length: 500 }, (_, i) => ({ id: id + i, v: 'a'.repeat(300) })))
            .execute();
        }
      });
      const units = 20;
      let seen: string[] | undefined;
      const transactions = new Set<object>();
      // Queued in one turn: one batch, each unit in its savepoint, each changing rows on every page.
      await Promise.all(
        Array.from({ length: units }, (_, unit) =>
          database.commits.run(async (trx) => {
            await sql`update rows set v = ${'b'.repeat(300)} where id % ${units} = ${unit}`.execute(trx);
            transactions.add(trx);
            if (unit === units - 1) seen = sqliteTempFiles();
          }),
        ),
      );
      // One transaction for all: they ran as one batch.
      expect(transactions.size).toBe(1);
      expect(seen).toEqual([]);
      const changed = await database.db
        .selectFrom('rows')
        .select(sql<number>`count(*)`.as('n'))
        .where('v', 'like', 'b%')
        .executeTakeFirstOrThrow();
      expect(Number(changed.n)).toBe(3000);
    } finally {
      await database.destroy();
    }
  });
});
