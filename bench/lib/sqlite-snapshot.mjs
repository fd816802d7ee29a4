import { copyFileSync, rmSync } from 'node:fs';
import Sqlite from 'better-sqlite3';

/**
 * A copy of a SQLite database file as it is now (its WAL checkpointed into it first), and
 * `restore()` to put it back before a server starts on it. Send runs use it so that every run
 * starts from the same database: sends grow the search index, and its merges cost more the larger
 * it is, so on one shared file a run's figure depended on its place in the order (bench/README.md).
 */
export function sqliteSnapshot(file) {
  const copy = `${file}.before-runs`;
  // The main file alone is the database only once the whole WAL is in it: a checkpoint another
  // connection kept busy (the seed's checkpoint thread, still at work) leaves it torn.
  const conn = new Sqlite(file, { timeout: 10_000 });
  try {
    const [result] = conn.pragma('wal_checkpoint(TRUNCATE)');
    if (result?.busy) throw new Error(`${file}: the WAL could not be checkpointed (busy); the copy would be torn`);
  } finally {
    conn.close();
  }
  copyFileSync(file, copy);
  return {
    restore() {
      for (const suffix of ['-wal', '-shm']) rmSync(file + suffix, { force: true });
      copyFileSync(copy, file);
    },
    done: () => rmSync(copy, { force: true }),
  };
}
