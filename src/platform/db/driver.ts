/**
 * The statement runners of the databases opened by `openDatabase` (database.ts): what compiled
 * statements (`compiled-once.ts`) run on outside Kysely, and which databases verify them. Kept
 * apart from database.ts so that the dialect helpers and the commit batcher, which database.ts
 * imports, can use them without importing it back.
 */
const VERIFIED = new WeakSet<object>();

/**
 * Whether the database behind `executor` (a Kysely instance or a transaction of one opened here)
 * verifies its compiled-once statements on every run.
 */
export function verifiesStatementCache(executor: { getExecutor(): { adapter: object } }): boolean {
  return VERIFIED.has(executor.getExecutor().adapter);
}

export type DirectRunner = (sql: string, parameters: readonly unknown[]) => unknown[] | Promise<unknown[]> | undefined;

const DIRECT = new WeakMap<object, DirectRunner>();

/**
 * A runner for compiled statements on a database opened here, outside any transaction, or
 * undefined (a foreign executor, or a write while a transaction holds SQLite's connection).
 * Kysely's executor adds a connection provider, a driver wrapper and a promise chain per
 * statement, which on the hot read paths costs about as much as the statement itself.
 * - SQLite: synchronous. better-sqlite3 runs every statement on the one connection. While a
 *   transaction holds it, a read runs on the database's read-only connection (the last committed
 *   state) and a write gets undefined: the caller then goes through Kysely, which queues the
 *   statement behind that transaction.
 * - PostgreSQL: `pool.query`, the same pool and the same driver call Kysely's connection makes
 *   (checkout, one query, release), without the layers around it.
 */
export function directRunner(executor: object): DirectRunner | undefined {
  return DIRECT.get(executor);
}

/** Registers the runner of a database opened here (database.ts). */
export function setDirectRunner(executor: object, runner: DirectRunner): void {
  DIRECT.set(executor, runner);
}

const IN_TRANSACTION = new WeakMap<object, DirectRunner>();

/**
 * A runner for compiled statements inside a transaction of a database opened here, or undefined.
 * SQLite only: a transaction holds the one connection from its BEGIN to its end, so a statement
 * of that transaction can run on the connection at once, synchronously, instead of through
 * Kysely's connection provider and driver (a promise chain per statement; a send runs about
 * twenty statements in its unit). The runner returns undefined when no transaction is open on the
 * connection. `executor` is the transaction (Kysely's `isTransaction`); its database is found
 * through the adapter it shares with the Kysely instance.
 */
export function transactionRunner(executor: {
  readonly isTransaction: boolean;
  getExecutor(): { adapter: object };
}): DirectRunner | undefined {
  return executor.isTransaction ? IN_TRANSACTION.get(executor.getExecutor().adapter) : undefined;
}

/** Registers the in-transaction runner of a database opened here (database.ts), by its adapter. */
export function setTransactionRunner(adapter: object, runner: DirectRunner): void {
  IN_TRANSACTION.set(adapter, runner);
}

/** Marks a database opened here as verifying its compiled-once statements (database.ts). */
export function markVerifying(adapter: object): void {
  VERIFIED.add(adapter);
}

/**
 * The durability of a SQLite database opened with `synchronous = FULL` (database.ts `walSync`,
 * decision 0041): its COMMITs do not sync, a sync of the WAL after them does. Every COMMIT through
 * Kysely and every write outside a transaction waits for that sync before it returns, holding
 * SQLite's one connection meanwhile; the commit batcher (group-commit.ts) instead asks to skip it
 * for its COMMIT (`deferNext`), releases the connection to the next batch at once, and settles
 * the batch's units only once `sync()` resolved.
 */
export interface CommitSync {
  /** The next statement run through Kysely's connection (a batch's COMMIT) waits for no sync. */
  deferNext(): void;
  /** Resolves once every commit made before the call is durable. */
  sync(): Promise<void>;
}

const COMMIT_SYNC = new WeakMap<object, CommitSync>();

/** The commit sync of a database opened here with one (SQLite with FULL on a file), else undefined. */
export function commitSyncOf(executor: object): CommitSync | undefined {
  return COMMIT_SYNC.get(executor);
}

/** Registers the commit sync of a database opened here (database.ts). */
export function setCommitSync(executor: object, commitSync: CommitSync): void {
  COMMIT_SYNC.set(executor, commitSync);
}
