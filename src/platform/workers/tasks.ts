import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, type Transferable } from 'node:worker_threads';
import type { TaskReply } from './pool.js';

/** What a task returns: its value, and the ArrayBuffers to move to the caller instead of copying. */
export interface TaskResult {
  readonly value: unknown;
  readonly transfer?: readonly Transferable[];
}

export type Task = (input: never) => TaskResult | Promise<TaskResult>;

/**
 * The body of a task module run by `createWorkerPool`: answers each `{ task, input }` from the
 * pool with the task's result, or with its error's name and message (an error thrown by a task
 * reaches the caller as an Error of that name). A task that fails on its input, even where its
 * answer cannot be sent back, costs that task and never its thread.
 */
export function serveTasks(tasks: Readonly<Record<string, Task>>): void {
  const port = parentPort;
  if (!port) throw new Error('serveTasks runs in a worker thread');
  lowerThreadPriority();
  port.on('message', async ({ task, input }: { task: string; input: never }) => {
    let reply: TaskReply;
    let transfer: readonly Transferable[] = [];
    try {
      const run = tasks[task];
      if (!run) throw new Error(`no task ${task}`);
      const result = await run(input);
      reply = { ok: true, value: result.value };
      transfer = result.transfer ?? [];
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      reply = { ok: false, name: error.name, message: error.message };
    }
    try {
      port.postMessage(reply, transfer as Transferable[]);
    } catch (err) {
      // The value could not be sent back (nested too deep for the structured clone, or a kind it
      // cannot clone): the task fails on its input, and the thread lives on for the next one.
      const error = err instanceof Error ? err : new Error(String(err));
      port.postMessage({
        ok: false,
        name: 'TaskReplyError',
        message: `the task's answer could not be sent back: ${error.message}`,
      } satisfies TaskReply);
    }
  });
}

/** The ArrayBuffer behind `buffer` when moving it moves nothing else (it is the whole buffer). */
export function ownBuffer(buffer: Buffer): ArrayBuffer | undefined {
  const ab = buffer.buffer;
  return ab instanceof ArrayBuffer && buffer.byteOffset === 0 && buffer.byteLength === ab.byteLength ? ab : undefined;
}

/** The niceness of a task thread: the event loop's thread (0) wins a contended core, the task still advances. */
export const TASK_THREAD_NICENESS = 10;

/**
 * Lowers the calling thread's CPU priority to TASK_THREAD_NICENESS. A task thread does work the
 * event loop handed off (composing, parsing, checkpoints); when the cores are busy, the event
 * loop that answers every other request should get the CPU first (docs/decisions/0023). Linux
 * keeps a niceness per thread, and `setpriority` given a thread id (read from
 * /proc/thread-self) changes only that thread; elsewhere nothing changes.
 */
export function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid !== process.pid) setPriority(tid, TASK_THREAD_NICENESS);
  } catch {
    // No /proc (not Linux) or not permitted: the thread keeps the process's priority.
  }
}
