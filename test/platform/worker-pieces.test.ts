import { afterEach, describe, expect, it } from 'vitest';
import { piecesOf, PIECES_WINDOW } from '../../src/platform/workers/pieces.js';
import { createWorkerPool, WorkerPoolError, type WorkerPool } from '../../src/platform/workers/pool.js';

const module = new URL('./worker-pool.tasks.ts', import.meta.url);

/** Bytes 0..n-1 of the tasks' pattern (byte i is i & 0xff). */
const pattern = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i & 0xff));

/**
 * Bytes a worker thread hands over in pieces (src/platform/workers/pieces.ts): real threads of a
 * real pool, running the `pieces` task of worker-pool.tasks.ts.
 */
describe('pieces from a worker thread', () => {
  let pool: WorkerPool | undefined;
  afterEach(async () => {
    await pool?.close();
  });

  it('yields the bytes in pieces of exactly pieceBytes but the last, whatever the chunks the task made', async () => {
    pool = createWorkerPool({ module, size: 1 });
    for (const sizes of [[1], [100], [7, 100, 3, 250, 64], [64], [64, 64], [1000], [0, 5, 0]]) {
      const got: Buffer[] = [];
      for await (const piece of piecesOf(pool, 'pieces', { sizes }, 64)) got.push(piece);
      const total = sizes.reduce((a, b) => a + b, 0);
      expect(
        got.slice(0, -1).every((p) => p.length === 64),
        JSON.stringify(sizes),
      ).toBe(true);
      expect(got.length, JSON.stringify(sizes)).toBe(Math.ceil(total / 64));
      expect(Buffer.concat(got).equals(pattern(total)), JSON.stringify(sizes)).toBe(true);
    }
    // Nothing at all: no piece, and the loop ends.
    const none: Buffer[] = [];
    for await (const piece of piecesOf(pool, 'pieces', { sizes: [] }, 64)) none.push(piece);
    expect(none).toEqual([]);
  });

  it('runs at most PIECES_WINDOW pieces ahead of the caller', async () => {
    pool = createWorkerPool({ module, size: 1 });
    const made = new Int32Array(new SharedArrayBuffer(4));
    const pieces = piecesOf(pool, 'pieces', { sizes: Array.from({ length: 40 }, () => 64), made }, 64)[
      Symbol.asyncIterator
    ]();
    expect((await pieces.next()).done).toBe(false);
    // Time for the task to run as far as it may: PIECES_WINDOW pieces sent (the caller is done
    // with a piece when it asks for the next, so the one it holds counts), and one more made that
    // waits for room.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(Atomics.load(made, 0)).toBe(PIECES_WINDOW + 1);
    let taken = 1;
    for (let r = await pieces.next(); !r.done; r = await pieces.next()) taken++;
    expect(taken).toBe(40);
    expect(Atomics.load(made, 0)).toBe(40);
  });

  it('stops the task when the caller leaves the loop, and frees its thread for the next task', async () => {
    pool = createWorkerPool({ module, size: 1 });
    const made = new Int32Array(new SharedArrayBuffer(4));
    for await (const piece of piecesOf(pool, 'pieces', { sizes: Array.from({ length: 1000 }, () => 64), made }, 64)) {
      expect(piece.length).toBe(64);
      break;
    }
    // The one thread is free again: the next task runs, and the first made no more than its window.
    expect(await pool.run('double', 2)).toBe(4);
    expect(Atomics.load(made, 0)).toBeLessThanOrEqual(PIECES_WINDOW + 1);
  });

  it("throws the task's own error from the loop, and WorkerPoolError when its thread dies; the next task runs", async () => {
    pool = createWorkerPool({ module, size: 1 });
    const collect = async (input: object) => {
      const got: Buffer[] = [];
      for await (const piece of piecesOf(pool as WorkerPool, 'pieces', input, 64)) got.push(piece);
      return got;
    };
    const sizes = Array.from({ length: 20 }, () => 64);
    const failed = await collect({ sizes, failAt: 10 }).catch((err: Error) => err);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).name).toBe('TypeError');
    expect((failed as Error).message).toBe('the maker failed');
    const died = await collect({ sizes, dieAt: 10 }).catch((err: Error) => err);
    expect(died).toBeInstanceOf(WorkerPoolError);
    expect(Buffer.concat(await collect({ sizes: [100, 100] })).equals(pattern(200))).toBe(true);
  });
});
