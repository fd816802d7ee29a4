import type { Generated, Kysely } from 'kysely';
import { dialectOf } from '../db/dialect.js';

/** One row per unit of durable work. Times are ISO-8601 UTC strings (they sort as text). */
export interface JobTable {
  id: Generated<number>;
  queue: string;
  payload: string;
  status: 'pending' | 'done' | 'dead';
  run_at: string;
  attempts: number;
  locked_until: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface JobsDatabase {
  jobs: JobTable;
}

/** Creates the job table; services call this from one of their own migrations. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function createJobsTable(db: Kysely<any>): Promise<void> {
  const pk = dialectOf(db) === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('jobs')
    .addColumn('id', pk, (c) => c.primaryKey())
    .addColumn('queue', 'varchar(64)', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull().defaultTo('pending'))
    .addColumn('run_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until', 'varchar(32)')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due').on('jobs').columns(['status', 'run_at']).execute();
}
