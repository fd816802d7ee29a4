import { readFileSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
import { ownBuffer, serveTasks } from '../../src/platform/workers/tasks.js';

/** Tasks for worker-pool.test.ts. */
serveTasks({
  double: (n: number) => ({ value: n * 2 }),
  thread: () => ({ value: threadId }),
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
      return { value: Number(readFileSync('/proc/thread-self/stat', 'utf8').replace(/^.*\) /, '').split(' ')[16]) };
    } catch {
      return { value: null };
    }
  },
  refuse: () => {
    throw new RangeError('not this one');
  },
  die: () => process.exit(3),
});
