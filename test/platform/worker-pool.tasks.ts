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
  refuse: () => {
    throw new RangeError('not this one');
  },
  die: () => process.exit(3),
});
