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
 * reaches the caller as an Error of that name).
 */
export function serveTasks(tasks: Readonly<Record<string, Task>>): void {
  const port = parentPort;
  if (!port) throw new Error('serveTasks runs in a worker thread');
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
    port.postMessage(reply, transfer as Transferable[]);
  });
}

/** The ArrayBuffer behind `buffer` when moving it moves nothing else (it is the whole buffer). */
export function ownBuffer(buffer: Buffer): ArrayBuffer | undefined {
  const ab = buffer.buffer;
  return ab instanceof ArrayBuffer && buffer.byteOffset === 0 && buffer.byteLength === ab.byteLength ? ab : undefined;
}
