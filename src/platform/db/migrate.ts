import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { schemaLockKey } from './database.js';
import { dialectOf } from './dialect.js';

/** Migrations are a static, ordered record: names sort, and nothing is discovered from disk. */
export type MigrationSet = Readonly<Record<string, Migration>>;

/**
 * Runs the migrations not yet applied. Safe when several instances start at once: on PostgreSQL
 * the schema's advisory lock (the one `openDatabase` takes to create the schema) is held on one
 * connection for the whole run. SQLite has no such lock: a run that lost the race to another
 * process (its writes conflict with the other's) is run again while the other makes progress, and
 * finds the migrations applied.
 * PostgreSQL runs are retried too, because Kysely looks for its tables in the catalog of every
 * schema, which fails while some other schema of the database is being dropped.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function migrateToLatest(db: Kysely<any>, migrations: MigrationSet, tableName: string): Promise<string[]> {
  const once = () =>
    dialectOf(db) === 'postgres'
      ? db.connection().execute(async (conn) => {
          const schema =
            (await sql<{ s: string | null }>`select current_schema() as s`.execute(conn)).rows[0]?.s ?? 'public';
          await sql`select pg_advisory_lock(hashtext(${schemaLockKey(schema)}))`.execute(conn);
          try {
            return await migrateOnce(conn, migrations, tableName, schema);
          } finally {
            await sql`select pg_advisory_unlock(hashtext(${schemaLockKey(schema)}))`.execute(conn);
          }
        })
      : migrateOnce(db, migrations, tableName, undefined);
  // A run that fails while another process is applying migrations (SQLite: its statement finds the
  // other's table or column, or the file busy) is run again for as long as the other makes progress:
  // with many migrations a loser can lose at several of them in turn. Three failures in a row with
  // no migration applied meanwhile are an error of the migration itself.
  let applied = -1;
  for (let stalled = 0, attempt = 1; ; attempt++) {
    try {
      return await once();
    } catch (err) {
      const now = await appliedCount(db, tableName);
      stalled = now > applied ? 0 : stalled + 1;
      applied = Math.max(applied, now);
      if (stalled >= 2 || attempt >= 100) throw err;
      await new Promise((r) => setTimeout(r, 50 * (stalled + 1)));
    }
  }
}

/** How many migrations the table records as applied (0 before it exists or when it cannot be read). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
async function appliedCount(db: Kysely<any>, tableName: string): Promise<number> {
  try {
    const row = await db
      .selectFrom(tableName)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  } catch {
    return 0;
  }
}

async function migrateOnce(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
  db: Kysely<any>,
  migrations: MigrationSet,
  tableName: string,
  schema: string | undefined,
): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => ({ ...migrations }) };
  // Kysely looks for its migration tables in every schema unless told which one: with several
  // schemas in one PostgreSQL database (tests, or two services) it would find another's tables.
  const migrator = new Migrator({
    db,
    provider,
    ...(schema ? { migrationTableSchema: schema } : {}),
    migrationTableName: tableName,
    migrationLockTableName: `${tableName}_lock`,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(
      `Migration ${failed?.migrationName ?? '(unknown)'} failed: ${String((error as Error).message ?? error)}`,
      { cause: error },
    );
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
