import { sql, type Kysely, type Transaction } from 'kysely';
import type { Clock } from '../clock.js';
import type { Executor } from '../db/database.js';
import { dialectOf } from '../db/dialect.js';
import { preparedInsert } from '../db/prepared.js';
import type { Selectable } from 'kysely';
import type { JobsDatabase, JobTable } from './jobs.table.js';

/**
 * A durable job queue in the service's own database (the outbox pattern): work is enqueued in
 * the same transaction as the change that caused it, so a crash can repeat a job but never lose
 * one. Jobs are claimed with a lease; a worker that dies leaves the lease to expire and the job
 * runs again. PostgreSQL claims with FOR UPDATE SKIP LOCKED, so several workers may run; SQLite
 * has one writer and one runner.
 *
 * A handler whose work ends in a transaction of its own (events, say) ends the job in that same
 * transaction with `job.finish(trx, …)`: the job's end then commits with its effects or not at
 * all. Otherwise the runner records the end after the handler returned, in a statement of its
 * own, and a crash in between runs the job again. Every update of a claimed job is fenced by the
 * claim's lease (`locked_until`): a run whose lease ran out and was taken over changes nothing.
 *
 * Each queue has its own claim loop, which waits for the batch it claimed before claiming more:
 * a queue whose jobs take minutes (a relay that does not answer) holds up only itself.
 */

export interface Job<P = unknown> {
  readonly id: number;
  readonly queue: string;
  readonly payload: P;
  /** 1 on the first run. */
  readonly attempt: number;
  readonly createdAt: string;
  /**
   * Ends the job in the handler's own transaction, so that the end commits together with the
   * handler's writes. Throws (and so rolls that transaction back) when the job is no longer this
   * run's: its lease ran out and another run took it. Once committed, whatever the handler
   * returns or throws no longer changes the job, and `onDead` is not called: the handler did
   * what there was to do.
   */
  finish<DB extends JobsDatabase>(executor: Executor<DB>, end: JobEnd): Promise<void>;
}

/** How a job ended: done, or dead with the reason kept in `last_error`. */
export type JobEnd = { readonly status: 'done' } | { readonly status: 'dead'; readonly error: string };

/**
 * What a handler says about a job it could not finish. `when` is either a Date, the earliest time
 * for the next attempt (e.g. from Retry-After), which the queue's backoff may push later; or
 * `{ at }`, the time of the next attempt as the handler judged it, used as is: the backoff is not
 * asked, neither for the delay nor for whether another attempt is allowed.
 */
export class RetryJob extends Error {
  /** Earliest time for the next attempt; the backoff may push it later. */
  readonly notBefore: Date | undefined;
  /** The time of the next attempt, exactly. */
  readonly at: Date | undefined;

  constructor(message: string, when?: Date | { readonly at: Date }) {
    super(message);
    this.notBefore = when instanceof Date ? when : undefined;
    this.at = when instanceof Date ? undefined : when?.at;
  }
}

/** A failure that retrying cannot fix: the job is dead at once. */
export class GiveUpJob extends Error {}

export interface QueueDefinition<P = unknown> {
  readonly handle: (job: Job<P>) => Promise<void>;
  /** Delay before attempt n+1 after attempt n (of `job`) failed, ms; `undefined` = no more attempts. */
  readonly backoff: (attempt: number, job: Job<P>) => number | undefined;
  /**
   * Called once when the runner ends a job as dead (out of attempts, or GiveUpJob), inside the
   * transaction that marks it dead: what it writes commits with the job's end. Should it throw,
   * the job is marked dead without it (and the error logged). Not called for a job the handler
   * ended itself with `job.finish`.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the hook writes to its own service's tables
  readonly onDead?: (job: Job<P>, error: Error, trx: Transaction<any>) => Promise<void>;
  /**
   * Longest one `handle` may run, ms (e.g. an HTTP timeout). The lease is stretched to cover it,
   * so that another worker never claims a job that is still running.
   */
  readonly maxRunMs?: number;
  /** Jobs of this queue claimed at once, and so run in parallel, by one runner; default: the runner's `batchSize`. */
  readonly concurrency?: number;
}

/** Time a lease leaves beyond a queue's `maxRunMs`, for recording the outcome. */
const LEASE_MARGIN_MS = 30_000;

export interface JobRunnerOptions {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the runner touches only the jobs table
  readonly db: Kysely<any>;
  readonly clock: Clock;
  readonly queues: Readonly<Record<string, QueueDefinition<never>>>;
  readonly log: { warn(o: object, msg: string): void; error(o: object, msg: string): void };
  /** Jobs claimed per poll, per queue (unless the queue sets its `concurrency`). */
  readonly batchSize?: number;
  /** How long a claimed job is reserved for its worker, ms. */
  readonly leaseMs?: number;
  /** Poll interval when idle, ms (enqueueing in this process wakes the runner at once). */
  readonly pollMs?: number;
}

/** Svix's schedule, with ±10 % jitter: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27.6 h). */
export const SVIX_SCHEDULE_MS: readonly number[] = [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6];

export function scheduleBackoff(schedule: readonly number[], jitter = 0.1, random: () => number = Math.random): (attempt: number) => number | undefined {
  return (attempt) => {
    const base = schedule[attempt - 1];
    if (base === undefined) return undefined;
    return Math.round(base * (1 + jitter * (2 * random() - 1)));
  };
}

const iso = (d: Date) => d.toISOString();

export async function enqueue<DB extends JobsDatabase>(executor: Executor<DB>, clock: Clock, queue: string, payload: unknown, runAt?: Date): Promise<number> {
  const trx = executor as unknown as Executor<JobsDatabase>;
  const now = iso(clock.now());
  const row = await trx
    .insertInto('jobs')
    .values({ queue, payload: JSON.stringify(payload), status: 'pending', run_at: runAt ? iso(runAt) : now, attempts: 0, locked_until: null, last_error: null, created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function enqueueMany<DB extends JobsDatabase>(executor: Executor<DB>, clock: Clock, jobs: readonly { queue: string; payload: unknown }[]): Promise<void> {
  if (!jobs.length) return;
  const trx = executor as unknown as Executor<JobsDatabase>;
  const now = iso(clock.now());
  const rows = jobs.map((j) => ({ queue: j.queue, payload: JSON.stringify(j.payload), status: 'pending' as const, run_at: now, attempts: 0, locked_until: null, last_error: null, created_at: now, updated_at: now }));
  await preparedInsert(trx, 'jobs.insert', rows, () => trx.insertInto('jobs').values(rows));
}

export interface JobRunner {
  start(): void;
  /** Wakes the runner now (call after a commit that enqueued work). */
  notify(): void;
  /** Runs due jobs until none is left; for tests and the command line. */
  drain(): Promise<number>;
  /** Stops claiming and waits for running jobs. */
  stop(): Promise<void>;
}

export function createJobRunner(options: JobRunnerOptions): JobRunner {
  const db = options.db as Kysely<JobsDatabase>;
  const { clock, queues, log } = options;
  const batchSize = options.batchSize ?? 20;
  const leaseMs = Math.max(options.leaseMs ?? 60_000, ...Object.values(queues).map((q) => (q.maxRunMs === undefined ? 0 : q.maxRunMs + LEASE_MARGIN_MS)));
  const pollMs = options.pollMs ?? 1_000;
  const postgres = dialectOf(options.db) === 'postgres';

  /** One claim loop per queue, so that a slow queue does not hold up the others. */
  interface Lane {
    readonly queue: string;
    readonly size: number;
    wake: boolean;
    timer: NodeJS.Timeout | undefined;
    resume: (() => void) | undefined;
    loop: Promise<void> | undefined;
  }
  const lanes: Lane[] = Object.entries(queues).map(([queue, q]) => ({ queue, size: q.concurrency ?? batchSize, wake: false, timer: undefined, resume: undefined, loop: undefined }));
  let running = false;

  async function claim(lane: Lane): Promise<Selectable<JobTable>[]> {
    const now = clock.now();
    const nowIso = iso(now);
    const lease = iso(new Date(now.getTime() + leaseMs));
    const due = db
      .selectFrom('jobs')
      .select('id')
      .where('status', '=', 'pending')
      .where('run_at', '<=', nowIso)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', nowIso)]))
      .where('queue', '=', lane.queue)
      .orderBy('run_at')
      .limit(lane.size);
    return db
      .updateTable('jobs')
      .set((eb) => ({ locked_until: lease, attempts: eb('attempts', '+', 1), updated_at: nowIso }))
      .where('id', 'in', postgres ? due.forUpdate().skipLocked() : due)
      .returningAll()
      .execute();
  }

  /** An update of a job this run claimed: changes nothing once the job ended or another run took it. */
  const ours = (executor: Executor<JobsDatabase>, id: number, lease: string | null) =>
    executor
      .updateTable('jobs')
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('locked_until', '=', lease ?? '');

  const updated = (result: { numUpdatedRows: bigint }) => result.numUpdatedRows > 0n;

  async function runOne(row: Selectable<JobTable>): Promise<void> {
    const queue = queues[row.queue] as QueueDefinition<unknown> | undefined;
    const id = Number(row.id);
    const lease = row.locked_until;
    /** Set once the handler ended the job in its transaction (which may still roll back). */
    let finishedAs: JobEnd['status'] | undefined;
    const job: Job = {
      id,
      queue: row.queue,
      payload: JSON.parse(row.payload) as unknown,
      attempt: row.attempts,
      createdAt: row.created_at,
      async finish(executor, end) {
        const result = await ours(executor as unknown as Executor<JobsDatabase>, id, lease)
          .set({ status: end.status, locked_until: null, last_error: end.status === 'dead' ? end.error.slice(0, 2000) : null, updated_at: iso(clock.now()) })
          .executeTakeFirst();
        if (!updated(result)) throw new Error(`job ${id} is no longer held by this run (its lease ran out and another run took it)`);
        finishedAs = end.status;
      },
    };
    if (!queue) return;
    try {
      await queue.handle(job);
      await ours(db, id, lease).set({ status: 'done', locked_until: null, last_error: null, updated_at: iso(clock.now()) }).execute();
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const exact = err instanceof RetryJob ? err.at : undefined;
      const delay = err instanceof GiveUpJob ? undefined : exact ? 0 : queue.backoff(job.attempt, job);
      const context = { job: id, queue: job.queue, attempt: job.attempt, err: error.message };
      if (delay === undefined) {
        const dead = { status: 'dead' as const, locked_until: null, last_error: error.message.slice(0, 2000), updated_at: iso(clock.now()) };
        let marked: boolean;
        if (queue.onDead) {
          const onDead = queue.onDead;
          marked = await db
            .transaction()
            .execute(async (trx) => {
              if (!updated(await ours(trx, id, lease).set(dead).executeTakeFirst())) return false;
              await onDead(job, error, trx);
              return true;
            })
            .catch(async (e: unknown) => {
              log.error({ err: e, job: id }, 'onDead hook failed; the job is marked dead without it');
              return updated(await ours(db, id, lease).set(dead).executeTakeFirst());
            });
          if (marked) wakeAll();
        } else {
          marked = updated(await ours(db, id, lease).set(dead).executeTakeFirst());
        }
        if (marked || finishedAs === 'dead') log.warn(context, 'job failed for the last time');
        else if (!finishedAs) log.warn(context, 'job ended after its lease ran out; another run has it');
        return;
      }
      let next = exact ? exact.getTime() : clock.now().getTime() + delay;
      if (err instanceof RetryJob && err.notBefore) next = Math.max(next, err.notBefore.getTime());
      await ours(db, id, lease)
        .set({ run_at: iso(new Date(next)), locked_until: null, last_error: error.message.slice(0, 2000), updated_at: iso(clock.now()) })
        .execute();
    }
  }

  async function tick(lane: Lane): Promise<number> {
    const rows = await claim(lane);
    await Promise.all(rows.map((row) => runOne(row)));
    return rows.length;
  }

  async function run(lane: Lane): Promise<void> {
    while (running) {
      lane.wake = false;
      let n = 0;
      try {
        n = await tick(lane);
      } catch (err) {
        log.error({ err, queue: lane.queue }, 'job runner tick failed');
      }
      if (!running) break;
      if (n > 0 || lane.wake) continue;
      await new Promise<void>((resolve) => {
        lane.timer = setTimeout(resolve, pollMs);
        lane.resume = resolve;
      });
    }
  }

  function wakeAll(): void {
    for (const lane of lanes) {
      lane.wake = true;
      if (lane.timer) clearTimeout(lane.timer);
      lane.resume?.();
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      for (const lane of lanes) lane.loop = run(lane);
    },
    notify: wakeAll,
    async drain() {
      let total = 0;
      for (;;) {
        const n = (await Promise.all(lanes.map((lane) => tick(lane)))).reduce((a, b) => a + b, 0);
        total += n;
        if (n === 0) return total;
      }
    },
    async stop() {
      running = false;
      wakeAll();
      await Promise.all(lanes.map((lane) => lane.loop));
    },
  };
}

/** Counts of jobs by queue and status, for /metrics and tests. */
export async function jobCounts(db: Kysely<JobsDatabase>): Promise<{ queue: string; status: string; n: number }[]> {
  const rows = await db.selectFrom('jobs').select(['queue', 'status', sql<number>`count(*)`.as('n')]).groupBy(['queue', 'status']).execute();
  return rows.map((r) => ({ queue: r.queue, status: r.status, n: Number(r.n) }));
}
