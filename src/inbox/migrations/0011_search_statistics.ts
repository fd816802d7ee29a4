import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../platform/db/dialect.js';

// PostgreSQL's statistics for the search index's tsvector columns (docs/decisions/0017, addendum).
// With the default statistics target (100) ANALYZE keeps the 1,000 most common words of a column;
// a word outside them is estimated at half the rarest one's frequency, which in a large inbox is
// far above what a rare word (or a word no message holds) really matches. The planner then walks
// the newest messages backwards expecting to meet 50 matches soon, and reads the whole inbox
// instead: a search for a word no message holds took 0.5 s over 1,000,000 messages. At 1,000 it
// keeps 10,000 words, estimates the rest low, and looks such words up in the GIN index (2 ms).
// ANALYZE then samples 300,000 rows instead of 30,000 (about 4 s per table at 1,000,000 rows,
// run here once so that an existing index gets the new statistics now, not at the next
// automatic ANALYZE). SQLite's FTS5 needs no statistics.
const TARGET = 1000;
const TABLES = ['message_search', 'thread_search'];
const COLUMNS = ['subject', 'addresses', 'document'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
async function setTarget(db: Kysely<any>, target: number): Promise<void> {
  for (const table of TABLES) {
    const columns = COLUMNS.map((c) => `alter column ${c} set statistics ${target}`).join(', ');
    await sql`alter table ${sql.raw(table)} ${sql.raw(columns)}`.execute(db);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see setTarget()
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await setTarget(db, TARGET);
  for (const table of TABLES) await sql`analyze ${sql.raw(table)}`.execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see setTarget()
export async function down(db: Kysely<any>): Promise<void> {
  // -1: back to the server's default_statistics_target.
  if (dialectOf(db) === 'postgres') await setTarget(db, -1);
}
