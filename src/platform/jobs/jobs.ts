import { sql, type Kysely, type Transaction, type Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import type { Executor } from '../db/types.js';
import { dialectOf } from '../db/dialect.js';
import { insertCompiledOnce } from '../db/compiled-once.js';
import type { JobsDatabase, JobTable } from './jobs.table.js';

/**
 * A durable job queue in the service's own database (the outbox pattern): work is enqueued in
 * the same transaction as the change that caused it, so a crash can repeat a job but never lose
 * one. Jobs are claimed with a lease of their queue's length, which the runner renews (a
 * heartbeat) while the handler runs: a live worker keeps its job however long it takes, and the
 * job of a worker that died is taken over one lease after the last renewal. PostgreSQL claims
 * with FOR UPDATE SKIP LOCKED, so several workers may run; SQLite has one writer and one runner.
 *
 * A handler whose work ends in a transaction of its own (events, say) ends the job in that same
 * transaction with `job.finish(trx, …)`: the job's end then commits with its effects or not at
 * all. Otherwise the runner records the end after the handler returned, in a statement of its
 * own, and a crash in between runs the job again. Every update of a claimed job is fenced by the
 * claim (the attempt number it claimed, which every claim raises): a run whose lease ran out and
 * was taken over changes nothing.
 *
 * Each queue has its own claim loop, which waits for the batch it claimed before claiming more:
 * a queue whose jobs take minutes (a relay that does not answer) holds up only itself.
 *
 * Wake-ups: `notify()` after a commit that enqueued work wakes this process's runner, if it runs,
 * and every other runner on the database through `wakeups` (PostgreSQL NOTIFY; in-process for
 * SQLite, which serves one process). The poll is only the fallback.
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
   * How long a claim of this queue holds without renewal, ms; default: the runner's `leaseMs`. The
   * runner renews it every third of that while the job runs, so it bounds how long a dead
   * worker's job waits for another worker, not how long a job may run.
   */
  readonly leaseMs?: number;
  /** Jobs of this queue claimed at once, and so run in parallel, by one runner; default: the runner's `batchSize`. */
  readonly concurrency?: number;
}

export interface JobRunnerOptions {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the runner touches only the jobs table
  readonly db: Kysely<any>;
  readonly clock: Clock;
  readonly queues: Readonly<Record<string, QueueDefinition<never>>>;
  readonly log: { warn(o: object, msg: string): void; error(o: object, msg: string): void };
  /** Jobs claimed per poll, per queue (unless the queue sets its `concurrency`). */
  readonly batchSize?: number;
  /** Lease of the queues that set none, ms (see `QueueDefinition.leaseMs`). */
  readonly leaseMs?: number;
  /** How often running jobs' leases are renewed, ms; default: a third of each queue's lease. */
  readonly heartbeatMs?: number;
  /** Poll interval when idle, ms: the fallback when a wake-up is missed. */
  readonly pollMs?: number;
  /** Wake-ups between the processes on one database (see `Database.notify` and `listen`). */
  readonly wakeups?: JobWakeups;
}

/** A signal without payload, published by whoever enqueued work and heard by every runner. */
export interface JobWakeups {
  notify(): Promise<void>;
  /** Calls `onWake` on every signal (and after a reconnect, when signals may have been missed). */
  listen(onWake: () => void): Promise<() => Promise<void>>;
}

/** Lease of a queue that sets none: a dead worker's jobs wait at most this long (plus a poll). */
export const DEFAULT_LEASE_MS = 20_000;

/** Svix's schedule, with ±10 % jitter: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27.6 h). */
export const SVIX_SCHEDULE_MS: readonly number[] = [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6];

export function scheduleBackoff(
  schedule: readonly number[],
  jitter = 0.1,
  random: () => number = Math.random,
): (attempt: number) => number | undefined {
  return (attempt) => {
    const base = schedule[attempt - 1];
    if (base === undefined) return undefined;
    return Math.round(base * (1 + jitter * (2 * random() - 1)));
  };
}

const iso = (d: Date) => d.toISOString();

export async function enqueue<DB extends JobsDatabase>(
  executor: Executor<DB>,
  clock: Clock,
  queue: string,
  payload: unknown,
  runAt?: Date,
): Promise<number> {
  const trx = executor as unknown as Executor<JobsDatabase>;
  const now = iso(clock.now());
  const row = await trx
    .insertInto('jobs')
    .values({
      queue,
      payload: JSON.stringify(payload),
      status: 'pending',
      run_at: runAt ? iso(runAt) : now,
      attempts: 0,
      locked_until: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function enqueueMany<DB extends JobsDatabase>(
  executor: Executor<DB>,
  clock: Clock,
  jobs: readonly { queue: string; payload: unknown }[],
): Promise<void> {
  if (!jobs.length) return;
  const trx = executor as unknown as Executor<JobsDatabase>;
  const now = iso(clock.now());
  const rows = jobs.map((j) => ({
    queue: j.queue,
    payload: JSON.stringify(j.payload),
    status: 'pending' as const,
    run_at: now,
    attempts: 0,
    locked_until: null,
    last_error: null,
    created_at: now,
    updated_at: now,
  }));
  await insertCompiledOnce(trx, 'jobs.insert', rows, () => trx.insertInto('jobs').values(rows));
}

/**
 * Withdraws a pending job that no run holds (its time has not come, or it waits for a retry), in
 * the caller's transaction: it ends as `done` with `last_error` "cancelled" and never runs.
 * Returns false when the job is running, ended or unknown: the handler then runs (or ran) and
 * must find out for itself that its work is gone (a scheduled draft deleted, say).
 */
export async function cancelJob<DB extends JobsDatabase>(
  executor: Executor<DB>,
  clock: Clock,
  id: number,
): Promise<boolean> {
  const trx = executor as unknown as Executor<JobsDatabase>;
  const result = await trx
    .updateTable('jobs')
    .set({ status: 'done', last_error: 'cancelled', updated_at: iso(clock.now()) })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('locked_until', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export interface JobRunner {
  start(): void;
  /** Wakes the runners now, in this process (if started) and in others (call after a commit that enqueued work). */
  notify(): void;
  /** Runs due jobs until none is left, the claim loops' included; for tests and the command line. */
  drain(): Promise<number>;
  /** Stops claiming and waits for running jobs. */
  stop(): Promise<void>;
}

export function createJobRunner(options: JobRunnerOptions): JobRunner {
  const db = options.db as Kysely<JobsDatabase>;
  const { clock, queues, log, wakeups } = options;
  const batchSize = options.batchSize ?? 20;
  const pollMs = options.pollMs ?? 1_000;
  const postgres = dialectOf(options.db) === 'postgres';

  /** One claim loop per queue, so that a slow queue does not hold up the others. */
  interface Lane {
    readonly queue: string;
    readonly size: number;
    readonly leaseMs: number;
    /** Jobs this lane runs now, by id: the attempt each claimed, whose lease the heartbeat renews. */
    readonly held: Map<number, number>;
    heartbeat: NodeJS.Timeout | undefined;
    wake: boolean;
    timer: NodeJS.Timeout | undefined;
    resume: (() => void) | undefined;
    loop: Promise<void> | undefined;
    /** The claim loop's batch under way, which `drain()` waits for: it may hold jobs that are due. */
    ticking: Promise<number> | undefined;
  }
  const lanes: Lane[] = Object.entries(queues).map(([queue, q]) => ({
    queue,
    size: q.concurrency ?? batchSize,
    leaseMs: q.leaseMs ?? options.leaseMs ?? DEFAULT_LEASE_MS,
    held: new Map(),
    heartbeat: undefined,
    wake: false,
    timer: undefined,
    resume: undefined,
    loop: undefined,
    ticking: undefined,
  }));
  let running = false;
  let unlisten: (() => Promise<void>) | undefined;

  async function claim(lane: Lane): Promise<Selectable<JobTable>[]> {
    const now = clock.now();
    const nowIso = iso(now);
    const lease = iso(new Date(now.getTime() + lane.leaseMs));
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

  /**
   * An update of a job this run claimed: changes nothing once the job ended or another run took it
   * (every claim raises `attempts`, so the attempt number is the claim's token).
   */
  const ours = (executor: Executor<JobsDatabase>, id: number, attempt: number) =>
    executor
      .updateTable('jobs')
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('attempts', '=', attempt)
      .where('locked_until', 'is not', null);

  const updated = (result: { numUpdatedRows: bigint }) => result.numUpdatedRows > 0n;

  /** Renews the leases of the jobs a lane runs, in one statement; a job another run took is let go. */
  async function renew(lane: Lane): Promise<void> {
    const held = [...lane.held];
    if (!held.length) return;
    const now = clock.now();
    const renewed = await db
      .updateTable('jobs')
      .set({ locked_until: iso(new Date(now.getTime() + lane.leaseMs)), updated_at: iso(now) })
      .where('status', '=', 'pending')
      .where('locked_until', 'is not', null)
      .where((eb) => eb.or(held.map(([id, attempt]) => eb.and([eb('id', '=', id), eb('attempts', '=', attempt)]))))
      .returning('id')
      .execute();
    const kept = new Set(renewed.map((r) => Number(r.id)));
    for (const [id, attempt] of held) {
      // Ended in the meantime (by the handler's own transaction), or taken over by another run.
      if (!kept.has(id) && lane.held.get(id) === attempt) lane.held.delete(id);
    }
  }

  function startHeartbeat(lane: Lane): void {
    if (lane.heartbeat) return;
    const every = options.heartbeatMs ?? Math.max(10, Math.floor(lane.leaseMs / 3));
    let busy = false;
    lane.heartbeat = setInterval(() => {
      if (busy) return;
      busy = true;
      renew(lane)
        .catch((err: unknown) => log.error({ err, queue: lane.queue }, 'renewing job leases failed'))
        .finally(() => (busy = false));
    }, every);
    lane.heartbeat.unref();
  }

  function stopHeartbeat(lane: Lane): void {
    if (lane.held.size || !lane.heartbeat) return;
    clearInterval(lane.heartbeat);
    lane.heartbeat = undefined;
  }

  async function runOne(lane: Lane, row: Selectable<JobTable>): Promise<void> {
    const queue = queues[row.queue] as QueueDefinition<unknown> | undefined;
    const id = Number(row.id);
    const attempt = row.attempts;
    /** Set once the handler ended the job in its transaction (which may still roll back). */
    let finishedAs: JobEnd['status'] | undefined;
    const job: Job = {
      id,
      queue: row.queue,
      payload: JSON.parse(row.payload) as unknown,
      attempt,
      createdAt: row.created_at,
      async finish(executor, end) {
        const result = await ours(executor as unknown as Executor<JobsDatabase>, id, attempt)
          .set({
            status: end.status,
            locked_until: null,
            last_error: end.status === 'dead' ? end.error.slice(0, 2000) : null,
            updated_at: iso(clock.now()),
          })
          .executeTakeFirst();
        if (!updated(result))
          throw new Error(`job ${id} is no longer held by this run (its lease ran out and another run took it)`);
        finishedAs = end.status;
      },
    };
    if (!queue) return;
    lane.held.set(id, attempt);
    startHeartbeat(lane);
    try {
      await settle(queue, job, () => finishedAs);
    } finally {
      if (lane.held.get(id) === attempt) lane.held.delete(id);
      stopHeartbeat(lane);
    }
  }

  /** Runs the handler and records how the job ended, fenced by the claim. */
  async function settle(
    queue: QueueDefinition<unknown>,
    job: Job,
    finishedAs: () => JobEnd['status'] | undefined,
  ): Promise<void> {
    const { id, attempt } = job;
    try {
      await queue.handle(job);
      await ours(db, id, attempt)
        .set({ status: 'done', locked_until: null, last_error: null, updated_at: iso(clock.now()) })
        .execute();
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const exact = err instanceof RetryJob ? err.at : undefined;
      const delay = err instanceof GiveUpJob ? undefined : exact ? 0 : queue.backoff(job.attempt, job);
      const context = { job: id, queue: job.queue, attempt: job.attempt, err: error.message };
      if (delay === undefined) {
        const dead = {
          status: 'dead' as const,
          locked_until: null,
          last_error: error.message.slice(0, 2000),
          updated_at: iso(clock.now()),
        };
        let marked: boolean;
        if (queue.onDead) {
          const onDead = queue.onDead;
          marked = await db
            .transaction()
            .execute(async (trx) => {
              if (!updated(await ours(trx, id, attempt).set(dead).executeTakeFirst())) return false;
              await onDead(job, error, trx);
              return true;
            })
            .catch(async (e: unknown) => {
              log.error({ err: e, job: id }, 'onDead hook failed; the job is marked dead without it');
              return updated(await ours(db, id, attempt).set(dead).executeTakeFirst());
            });
          if (marked) notify();
        } else {
          marked = updated(await ours(db, id, attempt).set(dead).executeTakeFirst());
        }
        if (marked || finishedAs() === 'dead') log.warn(context, 'job failed for the last time');
        else if (!finishedAs()) log.warn(context, 'job ended after its lease ran out; another run has it');
        return;
      }
      let next = exact ? exact.getTime() : clock.now().getTime() + delay;
      if (err instanceof RetryJob && err.notBefore) next = Math.max(next, err.notBefore.getTime());
      await ours(db, id, attempt)
        .set({
          run_at: iso(new Date(next)),
          locked_until: null,
          last_error: error.message.slice(0, 2000),
          updated_at: iso(clock.now()),
        })
        .execute();
    }
  }

  async function tick(lane: Lane): Promise<number> {
    const rows = await claim(lane);
    await Promise.all(rows.map((row) => runOne(lane, row)));
    return rows.length;
  }

  async function run(lane: Lane): Promise<void> {
    while (running) {
      lane.wake = false;
      let n = 0;
      try {
        lane.ticking = tick(lane);
        n = await lane.ticking;
      } catch (err) {
        log.error({ err, queue: lane.queue }, 'job runner tick failed');
      } finally {
        lane.ticking = undefined;
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

  // One signal in flight at a time: notifications that arrive meanwhile are folded into one more.
  let publishing = false;
  let again = false;
  function publish(): void {
    if (!wakeups) return;
    if (publishing) {
      again = true;
      return;
    }
    publishing = true;
    wakeups
      .notify()
      .catch((err: unknown) =>
        log.warn({ err }, 'job wake-up signal failed; other workers find the job at their next poll'),
      )
      .finally(() => {
        publishing = false;
        if (again) {
          again = false;
          publish();
        }
      });
  }

  function notify(): void {
    // A runner this process never started (an smtp-only process) has nothing to wake here.
    if (running) wakeAll();
    publish();
  }

  return {
    start() {
      if (running) return;
      running = true;
      for (const lane of lanes) lane.loop = run(lane);
      wakeups
        ?.listen(() => {
          if (running) wakeAll();
        })
        .then(async (close) => {
          if (running) unlisten = close;
          else await close();
        })
        .catch((err: unknown) => log.error({ err }, 'listening for job wake-ups failed; the runner polls'));
    },
    notify,
    async drain() {
      let total = 0;
      for (;;) {
        const n = (await Promise.all(lanes.map((lane) => tick(lane)))).reduce((a, b) => a + b, 0);
        total += n;
        if (n > 0) continue;
        // Nothing left to claim, but the claim loops may have taken due jobs just before: done
        // only when they have run them (and whatever those enqueued).
        const busy = lanes.flatMap((lane) => (lane.ticking ? [lane.ticking] : []));
        if (busy.length === 0) return total;
        await Promise.allSettled(busy);
      }
    },
    async stop() {
      running = false;
      wakeAll();
      await Promise.all(lanes.map((lane) => lane.loop));
      await unlisten?.();
      unlisten = undefined;
    },
  };
}

/** Counts of jobs by queue and status, for /metrics and tests. */
export async function jobCounts(db: Kysely<JobsDatabase>): Promise<{ queue: string; status: string; n: number }[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['queue', 'status', sql<number>`count(*)`.as('n')])
    .groupBy(['queue', 'status'])
    .execute();
  return rows.map((r) => ({ queue: r.queue, status: r.status, n: Number(r.n) }));
}
