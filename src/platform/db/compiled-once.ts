import { CompiledQuery, type Compilable, type RawBuilder } from 'kysely';
import { directRunner, transactionRunner, verifiesStatementCache } from './driver.js';

interface QueryExecutorLike {
  readonly isTransaction: boolean;
  getExecutor(): { adapter: object };
  executeQuery<R>(query: CompiledQuery<R>): Promise<{ rows: R[] }>;
}

/** What a `sql` template compiles for (a Kysely instance or a transaction: Kysely does not export the type). */
type QueryExecutorProvider = Parameters<RawBuilder<unknown>['compile']>[0];

/**
 * SQL text per dialect adapter (a Kysely instance and its transactions share one adapter), so
 * SQLite's `?` and PostgreSQL's `$1` never mix when both run in one process.
 */
const caches = new WeakMap<object, Map<string, string>>();
/** Keys per adapter before a cache starts over (ad-hoc keys cannot grow it without limit). */
const MAX = 1000;

/**
 * Runs a statement whose shape is fixed (a select, an insert, an update or an upsert; its rows
 * are what it returns), building and compiling it with Kysely only the first time; afterwards only
 * its parameters change. On hot read paths this removes the cost of building and
 * compiling the query tree on every request, a large share of a request that reads a few indexed
 * rows. The SQL is still Kysely's, for the dialect in use, and runs on the given executor (so
 * inside a transaction when given one). Outside a transaction it runs directly on the SQLite
 * connection or the PostgreSQL pool (see `directRunner`).
 *
 * `build` must produce the same SQL for the same `key`, taking `parameters` in the same order. On
 * a database opened with `verifyStatementCache` (tests) every run compiles `build()` again and
 * throws when its SQL is not the cached one (a key that misses something that shapes the SQL) or
 * its parameters are not the ones given.
 */
export async function runCompiledOnce<R>(
  executor: QueryExecutorLike,
  key: string,
  parameters: readonly unknown[],
  build: () => Compilable<R>,
): Promise<R[]> {
  const adapter = executor.getExecutor().adapter;
  let cache = caches.get(adapter);
  if (!cache) {
    cache = new Map();
    caches.set(adapter, cache);
  }
  let sql = cache.get(key);
  if (sql === undefined || verifiesStatementCache(executor)) {
    const compiled = build().compile();
    if (sql !== undefined && compiled.sql !== sql) {
      throw new Error(
        `compiled-once statement ${key}: the SQL compiled now differs from the SQL cached under this key, which misses something that shapes it`,
      );
    }
    if (compiled.parameters.length !== parameters.length) {
      throw new Error(
        `compiled-once statement ${key}: ${compiled.parameters.length} parameters compiled, ${parameters.length} given`,
      );
    }
    // The first run of every shape proves that the parameters given are the compiled ones, in order.
    const at = compiled.parameters.findIndex((p, i) => !sameParameter(p, parameters[i]));
    if (at >= 0)
      throw new Error(
        `compiled-once statement ${key}: parameter ${at + 1} is given in another place than Kysely compiled it`,
      );
    sql = compiled.sql;
    if (cache.size >= MAX) cache.clear();
    cache.set(key, sql);
  }
  return runText<R>(executor, sql, parameters);
}

/**
 * Runs SQL already written for the executor's dialect: on the SQLite connection at once or the
 * PostgreSQL pool outside a transaction (`directRunner`), on the connection of an open SQLite
 * transaction (`transactionRunner`), else through Kysely's executor.
 */
export async function runText<R>(
  executor: QueryExecutorLike,
  sql: string,
  parameters: readonly unknown[],
): Promise<R[]> {
  const direct = (directRunner(executor) ?? transactionRunner(executor))?.(sql, parameters);
  if (direct) return (await direct) as R[];
  return (await executor.executeQuery<R>(CompiledQuery.raw(sql, [...parameters]) as CompiledQuery<R>)).rows;
}

/**
 * `runCompiledOnce` for a statement written with Kysely's `sql` template: `build` makes the
 * template (its interpolated values are `parameters`, in order), compiled for `db`'s dialect
 * only the first time.
 */
export function runSqlOnce<R>(
  db: QueryExecutorLike & QueryExecutorProvider,
  key: string,
  parameters: readonly unknown[],
  build: () => RawBuilder<R>,
): Promise<R[]> {
  return runCompiledOnce<R>(db, key, parameters, () => ({ compile: () => build().compile(db) }));
}

/**
 * A multi-row INSERT through `runCompiledOnce`, compiled once per statement and number of rows:
 * `build` makes it from `rows`, whose values are its parameters, row after row, in the column
 * order of the first row (every row has the same columns).
 */
export function insertCompiledOnce<R>(
  executor: QueryExecutorLike,
  key: string,
  rows: readonly Record<string, unknown>[],
  build: () => Compilable<R>,
): Promise<R[]> {
  const columns = Object.keys(rows[0] ?? {});
  return runCompiledOnce<R>(
    executor,
    `${key}:${rows.length}`,
    rows.flatMap((row) => columns.map((c) => row[c])),
    build,
  );
}

function sameParameter(compiled: unknown, given: unknown): boolean {
  if (compiled === given) return true;
  return Buffer.isBuffer(compiled) && Buffer.isBuffer(given) && compiled.equals(given);
}
