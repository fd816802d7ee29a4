import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/platform/clock.js';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import {
  cancelJob,
  createJobRunner,
  enqueue,
  GiveUpJob,
  jobCounts,
  RetryJob,
  scheduleBackoff,
  type Job,
} from '../../src/platform/jobs/jobs.js';
import { createJobsTable, type JobsDatabase } from '../../src/platform/jobs/jobs.table.js';
import { dialects, freshPostgresSchema } from '../support/dialects.js';

const silent = { warn: () => {}, error: () => {} };

/** A promise and the function that resolves it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe.each(dialects)('%s: durable jobs', (dialect) => {
  let database: Database<JobsDatabase>;
  let db: Kysely<JobsDatabase>;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'jobs-'));
    const pg = dialect === 'postgres' ? freshPostgresSchema() : undefined;
    database = await openDatabase<JobsDatabase>({
      url: pg ? pg.url : `sqlite:${path.join(dir, 'jobs.db')}`,
      dataDir: dir,
      defaultFile: 'x.db',
      poolSize: 4,
    });
    db = database.db;
    await migrateToLatest(db, { '0001_jobs': { up: createJobsTable } }, 'test_migrations');
    cleanup = async () => {
      await database.destroy();
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    };
  });
  afterAll(() => cleanup());
  beforeEach(async () => {
    await db.deleteFrom('jobs').execute();
  });

  it('runs an enqueued job once, with its payload, and marks it done', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const seen: Job<{ n: number }>[] = [];
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      queues: { q: { handle: async (job: Job<{ n: number }>) => void seen.push(job), backoff: () => undefined } },
    });
    await enqueue(db, clock, 'q', { n: 7 });
    expect(await runner.drain()).toBe(1);
    expect(await runner.drain()).toBe(0);
    expect(seen.map((j) => [j.payload.n, j.attempt])).toEqual([[7, 1]]);
    expect(await jobCounts(db)).toEqual([{ queue: 'q', status: 'done', n: 1 }]);
  });

  it('runs a job enqueued with a run_at no earlier than then, and a cancelled job never (a running one cannot be cancelled)', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const seen: number[] = [];
    let release: () => void = () => {};
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      queues: {
        q: {
          handle: async (job: Job<{ n: number }>) => {
            seen.push(job.payload.n);
            if (job.payload.n === 3) await new Promise<void>((resolve) => (release = resolve));
          },
          backoff: () => undefined,
        },
      },
    });
    const later = (ms: number) => new Date(clock.now().getTime() + ms);
    await enqueue(db, clock, 'q', { n: 1 }, later(60_000));
    const cancelled = await enqueue(db, clock, 'q', { n: 2 }, later(60_000));
    expect(await runner.drain()).toBe(0);
    expect(await cancelJob(db, clock, cancelled)).toBe(true);
    expect(await cancelJob(db, clock, cancelled)).toBe(false);
    clock.advance(59_999);
    expect(await runner.drain()).toBe(0);
    clock.advance(1);
    expect(await runner.drain()).toBe(1);
    expect(seen).toEqual([1]);
    const running = await enqueue(db, clock, 'q', { n: 3 });
    const drained = runner.drain();
    await expect.poll(() => seen.length).toBe(2);
    expect(await cancelJob(db, clock, running)).toBe(false);
    release();
    expect(await drained).toBe(1);
    const rows = await db.selectFrom('jobs').select(['id', 'status', 'last_error']).orderBy('id').execute();
    expect(rows.map((r) => [r.status, r.last_error])).toEqual([
      ['done', null],
      ['done', 'cancelled'],
      ['done', null],
    ]);
  });

  it('retries on the backoff schedule, honours RetryJob.notBefore, and dead-letters at the end', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const attempts: number[] = [];
    const dead: string[] = [];
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      queues: {
        q: {
          handle: async (job) => {
            attempts.push(job.attempt);
            throw job.attempt === 2
              ? new RetryJob('slow down', new Date(clock.now().getTime() + 60_000))
              : new Error(`failure ${job.attempt}`);
          },
          backoff: scheduleBackoff([1_000, 2_000], 0),
          onDead: async (_job, err) => void dead.push(err.message),
        },
      },
    });
    await enqueue(db, clock, 'q', {});
    await runner.drain();
    expect(attempts).toEqual([1]);
    clock.advance(999);
    expect(await runner.drain()).toBe(0); // not due yet
    clock.advance(1);
    await runner.drain();
    expect(attempts).toEqual([1, 2]);
    clock.advance(2_000); // the backoff is over, but Retry-After asked for a minute
    expect(await runner.drain()).toBe(0);
    clock.advance(58_000);
    await runner.drain();
    expect(attempts).toEqual([1, 2, 3]);
    expect(dead).toEqual(['failure 3']);
    const row = await db.selectFrom('jobs').selectAll().executeTakeFirstOrThrow();
    expect([row.status, row.attempts, row.last_error]).toEqual(['dead', 3, 'failure 3']);
  });

  it('runs the next attempt exactly when a RetryJob says { at }, even before the backoff would', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const attempts: number[] = [];
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      queues: {
        q: {
          handle: async (job) => {
            attempts.push(job.attempt);
            if (job.attempt === 1)
              throw new RetryJob('the handler knows best', { at: new Date(clock.now().getTime() + 10_000) });
          },
          backoff: () => 3600_000,
        },
      },
    });
    await enqueue(db, clock, 'q', {});
    await runner.drain();
    const row = await db.selectFrom('jobs').selectAll().executeTakeFirstOrThrow();
    expect(row.run_at).toBe('2026-01-01T00:00:10.000Z');
    clock.advance(10_000);
    await runner.drain();
    expect(attempts).toEqual([1, 2]);
  });

  it('lets a handler end its job in its own transaction: a crash right after that commit does not run it again', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    let release = () => {};
    const crashed = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    const handle = async (job: Job) => {
      runs++;
      await db.transaction().execute(async (trx) => {
        await enqueue(trx, clock, 'effects', { of: job.id });
        await job.finish(trx, { status: 'done' });
      });
      await crashed; // the process dies here, before the runner records anything
    };
    await enqueue(db, clock, 'q', {});
    const dying = createJobRunner({
      db,
      clock,
      log: silent,
      leaseMs: 1_000,
      queues: { q: { handle, backoff: () => 1 } },
    }).drain();
    for (let i = 0; i < 200 && (await jobCounts(db)).find((c) => c.queue === 'q')?.status !== 'done'; i++)
      await new Promise((r) => setTimeout(r, 5));
    clock.advance(60_000); // long past the lease
    expect(await createJobRunner({ db, clock, log: silent, queues: { q: { handle, backoff: () => 1 } } }).drain()).toBe(
      0,
    );
    expect(runs).toBe(1);
    expect(await jobCounts(db)).toEqual(
      expect.arrayContaining([
        { queue: 'q', status: 'done', n: 1 },
        { queue: 'effects', status: 'pending', n: 1 },
      ]),
    );
    release();
    await dying;
  });

  it('keeps the job pending when the transaction that ended it rolls back, and fences a run whose lease was taken over', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const attempts: number[] = [];
    const rolledBack = createJobRunner({
      db,
      clock,
      log: silent,
      queues: {
        q: {
          handle: async (job) => {
            attempts.push(job.attempt);
            await db.transaction().execute(async (trx) => {
              await enqueue(trx, clock, 'effects', {});
              await job.finish(trx, { status: 'dead', error: 'never committed' });
              throw new Error('the commit failed');
            });
          },
          backoff: () => 5_000,
        },
      },
    });
    await enqueue(db, clock, 'q', {});
    await rolledBack.drain();
    let row = await db.selectFrom('jobs').selectAll().where('queue', '=', 'q').executeTakeFirstOrThrow();
    expect([row.status, row.last_error, row.run_at]).toEqual([
      'pending',
      'the commit failed',
      '2026-01-01T00:00:05.000Z',
    ]);
    expect(await jobCounts(db)).toEqual([{ queue: 'q', status: 'pending', n: 1 }]);

    // A run whose lease ran out while it worked: another run took the job, so the slow one's end is refused.
    await db.deleteFrom('jobs').execute();
    clock.advance(5_000);
    await enqueue(db, clock, 'q', {});
    let release = () => {};
    const slow = new Promise<void>((resolve) => (release = resolve));
    const ends: string[] = [];
    const queues = {
      q: {
        handle: async (job: Job) => {
          if (job.attempt === 1) await slow;
          await db.transaction().execute(async (trx) => {
            await enqueue(trx, clock, 'effects', { attempt: job.attempt });
            await job.finish(trx, { status: 'done' });
          });
          ends.push(`attempt ${job.attempt}`);
        },
        backoff: () => 5_000,
      },
    };
    const first = createJobRunner({ db, clock, log: silent, leaseMs: 1_000, queues }).drain();
    for (
      let i = 0;
      i < 200 && (await db.selectFrom('jobs').select('attempts').executeTakeFirstOrThrow()).attempts === 0;
      i++
    )
      await new Promise((r) => setTimeout(r, 5));
    clock.advance(2_000);
    const second = createJobRunner({
      db,
      clock,
      log: silent,
      leaseMs: 1_000,
      queues: {
        q: {
          ...queues.q,
          handle: async (job: Job) => {
            await new Promise((r) => setTimeout(r, 5));
            await queues.q.handle(job);
          },
        },
      },
    });
    const secondRun = second.drain();
    for (let i = 0; i < 200 && !ends.length; i++) await new Promise((r) => setTimeout(r, 5));
    release();
    await Promise.all([first, secondRun]);
    expect(ends).toEqual(['attempt 2']);
    row = await db.selectFrom('jobs').selectAll().where('queue', '=', 'q').executeTakeFirstOrThrow();
    expect([row.status, row.attempts]).toEqual(['done', 2]);
    const effects = await db.selectFrom('jobs').select('payload').where('queue', '=', 'effects').execute();
    expect(effects.map((e) => JSON.parse(e.payload))).toEqual([{ attempt: 2 }]);
  });

  it('asks the backoff with the job, and runs onDead in the transaction that marks the job dead', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const asked: [number, unknown][] = [];
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      queues: {
        q: {
          handle: async () => {
            throw new Error('unexpected');
          },
          backoff: (attempt, job: Job<{ tries: number }>) => {
            asked.push([attempt, job.payload]);
            return attempt < job.payload.tries ? 1_000 : undefined;
          },
          onDead: async (job: Job<{ tries: number; failHook?: boolean }>, error, trx) => {
            await enqueue(trx, clock, 'obituary', { job: job.id, error: error.message });
            if (job.payload.failHook) throw new Error('hook broke');
          },
        },
      },
    });
    await enqueue(db, clock, 'q', { tries: 2 });
    await runner.drain();
    clock.advance(1_000);
    await runner.drain();
    expect(asked).toEqual([
      [1, { tries: 2 }],
      [2, { tries: 2 }],
    ]);
    expect(await jobCounts(db)).toEqual(
      expect.arrayContaining([
        { queue: 'q', status: 'dead', n: 1 },
        { queue: 'obituary', status: 'pending', n: 1 },
      ]),
    );

    // A hook that fails leaves nothing of its own, and the job is dead all the same.
    await db.deleteFrom('jobs').execute();
    await enqueue(db, clock, 'q', { tries: 1, failHook: true });
    await runner.drain();
    expect(await jobCounts(db)).toEqual([{ queue: 'q', status: 'dead', n: 1 }]);
  });

  it('runs each queue in its own loop: a queue whose jobs hang holds up only itself, and claims no more than its concurrency', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const { promise: hanging, open: release } = gate();
    let slowRuns = 0;
    const fast: number[] = [];
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      pollMs: 60_000,
      queues: {
        slow: {
          handle: async () => {
            slowRuns++;
            await hanging;
          },
          backoff: () => undefined,
          concurrency: 2,
        },
        fast: { handle: async (job) => void fast.push(job.id), backoff: () => undefined },
      },
    });
    for (let i = 0; i < 3; i++) await enqueue(db, clock, 'slow', { i });
    runner.start();
    for (let i = 0; i < 200 && slowRuns < 2; i++) await new Promise((r) => setTimeout(r, 5));
    const id = await enqueue(db, clock, 'fast', {});
    runner.notify();
    for (let i = 0; i < 200 && !fast.length; i++) await new Promise((r) => setTimeout(r, 5));
    expect(fast).toEqual([id]);
    expect(slowRuns).toBe(2);
    release();
    for (let i = 0; i < 200 && slowRuns < 3; i++) await new Promise((r) => setTimeout(r, 5));
    await runner.stop();
    expect(slowRuns).toBe(3);
  });

  it('gives up at once on GiveUpJob', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    let runs = 0;
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      queues: {
        q: {
          handle: async () => {
            runs++;
            throw new GiveUpJob('permanent');
          },
          backoff: () => 1,
        },
      },
    });
    await enqueue(db, clock, 'q', {});
    await runner.drain();
    clock.advance(10_000);
    await runner.drain();
    expect(runs).toBe(1);
    expect((await db.selectFrom('jobs').select('status').executeTakeFirstOrThrow()).status).toBe('dead');
  });

  it('runs a job again when its worker died holding the lease', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    await enqueue(db, clock, 'q', {});
    // A worker claimed it and vanished: the lease is set, the job still pending.
    await db
      .updateTable('jobs')
      .set({ locked_until: new Date(clock.now().getTime() + 30_000).toISOString(), attempts: 1 })
      .execute();
    let runs = 0;
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      leaseMs: 30_000,
      queues: { q: { handle: async () => void runs++, backoff: () => undefined } },
    });
    expect(await runner.drain()).toBe(0);
    clock.advance(30_001);
    expect(await runner.drain()).toBe(1);
    expect(runs).toBe(1);
  });

  it('claims each queue with its own lease, and renews the lease of a running job (heartbeat), so a slow job is never claimed twice while its worker lives', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    await enqueue(db, clock, 'short', {});
    await enqueue(db, clock, 'long', {});
    let release = () => {};
    const blocked = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    const queues = {
      short: {
        handle: async () => {
          runs++;
          await blocked;
        },
        backoff: () => undefined,
        leaseMs: 10_000,
      },
      long: {
        handle: async () => {
          runs++;
          await blocked;
        },
        backoff: () => undefined,
        leaseMs: 120_000,
      },
    };
    const slow = createJobRunner({ db, clock, log: silent, leaseMs: 60_000, heartbeatMs: 10, queues });
    const running = slow.drain();
    for (let i = 0; i < 100 && runs < 2; i++) await new Promise((r) => setTimeout(r, 5));
    const leaseOf = async (queue: string) =>
      Date.parse(
        (await db.selectFrom('jobs').select('locked_until').where('queue', '=', queue).executeTakeFirstOrThrow())
          .locked_until as string,
      ) - clock.now().getTime();
    expect([await leaseOf('short'), await leaseOf('long')]).toEqual([10_000, 120_000]);
    // Ten minutes pass while the worker is alive: each heartbeat moves its leases on.
    for (let minute = 0; minute < 10; minute++) {
      clock.advance(60_000);
      // Both leases renewed before another runner looks (on a loaded machine one heartbeat may lag the other).
      const renewed = async () => (await leaseOf('short')) === 10_000 && (await leaseOf('long')) === 120_000;
      for (let i = 0; i < 2_000 && !(await renewed()); i++) await new Promise((r) => setTimeout(r, 5));
      expect([await leaseOf('short'), await leaseOf('long')]).toEqual([10_000, 120_000]);
      expect(await createJobRunner({ db, clock, log: silent, queues }).drain()).toBe(0);
    }
    release();
    await running;
    expect(runs).toBe(2);
    expect(await jobCounts(db)).toEqual(
      expect.arrayContaining([
        { queue: 'short', status: 'done', n: 1 },
        { queue: 'long', status: 'done', n: 1 },
      ]),
    );
  });

  it("takes over a dead worker's job one lease of its queue after the last heartbeat, and fences the dead run", async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    await enqueue(db, clock, 'hooks', {});
    // A worker claimed it, renewed it once, and died: nothing renews it any more.
    const dead = createJobRunner({
      db,
      clock,
      log: silent,
      heartbeatMs: 3_600_000,
      queues: { hooks: { handle: () => new Promise<void>(() => {}), backoff: () => undefined, leaseMs: 15_000 } },
    });
    void dead.drain();
    for (
      let i = 0;
      i < 200 && (await db.selectFrom('jobs').select('attempts').executeTakeFirstOrThrow()).attempts === 0;
      i++
    )
      await new Promise((r) => setTimeout(r, 5));
    let runs = 0;
    const alive = createJobRunner({
      db,
      clock,
      log: silent,
      queues: { hooks: { handle: async () => void runs++, backoff: () => undefined, leaseMs: 15_000 } },
    });
    clock.advance(14_999);
    expect(await alive.drain()).toBe(0);
    clock.advance(2);
    expect(await alive.drain()).toBe(1);
    expect(runs).toBe(1);
    const row = await db.selectFrom('jobs').selectAll().executeTakeFirstOrThrow();
    expect([row.status, row.attempts]).toEqual(['done', 2]);
  });

  it('never gives one job to two runners at once, and the background loop wakes on notify', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const runs = new Map<number, number>();
    const handle = async (job: Job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 5));
    };
    for (let i = 0; i < 40; i++) await enqueue(db, clock, 'q', { i });
    const a = createJobRunner({
      db,
      clock,
      log: silent,
      batchSize: 5,
      queues: { q: { handle, backoff: () => undefined } },
    });
    const b = createJobRunner({
      db,
      clock,
      log: silent,
      batchSize: 5,
      queues: { q: { handle, backoff: () => undefined } },
    });
    await Promise.all([a.drain(), b.drain()]);
    expect(runs.size).toBe(40);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);

    const loop = createJobRunner({
      db,
      clock,
      log: silent,
      pollMs: 60_000,
      queues: { q: { handle, backoff: () => undefined } },
    });
    loop.start();
    await enqueue(db, clock, 'q', { late: true });
    loop.notify();
    for (let i = 0; i < 100 && runs.size < 41; i++) await new Promise((r) => setTimeout(r, 10));
    await loop.stop();
    expect(runs.size).toBe(41);
  });

  it('returns from drain() only when the jobs its own claim loop took first have run', async () => {
    const clock = fixedClock(new Date('2026-01-01T00:00:00Z'));
    const taken = gate();
    const held = gate();
    const done: number[] = [];
    const handle = async (job: Job) => {
      taken.open();
      await held.promise;
      done.push(job.id);
    };
    const runner = createJobRunner({
      db,
      clock,
      log: silent,
      pollMs: 60_000,
      queues: { q: { handle, backoff: () => undefined } },
    });
    const id = await enqueue(db, clock, 'q', {});
    runner.start();
    await taken.promise;
    // The loop holds the job: drain finds nothing to claim, and must wait for the loop's run.
    let drained = false;
    const draining = runner.drain().then((n) => {
      drained = true;
      return n;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(drained).toBe(false);
    held.open();
    expect(await draining).toBe(0);
    expect(done).toEqual([id]);
    await runner.stop();
  });
});
