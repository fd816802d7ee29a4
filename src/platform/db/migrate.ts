import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';

/** Migrations are a static, ordered record: names sort, and nothing is discovered from disk. */
export type MigrationSet = Readonly<Record<string, Migration>>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function migrateToLatest(db: Kysely<any>, migrations: MigrationSet, tableName: string): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => ({ ...migrations }) };
  const migrator = new Migrator({
    db,
    provider,
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
