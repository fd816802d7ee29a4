import { type ControlledTransaction, type Kysely, type Transaction } from 'kysely';
import { runText } from './compiled-once.js';
import { dialectOf, isTransientConflict } from './dialect.js';
import { commitSyncOf } from './driver.js';

/**
 * Runs units of work in transactions, committing concurrent ones together in SQLite.
 *
 * SQLite has one writer, and with `synchronous = FULL` every commit waits for an fsync that costs
 * more than the work itself; units arriving while a commit is under way therefore queue up and the
 * next transaction runs them all, each inside its own savepoint, so that one unit's failure undoes
 * only that unit. A unit's promise settles after the commit that made it durable (or failed it).
 * PostgreSQL commits concurrent transactions in parallel and groups their WAL flushes itself:
 * there each unit gets its own transaction, run again when it lost a deadlock (`withRetry`).
 * Writes a unit hands to `afterUnits` run after every unit of its batch, before the COMMIT.
 *
 * A batch starts after one turn of the event loop, or later while units keep arriving: every turn
 * in which another unit joined buys one more turn, up to `maxWaitMs` after the first unit. Alone,
 * a unit waits one turn as before; under load the batches grow from the units that finished the
 * same turn (3–4 with 20 SMTP sessions) to what arrives in a few milliseconds (about 10), and the
 * fsync is paid that many times less often (bench/README.md, "Inbox service: SMTP"); it runs in
 * the thread pool while the next batch does (decision 0041).
 */
export interface GroupCommit<DB> {
  run<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T>;
}

interface Pending<DB> {
  readonly work: (trx: Transaction<DB>) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * A write a unit of work leaves to the end of its batch (`afterUnits`). `afterOthers` is true when
 * other units of the batch ran after this one, so rows this unit wrote may since have been changed
 * or deleted by them (in the same transaction).
 */
export type DeferredWrite = (afterOthers: boolean) => Promise<void>;

/** The deferred writes of the unit running on a transaction of a group commit, by transaction. */
const DEFERRED = new WeakMap<object, DeferredWrite[]>();

/**
 * Runs `write` in the unit's transaction after every unit of its batch, just before the COMMIT,
 * outside the units' savepoints; it is dropped when the unit fails. Outside a batch of SQLite's
 * group commit (PostgreSQL, the database itself, a transaction no group commit runs) `write` runs
 * at once: a PostgreSQL unit has its own transaction and no savepoint to stay out of, and deferring
 * there would keep the rows it locked last (the day's send counter) locked through the writes.
 *
 * For writes whose cost grows with every savepoint they span: an FTS5 table flushes the terms it
 * holds in memory to a new segment of its index each time a savepoint opens while it takes part
 * in the transaction, and in a batch every unit opens one. Written at the end instead, a batch's
 * search documents make one segment (decision 0026).
 */
export async function afterUnits(trx: object, write: DeferredWrite): Promise<void> {
  const deferred = DEFERRED.get(trx);
  if (deferred) deferred.push(write);
  else await write(false);
}

/** Runs `work` on `trx` as a unit of a batch: its value, and the writes it left to the batch's end. */
async function collecting<DB, T>(
  trx: Transaction<DB>,
  work: (trx: Transaction<DB>) => Promise<T>,
): Promise<{ value: T; writes: DeferredWrite[] }> {
  const writes: DeferredWrite[] = [];
  DEFERRED.set(trx, writes);
  try {
    return { value: await work(trx), writes };
  } finally {
    DEFERRED.delete(trx);
  }
}

/** Attempts of a PostgreSQL unit of work that keeps meeting deadlocks or serialization failures. */
export const MAX_ATTEMPTS = 5;

/**
 * Runs `work` in its own transaction, again (after a short random pause) when PostgreSQL aborted
 * it as a deadlock victim or a serialization failure, at most MAX_ATTEMPTS times; then the error
 * stands. A unit of work must therefore do nothing but SQL, so that running it again is safe.
 */
async function withRetry<DB, T>(db: Kysely<DB>, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work);
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isTransientConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}

export function createGroupCommit<DB>(
  db: Kysely<DB>,
  options: { maxBatch?: number; maxWaitMs?: number } = {},
): GroupCommit<DB> {
  if (dialectOf(db) === 'postgres') return { run: (work) => withRetry(db, work) };
  const maxBatch = options.maxBatch ?? 200;
  const maxWaitMs = options.maxWaitMs ?? 4;
  const queue: Pending<DB>[] = [];
  let draining = false;

  /**
   * COMMITs `trx`. With a commit sync (SQLite at FULL on a file: driver.ts `CommitSync`), the
   * COMMIT returns without one and `durable` resolves once the WAL's fsync that follows it did:
   * the connection goes to the next batch at once, and this batch's units settle only then.
   */
  async function commit(trx: ControlledTransaction<DB>): Promise<{ durable: Promise<void> }> {
    const commitSync = commitSyncOf(db);
    commitSync?.deferNext();
    await trx.commit().execute();
    return { durable: commitSync ? commitSync.sync() : Promise.resolve() };
  }

  /** Runs one unit alone in the transaction `trx` (just begun) and commits it: no savepoint needed. */
  async function runAlone(trx: ControlledTransaction<DB>, item: Pending<DB>): Promise<void> {
    let value: unknown;
    try {
      const unit = await collecting(trx, item.work);
      for (const write of unit.writes) await write(false);
      value = unit.value;
    } catch (error) {
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      item.reject(error);
      return;
    }
    let committed;
    try {
      committed = await commit(trx);
    } catch (error) {
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      item.reject(error);
      return;
    }
    // Committed but not known durable when the sync fails: answered as a failed commit.
    committed.durable.then(
      () => item.resolve(value),
      (error: unknown) => item.reject(error),
    );
  }

  async function begin(): Promise<ControlledTransaction<DB>> {
    return db.startTransaction().execute();
  }

  async function runBatch(): Promise<void> {
    let trx;
    try {
      trx = await begin();
    } catch (error) {
      // No transaction (the database is closed or unreachable): fail what is waiting, not loop.
      for (const item of queue.splice(0, maxBatch)) item.reject(error);
      return;
    }
    // Taken only now: whatever queued while BEGIN waited for the connection joins this batch.
    const batch = queue.splice(0, maxBatch);
    if (batch.length === 1) return runAlone(trx, batch[0] as Pending<DB>);
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    const deferred: DeferredWrite[] = [];
    try {
      for (const [i, item] of batch.entries()) {
        // The statements Kysely's savepoint(), rollbackToSavepoint() and releaseSavepoint()
        // send, sent on the transaction's connection itself (runText): those build a transaction
        // object per call, a measurable share of a small unit's cost.
        const name = `"unit_${i}"`;
        await runText(trx, `savepoint ${name}`, []);
        try {
          const { value, writes } = await collecting(trx, item.work);
          await runText(trx, `release ${name}`, []);
          outcomes.push({ ok: true, value });
          deferred.push(...writes);
        } catch (error) {
          await runText(trx, `rollback to ${name}`, []);
          await runText(trx, `release ${name}`, []);
          outcomes.push({ ok: false, error });
        }
      }
    } catch (error) {
      // A savepoint statement failed: nothing of the batch is durable.
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      for (const item of batch) item.reject(error);
      return;
    }
    try {
      for (const write of deferred) await write(true);
    } catch {
      // A deferred write failed, and it cannot be told apart from the rest of the batch: undo the
      // batch and run each unit again alone, so that the error reaches only the unit it belongs to.
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      for (const item of batch) {
        let alone;
        try {
          alone = await begin();
        } catch (error) {
          item.reject(error);
          continue;
        }
        await runAlone(alone, item);
      }
      return;
    }
    let committed;
    try {
      committed = await commit(trx);
    } catch (error) {
      // COMMIT failed: nothing of the batch is durable.
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      for (const item of batch) item.reject(error);
      return;
    }
    // Not awaited: the next batch runs while this one's sync does.
    committed.durable.then(
      () =>
        batch.forEach((item, i) => {
          const outcome = outcomes[i] as (typeof outcomes)[number];
          if (outcome.ok) item.resolve(outcome.value);
          else item.reject(outcome.error);
        }),
      (error: unknown) => {
        for (const item of batch) item.reject(error);
      },
    );
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length) await runBatch();
    } finally {
      draining = false;
    }
  }

  return {
    run<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
        if (draining) return;
        draining = true;
        // One turn of the event loop first, and more while others keep joining: requests that are
        // still on their way here (parsed, authenticating) join this batch instead of each opening
        // a transaction of their own.
        const first = performance.now();
        let seen = queue.length;
        const start = () => {
          if (queue.length > seen && queue.length < maxBatch && performance.now() - first < maxWaitMs) {
            seen = queue.length;
            setImmediate(start);
          } else {
            void drain();
          }
        };
        setImmediate(start);
      });
    },
  };
}

const BATCHERS = new WeakMap<object, unknown>();

/**
 * The commit batcher of a database: one per Kysely instance, created with it by `openDatabase`
 * (or on first use for an instance opened elsewhere), so that every writer of that database shares
 * its batches and its fsyncs instead of competing for the connection with batchers of their own.
 */
export function commitsOf<DB>(db: Kysely<DB>): GroupCommit<DB> {
  let commits = BATCHERS.get(db) as GroupCommit<DB> | undefined;
  if (!commits) {
    commits = createGroupCommit(db);
    BATCHERS.set(db, commits);
  }
  return commits;
}
