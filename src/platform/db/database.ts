import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { redactUrl } from '../config/config.js';

export type Dialect = 'sqlite' | 'postgres';

/** What repositories accept: the database or a transaction opened at the edge. */
export type Executor<DB> = Kysely<DB> | Transaction<DB>;

export interface Database<DB> {
  readonly db: Kysely<DB>;
  readonly dialect: Dialect;
  /** The URL with any password hidden, for logs. */
  readonly description: string;
  /** Runs `select 1`; throws when the database cannot be reached. */
  ping(): Promise<void>;
  destroy(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** `postgres://…` (optionally with `?schema=name`), `sqlite:/path/file.db`, or unset. */
  readonly url: string | undefined;
  /** SQLite file used when `url` is unset: `<dataDir>/<defaultFile>`. */
  readonly dataDir: string;
  readonly defaultFile: string;
  /** PostgreSQL pool size. */
  readonly poolSize?: number;
  /**
   * SQLite `synchronous` level. NORMAL (the default here) is safe against a process crash in WAL
   * mode; FULL also survives power loss at the price of one fsync per commit.
   */
  readonly sqliteSynchronous?: 'NORMAL' | 'FULL';
  /**
   * Whether statements compiled once (`prepared.ts`) are compiled again on every run and compared
   * with the cached SQL: slower, for tests (DB_VERIFY_STATEMENT_CACHE).
   */
  readonly verifyStatementCache?: boolean;
}

const VERIFIED = new WeakSet<object>();

/**
 * Whether the database behind `executor` (a Kysely instance or a transaction of one opened here)
 * verifies its compiled-once statements on every run.
 */
export function verifiesStatementCache(executor: { getExecutor(): { adapter: object } }): boolean {
  return VERIFIED.has(executor.getExecutor().adapter);
}

export async function openDatabase<DB>(options: OpenDatabaseOptions): Promise<Database<DB>> {
  const database = await open<DB>(options);
  // Kysely instances and their transactions share one adapter.
  if (options.verifyStatementCache) VERIFIED.add(database.db.getExecutor().adapter);
  return database;
}

async function open<DB>(options: OpenDatabaseOptions): Promise<Database<DB>> {
  const url = options.url;
  if (url && /^postgres(ql)?:\/\//.test(url)) return openPostgres<DB>(url, options.poolSize ?? 10);
  let file: string;
  if (url) {
    if (!url.startsWith('sqlite:')) throw new Error(`Unsupported database URL "${redactUrl(url)}": use postgres://… or sqlite:/path/file.db`);
    file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  } else {
    file = path.join(options.dataDir, options.defaultFile);
  }
  return openSqlite<DB>(file, options.sqliteSynchronous ?? 'NORMAL');
}

function openSqlite<DB>(file: string, synchronous: 'NORMAL' | 'FULL'): Database<DB> {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const sqlite = new Sqlite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${synchronous}`);
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const cached = withStatementCache(sqlite);
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: cached }) });
  DIRECT.set(db, (sql, parameters) => {
    // Inside a Kysely transaction the one connection belongs to it: queue behind it as usual.
    if (sqlite.inTransaction || !sqlite.open) return undefined;
    const stmt = cached.prepare(sql);
    if (stmt.reader) return stmt.all(parameters as unknown[]);
    stmt.run(parameters as unknown[]);
    return [];
  });
  return {
    db,
    dialect: 'sqlite',
    description: `sqlite:${file}`,
    async ping() {
      sqlite.prepare('select 1').get();
    },
    async destroy() {
      await db.destroy();
    },
  };
}

type DirectRunner = (sql: string, parameters: readonly unknown[]) => unknown[] | undefined;
const DIRECT = new WeakMap<object, DirectRunner>();

/**
 * A synchronous runner for statements on a SQLite database opened here, or undefined (PostgreSQL,
 * a transaction, a foreign executor). better-sqlite3 runs every statement synchronously, so
 * outside a transaction Kysely's connection queue and promise chain add nothing but cost; the
 * runner answers undefined while a transaction holds the connection, and the caller then goes
 * through Kysely, which queues the statement behind that transaction.
 */
export function directSqliteRunner(executor: object): DirectRunner | undefined {
  return DIRECT.get(executor);
}

/**
 * better-sqlite3 compiles SQL on every `prepare()`. Kysely prepares each query it runs, and the
 * queries of a service are a small fixed set, so reusing the compiled statements removes most of
 * the per-query cost. Bounded so that ad-hoc SQL cannot grow it without limit.
 */
function withStatementCache(sqlite: Sqlite.Database, max = 500): Sqlite.Database {
  const cache = new Map<string, Sqlite.Statement>();
  const prepare = (source: string) => {
    let stmt = cache.get(source);
    if (!stmt) {
      stmt = sqlite.prepare(source);
      if (cache.size >= max) cache.delete(cache.keys().next().value as string);
      cache.set(source, stmt);
    }
    return stmt;
  };
  return new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop === 'prepare') return prepare;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function openPostgres<DB>(rawUrl: string, poolSize: number): Promise<Database<DB>> {
  const url = new URL(rawUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`Invalid schema name "${schema}" in database URL`);
  // Numbers that pg would hand back as strings: bigint counts. Our ids and counts fit in 2^53.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));
  if (schema) {
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      await admin.query(`create schema if not exists "${schema}"`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: poolSize,
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    description: redactUrl(rawUrl),
    async ping() {
      await pool.query('select 1');
    },
    async destroy() {
      await db.destroy();
    },
  };
}
