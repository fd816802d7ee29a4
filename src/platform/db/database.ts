import type { Dialect, Executor } from './types.js';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { open as openFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { type CompiledQuery, Kysely, PostgresDialect, sql, SqliteDialect } from 'kysely';
import type pg from 'pg';
import { redactUrl } from '../config/config.js';
import { commitsOf, type GroupCommit } from './group-commit.js';
import { namingClient } from './pg-prepared.js';
import { checkpointOffThread } from './sqlite-checkpoint.js';
import { markVerifying, setCommitSync, setDirectRunner, setTransactionRunner } from './driver.js';
import { runSqlOnce } from './compiled-once.js';

export interface Database<DB> {
  readonly db: Kysely<DB>;
  /** The one commit batcher of this database (group-commit.ts): every writer runs its units of work here. */
  readonly commits: GroupCommit<DB>;
  readonly dialect: Dialect;
  /** The URL with any password hidden, for logs. */
  readonly description: string;
  /** Runs `select 1`; throws when the database cannot be reached. */
  ping(): Promise<void>;
  /**
   * Signals every process listening on `topic` on this database (PostgreSQL NOTIFY, scoped to the
   * schema; for SQLite, which serves one process, the listeners of this process on the same file).
   */
  notify(topic: string): Promise<void>;
  /**
   * A signal with a payload (at most NOTIFY_PAYLOAD_LIMIT bytes of UTF-8) that belongs to the
   * transaction `trx` of this database: listeners hear it only after that transaction committed,
   * and never when it (or the savepoint around the call) rolled back. PostgreSQL: NOTIFY inside
   * the transaction, delivered at commit, in commit order, to the listeners of every process.
   * SQLite (one connection per process, transactions one after the other): emitted once the
   * connection is free again, i.e. after the transaction ended; it may then also have rolled back,
   * so listeners must treat the payload as a hint to read committed rows, not as the rows.
   * Several payloads are several signals, in their order, sent in one statement (on PostgreSQL a
   * NOTIFY outside a transaction is a commit of its own, which serializes on the server's notify
   * lock: one statement for a burst of signals keeps that to one commit).
   */
  notifyIn(trx: Executor<DB>, topic: string, payload: string | readonly string[]): Promise<void>;
  /**
   * Calls `onSignal` for each `notify(topic)` (payload '') and `notifyIn` (its payload), and once
   * with no payload after a lost connection came back (signals may have been missed meanwhile).
   * Resolves to the function that stops listening.
   */
  listen(topic: string, onSignal: (payload?: string) => void): Promise<() => Promise<void>>;
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
   * mode; FULL also survives power loss at the price of one fsync per commit, which for a file runs
   * in the thread pool after the commit instead of inside it (`walSync`, decision 0041).
   */
  readonly sqliteSynchronous?: 'NORMAL' | 'FULL';
  /**
   * Whether statements compiled once (`compiled-once.ts`) are compiled again on every run and compared
   * with the cached SQL: slower, for tests (DB_VERIFY_STATEMENT_CACHE).
   */
  readonly verifyStatementCache?: boolean;
  /**
   * PostgreSQL: name the statements run often on each connection, so the server parses and plans
   * them once (`pg-prepared.ts`, decision 0054; DB_PREPARED_STATEMENTS). On by default.
   */
  readonly preparedStatements?: boolean;
}

/**
 * The PostgreSQL NOTIFY channel of `topic` in `schema`: channels are global to the database, so
 * there is one per topic and schema, within 63 bytes (a process outside the service that wants
 * the same signals, such as bench:ws, LISTENs on this name).
 */
export function notifyChannel(topic: string, schema: string | null | undefined): string {
  return `${topic}_${createHash('sha256')
    .update(schema ?? '')
    .digest('hex')
    .slice(0, 16)}`;
}

/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; leaves room for the channel name. */
export const NOTIFY_PAYLOAD_LIMIT = 7900;

function checkPayload(payload: string): void {
  if (Buffer.byteLength(payload) > NOTIFY_PAYLOAD_LIMIT)
    throw new Error(`notify payload of ${Buffer.byteLength(payload)} bytes exceeds ${NOTIFY_PAYLOAD_LIMIT}`);
}

function payloadsOf(payload: string | readonly string[]): readonly string[] {
  const payloads = typeof payload === 'string' ? [payload] : payload;
  for (const p of payloads) checkPayload(p);
  return payloads;
}

/** How many pg_notify calls one statement carries (PostgreSQL allows 1,664 result columns). */
const NOTIFY_BATCH = 200;

export async function openDatabase<DB>(options: OpenDatabaseOptions): Promise<Database<DB>> {
  const database = await open<DB>(options);
  // Kysely instances and their transactions share one adapter.
  if (options.verifyStatementCache) markVerifying(database.db.getExecutor().adapter);
  return database;
}

async function open<DB>(options: OpenDatabaseOptions): Promise<Database<DB>> {
  const url = options.url;
  if (url && /^postgres(ql)?:\/\//.test(url))
    return openPostgres<DB>(url, options.poolSize ?? 10, options.preparedStatements ?? true);
  let file: string;
  if (url) {
    if (!url.startsWith('sqlite:'))
      throw new Error(`Unsupported database URL "${redactUrl(url)}": use postgres://… or sqlite:/path/file.db`);
    file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  } else {
    file = path.join(options.dataDir, options.defaultFile);
  }
  return openSqlite<DB>(file, options.sqliteSynchronous ?? 'NORMAL');
}

/**
 * The page cache of each SQLite connection, in KiB (SQLite's default is 2,000). The search index's
 * FTS5 merges read back segments at every commit; with the default, the pages of a growing index
 * fall out of the cache between commits and every merge reads them from the file again, so a
 * commit's cost grew with the index (decision 0026). The cache fills only as pages are read or
 * written, and a big send fills it too: 64 MiB cost other tenants' latency during big sends
 * (the bigsend bench's p99), 32 MiB did not.
 */
export const SQLITE_CACHE_KIB = 32_768;

/**
 * Where SQLite keeps its temporary files, the savepoint (statement) journals among them. Each unit
 * of a group-commit batch runs in a savepoint, and every page a unit changes first goes to that
 * journal; past 64 KiB SQLite's default moves it to a temporary file on disk, three write system
 * calls per page, on the event loop. In memory it stays within the pages a batch changes
 * (bench/README.md, "Inbox service: SMTP", 2026-11-24). A sort that outgrows the page cache would
 * stay in memory too rather than spill to a file.
 */
export const SQLITE_TEMP_STORE = 'MEMORY';

/**
 * The fsync of a SQLite database's WAL, in libuv's thread pool rather than on the event loop
 * (decision 0041). With `synchronous = FULL` SQLite syncs the WAL inside every COMMIT, and for the
 * 6 ms that takes on this machine no SMTP session is greeted or answered. At `NORMAL` a COMMIT only
 * writes its frames (they survive a crash of the process: the kernel holds them); one
 * `fdatasync` of the WAL afterwards makes every frame written so far durable against power loss
 * too, and WAL recovery replays the committed ones on the next open.
 *
 * `sync()` resolves once a sync that began after the call finished: one that is already running
 * may have begun before the caller's commit, so callers arriving meanwhile share the next one.
 * Under load that is one fsync for all the commits of a few milliseconds.
 */
export interface WalSync {
  sync(): Promise<void>;
  close(): Promise<void>;
}

export function walSync(file: string): WalSync {
  const wal = `${path.resolve(file)}-wal`;
  let handle: Promise<FileHandle> | undefined;
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const run = (async () => {
      // The WAL keeps its inode while a connection is open (a checkpoint truncates it in place),
      // so one handle, opened by the first commit, serves every sync.
      handle ??= openFile(wal, 'r+');
      await (await handle).datasync();
    })();
    running = run.finally(() => {
      running = undefined;
    });
    return running;
  };
  return {
    sync() {
      if (!running) return start();
      next ??= running.then(
        () => {
          next = undefined;
          return start();
        },
        () => {
          next = undefined;
          return start();
        },
      );
      return next;
    },
    async close() {
      await Promise.allSettled([running, next]);
      const h = handle;
      handle = undefined;
      if (h) await (await h.catch(() => undefined))?.close();
    },
  };
}

/** Statements after which, outside a transaction, the database holds new committed changes. */
const ENDS_TRANSACTION = /^\s*(commit|end|release)\b/i;

function openSqlite<DB>(file: string, synchronous: 'NORMAL' | 'FULL'): Database<DB> {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const sqlite = new Sqlite(file);
  sqlite.pragma('journal_mode = WAL');
  // FULL is kept as NORMAL plus the WAL's fsync off the event loop (walSync) on a file.
  const wal = synchronous === 'FULL' && file !== ':memory:' ? walSync(file) : undefined;
  sqlite.pragma(`synchronous = ${wal ? 'NORMAL' : synchronous}`);
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  // Savepoint journals in memory (see SQLITE_TEMP_STORE).
  sqlite.pragma(`temp_store = ${SQLITE_TEMP_STORE}`);
  const cached = withStatementCache(sqlite);
  /** Whether `source`, just run, left committed changes that the WAL's fsync must make durable. */
  const committed = (source: string): boolean =>
    !sqlite.inTransaction && (ENDS_TRANSACTION.test(source) || !cached.prepare(source).readonly);
  const db = new Kysely<DB>({
    dialect: new SqliteDialect({
      database: cached,
      // Every statement of Kysely's one connection: a COMMIT, or a write outside a transaction,
      // settles only once the WAL is synced, so whoever awaits it (a 250, an API answer) knows the
      // change is durable, as with FULL; the event loop serves others meanwhile.
      onCreateConnection: wal
        ? async (connection) => {
            const execute = connection.executeQuery.bind(connection);
            connection.executeQuery = async <R>(query: CompiledQuery) => {
              // Set by the commit batcher just before its COMMIT, the only statement that can run
              // while its transaction holds the connection.
              const deferred = deferNext;
              deferNext = false;
              const result = await execute<R>(query);
              if (!deferred && committed(query.sql)) await wal.sync();
              return result;
            };
          }
        : undefined,
    }),
  });
  let deferNext = false;
  if (wal)
    setCommitSync(db, {
      deferNext: () => void (deferNext = true),
      sync: () => wal.sync(),
    });
  // A second, read-only connection on the same file, for reads outside a transaction that arrive
  // while a write transaction holds the first one (a big send stores its copies over several
  // turns of the event loop): WAL lets it read the last committed state meanwhile, so such reads
  // need not wait for the writer's COMMIT. Opened on first use; a `:memory:` database has none.
  let reader: Sqlite.Database | undefined;
  /** Set while the checkpoint thread finishes the WAL with the writes held back (below). */
  let quiet = false;
  const readerOf = () => (reader ??= withStatementCache(openSqliteReader(file)));
  /** Runs a statement on the service's connection: its rows, or none for a statement without. */
  const run = (stmt: Sqlite.Statement, parameters: readonly unknown[]): unknown[] =>
    stmt.reader ? stmt.all(parameters as unknown[]) : (stmt.run(parameters as unknown[]), []);
  setDirectRunner(db, (sql, parameters) => {
    if (!sqlite.open) return undefined;
    if (sqlite.inTransaction) {
      // Writes, and reads of an in-memory database, queue behind the transaction as usual.
      if (file === ':memory:') return undefined;
      const stmt = readerOf().prepare(sql);
      // `reader` alone would take an INSERT … RETURNING too.
      return stmt.reader && stmt.readonly ? stmt.all(parameters as unknown[]) : undefined;
    }
    const stmt = cached.prepare(sql);
    // While the checkpoint thread finishes the WAL a write waits for it, through Kysely's connection.
    if (quiet && !stmt.readonly) return undefined;
    const rows = run(stmt, parameters);
    // A write outside a transaction (an autocommit) is answered once durable, as through Kysely.
    return wal && !stmt.readonly ? wal.sync().then(() => rows) : rows;
  });
  // A statement of the transaction that holds the connection (driver.ts `transactionRunner`):
  // inside it nothing commits, so nothing waits for the WAL's sync either.
  setTransactionRunner(db.getExecutor().adapter, (sql, parameters) => {
    if (!sqlite.open || !sqlite.inTransaction) return undefined;
    return run(cached.prepare(sql), parameters);
  });
  // Checkpoints (copying the WAL into the file, and its fsync) in a thread of their own. Holding
  // Kysely's one connection keeps every transaction and every write through Kysely out; `quiet`
  // sends the direct runner's writes there too.
  const checkpointer =
    file === ':memory:'
      ? undefined
      : checkpointOffThread(sqlite, file, {
          quiet: (work) =>
            db.connection().execute(async () => {
              quiet = true;
              try {
                return await work();
              } finally {
                quiet = false;
              }
            }),
        });
  const signals = sqliteSignals(file);
  /** The signals of `notifyIn` waiting for the connection to be free (below). */
  let waiting: [string, readonly string[]][] | undefined;
  return {
    db,
    commits: commitsOf(db),
    dialect: 'sqlite',
    description: `sqlite:${file}`,
    async ping() {
      sqlite.prepare('select 1').get();
    },
    async notify(topic) {
      signals.emit(topic, '');
    },
    async notifyIn(_trx, topic, payload) {
      const given: [string, readonly string[]] = [topic, payloadsOf(payload)];
      if (waiting) return void waiting.push(given);
      // The one connection is held by the transaction until it ends: it is ours only after the
      // COMMIT (or ROLLBACK), and only then are the signals given. Every signal given meanwhile
      // joins this list (a batch's units, the signals of a send), so one wait serves them all;
      // taking the connection closes the list, so a later transaction's signals wait for it to
      // end in turn. Not awaited: the caller is inside that transaction.
      const list = [given];
      waiting = list;
      void db
        .connection()
        .execute(async () => {
          if (waiting === list) waiting = undefined;
        })
        .then(
          () => {
            for (const [t, payloads] of list) for (const p of payloads) signals.emit(t, p);
          },
          // The database was closed: these signals are moot, and later ones must not join them.
          () => {
            if (waiting === list) waiting = undefined;
          },
        )
        .catch(() => undefined);
    },
    async listen(topic, onSignal) {
      signals.on(topic, onSignal);
      return async () => void signals.off(topic, onSignal);
    },
    async destroy() {
      // A checkpoint the thread has under way writes to the file: the file is not the caller's
      // to copy or remove until it has ended.
      await checkpointer?.stop();
      reader?.close();
      await db.destroy();
      await wal?.close();
    },
  };
}

/** The read-only connection of `openSqlite`: it never writes, so it never takes SQLite's write lock. */
function openSqliteReader(file: string): Sqlite.Database {
  const reader = new Sqlite(file, { readonly: true });
  reader.pragma('busy_timeout = 5000');
  reader.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  return reader;
}

/** One emitter per SQLite file in this process: every `Database` opened on it hears the others. */
const SQLITE_SIGNALS = new Map<string, EventEmitter>();
function sqliteSignals(file: string): EventEmitter {
  const key = file === ':memory:' ? `${file}:${Math.random()}` : path.resolve(file);
  let emitter = SQLITE_SIGNALS.get(key);
  if (!emitter) {
    emitter = new EventEmitter();
    emitter.setMaxListeners(0);
    SQLITE_SIGNALS.set(key, emitter);
  }
  return emitter;
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

/** The PostgreSQL advisory lock that serializes creating and migrating one schema. */
export function schemaLockKey(schema: string): string {
  return `agent-services:schema:${schema}`;
}

/** pg, loaded by the first PostgreSQL database a process opens (a SQLite process never loads it). */
const loadPg = async (): Promise<typeof pg> => (await import('pg')).default;

async function openPostgres<DB>(rawUrl: string, poolSize: number, prepared: boolean): Promise<Database<DB>> {
  const pg = await loadPg();
  const url = new URL(rawUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    throw new Error(`Invalid schema name "${schema}" in database URL`);
  // Numbers that pg would hand back as strings: bigint counts. Our ids and counts fit in 2^53.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));
  if (schema) {
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      // `create schema if not exists` is not safe against itself: instances starting at once on
      // an empty database take the schema's lock first (the one the migrations take too).
      await admin.query('select pg_advisory_lock(hashtext($1))', [schemaLockKey(schema)]);
      await admin.query(`create schema if not exists "${schema}"`);
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: poolSize,
    ...(prepared ? { Client: namingClient(pg) } : {}),
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  setDirectRunner(db, async (sql, parameters) => (await pool.query(sql, parameters as unknown[])).rows);
  const channel = (topic: string) => notifyChannel(topic, schema);
  return {
    db,
    commits: commitsOf(db),
    dialect: 'postgres',
    description: redactUrl(rawUrl),
    async ping() {
      await pool.query('select 1');
    },
    async notify(topic) {
      await pool.query('select pg_notify($1, $2)', [channel(topic), '']);
    },
    async notifyIn(trx, topic, payload) {
      const payloads = payloadsOf(payload);
      const name = channel(topic);
      // Outside a transaction the statement is a commit of its own that holds the server's notify
      // lock until it is flushed; a signal is a hint (a lost one is like a listener's reconnect),
      // so that commit does not wait for the WAL's flush (synchronous_commit off, for it alone).
      const unflushed = trx.isTransaction ? [] : [sql`set_config('synchronous_commit', 'off', true)`];
      for (let i = 0; i < payloads.length; i += NOTIFY_BATCH) {
        const batch = payloads.slice(i, i + NOTIFY_BATCH);
        await runSqlOnce(
          trx,
          `pg_notify:${unflushed.length}:${batch.length}`,
          batch.flatMap((p) => [name, p]),
          () => sql`select ${sql.join([...unflushed, ...batch.map((p) => sql`pg_notify(${name}, ${p})`)])}`,
        );
      }
    },
    listen: (topic, onSignal) => listenPostgres(url.toString(), channel(topic), onSignal),
    async destroy() {
      await db.destroy();
    },
  };
}

/**
 * LISTEN on a connection of its own (a pooled one would be handed to queries), reconnecting every
 * second while the server is away; `onSignal` is also called after a reconnect.
 */
async function listenPostgres(
  connectionString: string,
  channel: string,
  onSignal: (payload?: string) => void,
): Promise<() => Promise<void>> {
  let closed = false;
  const pg = await loadPg();
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString });
    c.on('notification', (m) => {
      if (m.channel === channel) onSignal(m.payload ?? '');
    });
    c.on('error', () => reconnect(c));
    c.on('end', () => reconnect(c));
    await c.connect();
    await c.query(`listen "${channel}"`);
    client = c;
  };
  const reconnect = (c: pg.Client) => {
    if (closed || client !== c || retry) return;
    client = undefined;
    c.end().catch(() => undefined);
    const attempt = () => {
      retry = undefined;
      if (closed) return;
      connect()
        .then(() => onSignal())
        .catch(() => (retry = setTimeout(attempt, 1_000).unref()));
    };
    retry = setTimeout(attempt, 1_000).unref();
  };
  await connect();
  return async () => {
    closed = true;
    if (retry) clearTimeout(retry);
    await client?.end().catch(() => undefined);
  };
}
