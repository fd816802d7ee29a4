import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { dialectOf } from './dialect.js';

/** Migrations are a static, ordered record: names sort, and nothing is discovered from disk. */
export type MigrationSet = Readonly<Record<string, Migration>>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function migrateToLatest(db: Kysely<any>, migrations: MigrationSet, tableName: string): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => ({ ...migrations }) };
  // Kysely looks for its migration tables in every schema unless told which one: with several
  // schemas in one PostgreSQL database (tests, or two services) it would find another's tables.
  const schema = dialectOf(db) === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s : undefined;
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
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${String((error as Error).message ?? error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
