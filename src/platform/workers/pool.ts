import { availableParallelism } from 'node:os';
import { Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';

/**
 * CPU-heavy work off the event loop: a small pool of worker threads that run the named tasks of
 * one module (a module that calls `serveTasks`, see `tasks.ts`). Threads start on first use, and
 * an idle pool holds no thread after `idleMs`, so a process that never needs one pays nothing.
 * Tasks queue when every thread is busy. A thread that dies fails its task and is replaced on
 * the next one.
 */
export interface WorkerPool {
  /**
   * Runs `task` with `input` (structured-cloned; `transfer` moves ArrayBuffers instead). With
   * `timeoutMs`, a task still running that long after it started fails with a WorkerPoolError and
   * its thread is ended (the only way to stop JavaScript that does not yield).
   */
  run<T>(task: string, input: unknown, transfer?: readonly Transferable[], options?: RunOptions): Promise<T>;
  /** Ends every thread; queued and running tasks fail. */
  close(): Promise<void>;
}

export interface RunOptions {
  readonly timeoutMs?: number;
}

export interface WorkerPoolOptions {
  /** The task module (`serveTasks`): `new URL('./x.tasks.js', import.meta.url)`. */
  readonly module: URL;
  /** Threads at most; by default one less than the cores, between 1 and 4. */
  readonly size?: number;
  /** A thread idle this long ends (ms). */
  readonly idleMs?: number;
  /** The heap limits of each thread (Node's defaults when absent). */
  readonly resourceLimits?: ResourceLimits;
}

interface Job {
  readonly task: string;
  readonly input: unknown;
  readonly transfer: readonly Transferable[];
  readonly timeoutMs: number | undefined;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

interface Thread {
  readonly worker: Worker;
  job: Job | undefined;
  idle: NodeJS.Timeout | undefined;
  /** The running job's time limit. */
  deadline: NodeJS.Timeout | undefined;
}

/** The pool could not run a task (its thread died, or the pool is closed): not the task's own error. */
export class WorkerPoolError extends Error {
  override name = 'WorkerPoolError';
}

/** The reply of a task thread (tasks.ts). */
export type TaskReply = { ok: true; value: unknown } | { ok: false; name: string; message: string };

export const defaultPoolSize = (): number => Math.max(1, Math.min(4, availableParallelism() - 1));

export function createWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const size = options.size ?? defaultPoolSize();
  const idleMs = options.idleMs ?? 30_000;
  const threads = new Set<Thread>();
  const queue: Job[] = [];
  let closed = false;

  function spawn(): Thread {
    const href = options.module.href;
    // Under the TypeScript sources (tests), the thread first registers tsx's loader; built code
    // (dist/, production) loads its .js module directly.
    const worker = href.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(href)}); })`, {
          eval: true,
          resourceLimits: options.resourceLimits,
        })
      : new Worker(options.module, { resourceLimits: options.resourceLimits });
    worker.unref();
    const thread: Thread = { worker, job: undefined, idle: undefined, deadline: undefined };
    worker.on('message', (reply: TaskReply) => {
      const job = thread.job;
      thread.job = undefined;
      clearTimeout(thread.deadline);
      if (job) {
        if (reply.ok) job.resolve(reply.value);
        else job.reject(Object.assign(new Error(reply.message), { name: reply.name }));
      }
      next(thread);
    });
    const fail = (error: Error) => {
      threads.delete(thread);
      if (thread.idle) clearTimeout(thread.idle);
      clearTimeout(thread.deadline);
      thread.job?.reject(error);
      thread.job = undefined;
      // Queued work gets a fresh thread.
      if (queue.length && !closed) next(spawnTracked());
    };
    worker.on('error', (err) => fail(new WorkerPoolError(`worker thread failed: ${err.message}`)));
    worker.on('exit', (code) => fail(new WorkerPoolError(`worker thread exited (code ${code})`)));
    return thread;
  }

  function spawnTracked(): Thread {
    const thread = spawn();
    threads.add(thread);
    return thread;
  }

  function next(thread: Thread): void {
    if (!threads.has(thread)) return;
    const job = queue.shift();
    if (!job) {
      thread.idle = setTimeout(() => {
        threads.delete(thread);
        void thread.worker.terminate();
      }, idleMs);
      thread.idle.unref();
      return;
    }
    if (thread.idle) clearTimeout(thread.idle);
    thread.idle = undefined;
    thread.job = job;
    if (job.timeoutMs !== undefined) {
      thread.deadline = setTimeout(() => {
        if (thread.job !== job) return;
        thread.job = undefined;
        threads.delete(thread);
        job.reject(new WorkerPoolError(`the task ${job.task} ran longer than ${job.timeoutMs} ms`));
        void thread.worker.terminate();
        // Queued work gets a fresh thread.
        if (queue.length && !closed) next(spawnTracked());
      }, job.timeoutMs);
      thread.deadline.unref();
    }
    try {
      thread.worker.postMessage({ task: job.task, input: job.input }, job.transfer as Transferable[]);
    } catch (error) {
      // The input could not be handed over (a value that cannot be cloned, a buffer already
      // moved): that task fails, and the thread, which never got it, takes the next.
      thread.job = undefined;
      clearTimeout(thread.deadline);
      job.reject(error instanceof Error ? error : new Error(String(error)));
      next(thread);
    }
  }

  return {
    run<T>(task: string, input: unknown, transfer: readonly Transferable[] = [], run: RunOptions = {}): Promise<T> {
      if (closed) return Promise.reject(new WorkerPoolError('the worker pool is closed'));
      return new Promise<T>((resolve, reject) => {
        queue.push({
          task,
          input,
          transfer,
          timeoutMs: run.timeoutMs,
          resolve: resolve as (value: unknown) => void,
          reject,
        });
        const free = [...threads].find((t) => t.job === undefined);
        if (free) next(free);
        else if (threads.size < size) next(spawnTracked());
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new WorkerPoolError('the worker pool is closed'));
      await Promise.all([...threads].map((t) => t.worker.terminate()));
    },
  };
}

/**
 * The URL of a task module next to `from` (`import.meta.url` of the caller): `name.ts` when the
 * caller runs from the TypeScript sources, `name.js` in the build.
 */
export function taskModule(from: string, name: string): URL {
  return new URL(`${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}
