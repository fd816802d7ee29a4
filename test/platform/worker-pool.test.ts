import { channel } from 'node:diagnostics_channel';
import type { ResourceLimits, Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { inboxPool, TASK_YOUNG_GENERATION_MB } from '../../src/inbox/offload.js';
import { getPriority } from 'node:os';
import { createWorkerPool, WorkerPoolError, type WorkerPool } from '../../src/platform/workers/pool.js';
import { TASK_THREAD_NICENESS } from '../../src/platform/workers/tasks.js';
import { MAX_JSON_DEPTH } from '../../src/platform/json-depth.js';

const module = new URL('./worker-pool.tasks.ts', import.meta.url);

describe('worker pool', () => {
  let pool: WorkerPool | undefined;
  afterEach(async () => {
    await pool?.close();
  });

  it('runs tasks in at most `size` threads, queueing the rest, and moves transferred buffers', async () => {
    pool = createWorkerPool({ module, size: 2 });
    expect(await pool.run('double', 21)).toBe(42);
    const threads = await Promise.all(Array.from({ length: 6 }, () => pool!.run<number>('wait', 30)));
    expect(new Set(threads).size).toBeLessThanOrEqual(2);
    expect(threads.every((t) => t > 0)).toBe(true);
    const bytes = await pool.run<Uint8Array>('fill', 1 << 20);
    expect(bytes.byteLength).toBe(1 << 20);
    expect(bytes[12345]).toBe(7);
  });

  it("rejects with the task's own error, and with WorkerPoolError when the thread dies; the next task gets a new thread", async () => {
    pool = createWorkerPool({ module, size: 1 });
    const before = await pool.run<number>('thread', null);
    const refused = await pool.run('refuse', null).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).not.toBeInstanceOf(WorkerPoolError);
    expect((refused as Error).name).toBe('RangeError');
    expect((refused as Error).message).toBe('not this one');
    // The thread survives a task's error…
    expect(await pool.run('thread', null)).toBe(before);
    // …but not its exit: that task fails as the pool's, and a queued one runs on a new thread.
    const [died, after] = await Promise.allSettled([pool.run('die', null), pool.run<number>('thread', null)]);
    expect(died.status === 'rejected' && died.reason).toBeInstanceOf(WorkerPoolError);
    expect(after.status === 'fulfilled' && after.value).not.toBe(before);
  });

  it('ends a task that runs past its timeout with its thread; the next task gets a new thread', async () => {
    pool = createWorkerPool({ module, size: 1 });
    const before = await pool.run<number>('thread', null);
    const [late, next] = await Promise.allSettled([
      pool.run('spin', null, [], { timeoutMs: 200 }),
      pool.run<number>('thread', null),
    ]);
    expect(late.status === 'rejected' && late.reason).toBeInstanceOf(WorkerPoolError);
    expect(late.status === 'rejected' && (late.reason as Error).message).toMatch(/longer than 200 ms/);
    expect(next.status === 'fulfilled' && next.value).not.toBe(before);
    // A task that ends in time is untouched by its limit.
    expect(await pool.run('double', 4, [], { timeoutMs: 5_000 })).toBe(8);
  });

  it('runs its threads at a lower CPU priority than the event loop (Linux), leaving the process as it was', async () => {
    pool = createWorkerPool({ module, size: 1 });
    const before = getPriority();
    const niceness = await pool.run<number | null>('niceness', null);
    if (process.platform === 'linux') expect(niceness).toBe(Math.max(before, TASK_THREAD_NICENESS));
    expect(getPriority()).toBe(before);
  });

  it('starts its threads with the heap limits it was given; the inbox pool with a young generation of TASK_YOUNG_GENERATION_MB', async () => {
    pool = createWorkerPool({ module, size: 1, resourceLimits: { maxYoungGenerationSizeMb: 6 } });
    expect((await pool.run<ResourceLimits>('limits', null)).maxYoungGenerationSizeMb).toBe(6);
    const started: Worker[] = [];
    const onStarted = (message: unknown) => started.push((message as { worker: Worker }).worker);
    channel('worker_threads').subscribe(onStarted);
    try {
      expect(await inboxPool().run('parseJson', new TextEncoder().encode('{"a":1}'))).toEqual({ a: 1 });
    } finally {
      channel('worker_threads').unsubscribe(onStarted);
    }
    expect(started.length).toBeGreaterThan(0);
    for (const worker of started)
      expect(worker.resourceLimits?.maxYoungGenerationSizeMb).toBe(TASK_YOUNG_GENERATION_MB);
  });

  it('fails a task whose input cannot be handed over, and runs the next on the same thread', async () => {
    pool = createWorkerPool({ module, size: 1 });
    const before = await pool.run<number>('thread', null);
    const refused = await pool.run('double', () => 1).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).name).toBe('DataCloneError');
    expect(await pool.run('double', 4)).toBe(8);
    expect(await pool.run<number>('thread', null)).toBe(before);
  });

  it('fails a task whose answer cannot be sent back (too deep, not cloneable), and runs the next on the same thread', async () => {
    pool = createWorkerPool({ module, size: 1 });
    const before = await pool.run<number>('thread', null);
    for (const [task, input] of [
      ['nested', 200_000],
      ['uncloneable', null],
    ] as const) {
      const refused = await pool.run(task, input).catch((err: Error) => err);
      expect(refused).toBeInstanceOf(Error);
      expect(refused).not.toBeInstanceOf(WorkerPoolError);
      expect((refused as Error).name).toBe('TaskReplyError');
      expect(await pool.run<number>('thread', null)).toBe(before);
    }
    expect(await pool.run<unknown[]>('nested', 2)).toEqual([[[]]]);
  });

  it('the inbox pool refuses JSON nested too deep as JsonTooDeepError, on the thread that parses the next body', async () => {
    const inbox = inboxPool();
    const deep = (n: number) => Buffer.from('['.repeat(n) + ']'.repeat(n));
    expect(await inbox.run('parseJson', deep(MAX_JSON_DEPTH))).toBeInstanceOf(Array);
    for (const n of [MAX_JSON_DEPTH + 1, 20_000, 600_000]) {
      const refused = await inbox.run('parseJson', deep(n)).catch((err: Error) => err);
      expect([n, (refused as Error).name]).toEqual([n, 'JsonTooDeepError']);
    }
    expect(await inbox.run('parseJson', Buffer.from('{"a":[1]}'))).toEqual({ a: [1] });
  });

  it('refuses work once closed', async () => {
    pool = createWorkerPool({ module, size: 1 });
    expect(await pool.run('double', 1)).toBe(2);
    await pool.close();
    await expect(pool.run('double', 1)).rejects.toBeInstanceOf(WorkerPoolError);
  });
});
