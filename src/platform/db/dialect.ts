import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { runSqlOnce } from './compiled-once.js';
import { isStalePreparedStatement } from './pg-prepared.js';
import type { Dialect, Executor } from './types.js';

/**
 * Dialect differences live here and nowhere else.
 */

/** True when `err` is a unique-constraint violation in either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when `err` is a foreign-key violation in either dialect. */
export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  // SQLite reports ON DELETE RESTRICT through its trigger machinery.
  return (
    e?.code === '23503' ||
    e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    (e?.code === 'SQLITE_CONSTRAINT_TRIGGER' && /FOREIGN KEY/.test(e.message ?? ''))
  );
}

/**
 * True when PostgreSQL aborted a transaction that may succeed when run again: a deadlock
 * (40P01), a serialization failure (40001), or a prepared statement whose result columns a
 * migration changed (pg-prepared.ts: the connection has forgotten it, so the next run prepares it
 * again). SQLite has one writer and raises none of them.
 */
export function isTransientConflict(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === '40P01' || code === '40001' || isStalePreparedStatement(err);
}

/** Column type for an auto-incrementing integer primary key. */
export function serialPrimaryKey(dialect: Dialect): 'integer' | 'serial' {
  return dialect === 'postgres' ? 'serial' : 'integer';
}

/** Column type for a floating-point number. */
export function floatType(dialect: Dialect): 'real' | 'double precision' {
  return dialect === 'postgres' ? 'double precision' : 'real';
}

/** Which dialect a Kysely instance speaks; migrations are typed on Kysely<any> and ask this. */
export function dialectOf(db: { getExecutor(): { adapter: object } }): Dialect {
  return db.getExecutor().adapter.constructor.name.startsWith('Postgres') ? 'postgres' : 'sqlite';
}

/**
 * Adds `by` to the counter `column` of the row identified by `key`, creating the row at `by`, and
 * returns the new value: one atomic statement (INSERT … ON CONFLICT … DO UPDATE … RETURNING, which
 * PostgreSQL and SQLite ≥ 3.35 both speak). `key` must be the table's primary key or a unique key.
 */
export async function incrementCounter<DB>(
  db: Executor<DB>,
  table: string,
  key: Readonly<Record<string, string | number>>,
  column: string,
  by = 1,
): Promise<number> {
  const keyColumns = Object.keys(key);
  const statement = () => sql<{
    value: number | string;
  }>`insert into ${sql.table(table)} (${sql.join([...keyColumns, column].map((c) => sql.ref(c)))})
    values (${sql.join([...keyColumns.map((c) => key[c]), by])})
    on conflict (${sql.join(keyColumns.map((c) => sql.ref(c)))}) do update set ${sql.ref(column)} = ${sql.ref(`${table}.${column}`)} + ${by}
    returning ${sql.ref(column)} as value`;
  const rows = await runSqlOnce(
    db,
    `counter:${table}:${keyColumns.join(',')}:${column}`,
    [...keyColumns.map((c) => key[c]), by, by],
    statement,
  );
  return Number(rows[0]?.value);
}

/**
 * Locks the rows a read-modify-write in a transaction is about to change: FOR UPDATE in
 * PostgreSQL; SQLite has one writer at a time and no such clause, so there it is a no-op.
 */
export function forUpdate<Q extends { forUpdate(): Q }>(query: Q, dialect: Dialect): Q {
  return dialect === 'postgres' ? query.forUpdate() : query;
}

/**
 * `column` contains `needle` (already lower-cased in ASCII), comparing ASCII letters without case
 * and everything else exactly, the same in both dialects whatever the database's locale:
 * SQLite's lower() folds ASCII only, and PostgreSQL's is replaced by a fixed ASCII translate().
 */
export function containsAsciiCaseless<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  dialect: Dialect,
  column: string,
  needle: string,
): Expression<SqlBool> {
  const ref = sql.ref(column);
  return dialect === 'postgres'
    ? sql<SqlBool>`strpos(translate(coalesce(${ref}, ''), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), ${needle}) > 0`
    : sql<SqlBool>`instr(lower(coalesce(${ref}, '')), ${needle}) > 0`;
}

/** ASCII lower case, matching containsAsciiCaseless. */
export const asciiLower = (s: string): string => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
