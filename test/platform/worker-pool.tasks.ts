import { readFileSync } from 'node:fs';
import { resourceLimits, threadId } from 'node:worker_threads';
import { sendPieces, type PiecesChannel } from '../../src/platform/workers/pieces.js';
import { ownBuffer, serveTasks } from '../../src/platform/workers/tasks.js';

/** What the `pieces` task makes: chunks of `sizes` bytes, and how it fails. */
interface PiecesInput {
  readonly sizes: readonly number[];
  /** Counts the chunks made so far, for the test to read while the task runs. */
  readonly made?: Int32Array;
  /** Before chunk n: throw, or end the thread. */
  readonly failAt?: number;
  readonly dieAt?: number;
}

/** The chunks of `input`, byte i of the whole being i & 0xff. */
async function* chunks(input: PiecesInput): AsyncGenerator<Buffer> {
  let at = 0;
  for (const [n, size] of input.sizes.entries()) {
    if (n === input.failAt) throw new TypeError('the maker failed');
    if (n === input.dieAt) process.exit(4);
    const chunk = Buffer.alloc(size);
    for (let i = 0; i < size; i++) chunk[i] = (at + i) & 0xff;
    at += size;
    if (input.made) Atomics.add(input.made, 0, 1);
    yield chunk;
  }
}

/** Tasks for worker-pool.test.ts. */
serveTasks({
  double: (n: number) => ({ value: n * 2 }),
  thread: () => ({ value: threadId }),
  /** Never yields: only ending its thread stops it. */
  spin: () => {
    for (;;);
  },
  wait: async (ms: number) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { value: threadId };
  },
  fill: (n: number) => {
    const bytes = Buffer.alloc(n, 7);
    const own = ownBuffer(bytes);
    return { value: bytes, transfer: own ? [own] : [] };
  },
  /** This thread's niceness (Linux: field 19 of /proc/thread-self/stat), or null elsewhere. */
  niceness: () => {
    try {
      return {
        value: Number(
          readFileSync('/proc/thread-self/stat', 'utf8')
            .replace(/^.*\) /, '')
            .split(' ')[16],
        ),
      };
    } catch {
      return { value: null };
    }
  },
  /** The heap limits this thread was started with. */
  limits: () => ({ value: resourceLimits }),
  refuse: () => {
    throw new RangeError('not this one');
  },
  die: () => process.exit(3),
  /** A value nested `n` deep: from some depth on, the structured clone of the answer overflows its stack. */
  nested: (n: number) => {
    let value: unknown = [];
    for (let i = 0; i < n; i++) value = [value];
    return { value };
  },
  /** A value the structured clone cannot copy at all. */
  uncloneable: () => ({ value: () => 1 }),
  /** Sends the chunks of its input on the channel (platform/workers/pieces.ts); its value: the bytes sent. */
  pieces: async (input: PiecesInput & { pieces: PiecesChannel }) => ({
    value: await sendPieces(input.pieces, chunks(input)),
  }),
});
