import { sql, type Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { Executor } from '../db/database.js';
import { dialectOf } from '../db/dialect.js';
import type { Selectable } from 'kysely';
import type { JobsDatabase, JobTable } from './jobs.table.js';

/**
 * A durable job queue in the service's own database (the outbox pattern): work is enqueued in
 * the same transaction as the change that caused it, so a crash can repeat a job but never lose
 * one. Jobs are claimed with a lease; a worker that dies leaves the lease to expire and the job
 * runs again. PostgreSQL claims with FOR UPDATE SKIP LOCKED, so several workers may run; SQLite
 * has one writer and one runner.
 */

export interface Job<P = unknown> {
  readonly id: number;
  readonly queue: string;
  readonly payload: P;
  /** 1 on the first run. */
  readonly attempt: number;
  readonly createdAt: string;
}

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
  /** Delay before attempt n+1 after attempt n failed, ms; `undefined` = no more attempts. */
  readonly backoff: (attempt: number) => number | undefined;
  /** Called once when a job runs out of attempts (or gives up). */
  readonly onDead?: (job: Job<P>, error: Error) => Promise<void>;
  /**
   * Longest one `handle` may run, ms (e.g. an HTTP timeout). The lease is stretched to cover it,
   * so that another worker never claims a job that is still running.
   */
  readonly maxRunMs?: number;
}

/** Time a lease leaves beyond a queue's `maxRunMs`, for recording the outcome. */
const LEASE_MARGIN_MS = 30_000;

export interface JobRunnerOptions {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the runner touches only the jobs table
  readonly db: Kysely<any>;
  readonly clock: Clock;
  readonly queues: Readonly<Record<string, QueueDefinition<never>>>;
  readonly log: { warn(o: object, msg: string): void; error(o: object, msg: string): void };
  /** Jobs claimed per poll. */
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
  await trx
    .insertInto('jobs')
    .values(jobs.map((j) => ({ queue: j.queue, payload: JSON.stringify(j.payload), status: 'pending' as const, run_at: now, attempts: 0, locked_until: null, last_error: null, created_at: now, updated_at: now })))
    .execute();
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
  const queueNames = Object.keys(queues);

  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let loop: Promise<void> | undefined;
  let wake = false;

  async function claim(): Promise<Selectable<JobTable>[]> {
    const now = clock.now();
    const nowIso = iso(now);
    const lease = iso(new Date(now.getTime() + leaseMs));
    const due = db
      .selectFrom('jobs')
      .select('id')
      .where('status', '=', 'pending')
      .where('run_at', '<=', nowIso)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', nowIso)]))
      .where('queue', 'in', queueNames)
      .orderBy('run_at')
      .limit(batchSize);
    return db
      .updateTable('jobs')
      .set((eb) => ({ locked_until: lease, attempts: eb('attempts', '+', 1), updated_at: nowIso }))
      .where('id', 'in', postgres ? due.forUpdate().skipLocked() : due)
      .returningAll()
      .execute();
  }

  async function runOne(row: Selectable<JobTable>): Promise<void> {
    const queue = queues[row.queue] as QueueDefinition<unknown> | undefined;
    const job: Job = { id: Number(row.id), queue: row.queue, payload: JSON.parse(row.payload) as unknown, attempt: row.attempts, createdAt: row.created_at };
    if (!queue) return;
    try {
      await queue.handle(job);
      await db.updateTable('jobs').set({ status: 'done', locked_until: null, last_error: null, updated_at: iso(clock.now()) }).where('id', '=', job.id).execute();
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const exact = err instanceof RetryJob ? err.at : undefined;
      const delay = err instanceof GiveUpJob ? undefined : exact ? 0 : queue.backoff(job.attempt);
      if (delay === undefined) {
        await db.updateTable('jobs').set({ status: 'dead', locked_until: null, last_error: error.message.slice(0, 2000), updated_at: iso(clock.now()) }).where('id', '=', job.id).execute();
        log.warn({ job: job.id, queue: job.queue, attempt: job.attempt, err: error.message }, 'job failed for the last time');
        await queue.onDead?.(job, error).catch((e: unknown) => log.error({ err: e, job: job.id }, 'onDead hook failed'));
        return;
      }
      let next = exact ? exact.getTime() : clock.now().getTime() + delay;
      if (err instanceof RetryJob && err.notBefore) next = Math.max(next, err.notBefore.getTime());
      await db
        .updateTable('jobs')
        .set({ run_at: iso(new Date(next)), locked_until: null, last_error: error.message.slice(0, 2000), updated_at: iso(clock.now()) })
        .where('id', '=', job.id)
        .execute();
    }
  }

  async function tick(): Promise<number> {
    const rows = await claim();
    await Promise.all(rows.map((row) => runOne(row)));
    return rows.length;
  }

  async function run(): Promise<void> {
    while (running) {
      wake = false;
      let n = 0;
      try {
        n = await tick();
      } catch (err) {
        log.error({ err }, 'job runner tick failed');
      }
      if (!running) break;
      if (n > 0 || wake) continue;
      await new Promise<void>((resolve) => {
        timer = setTimeout(resolve, pollMs);
        resume = resolve;
      });
    }
  }
  let resume: (() => void) | undefined;

  return {
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    notify() {
      wake = true;
      if (timer) clearTimeout(timer);
      resume?.();
    },
    async drain() {
      let total = 0;
      for (;;) {
        const n = await tick();
        total += n;
        if (n === 0) return total;
      }
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      resume?.();
      await loop;
    },
  };
}

/** Counts of jobs by queue and status, for /metrics and tests. */
export async function jobCounts(db: Kysely<JobsDatabase>): Promise<{ queue: string; status: string; n: number }[]> {
  const rows = await db.selectFrom('jobs').select(['queue', 'status', sql<number>`count(*)`.as('n')]).groupBy(['queue', 'status']).execute();
  return rows.map((r) => ({ queue: r.queue, status: r.status, n: Number(r.n) }));
}
