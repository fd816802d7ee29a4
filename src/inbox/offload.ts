import { createWorkerPool, taskModule, type WorkerPool } from '../platform/workers/pool.js';

/**
 * The inbox's worker threads (tasks in `inbox.tasks.ts`): composing large messages and parsing
 * large JSON bodies happen there, off the event loop (docs/decisions/0012-large-sends-off-the-event-loop.md).
 * One pool per process, started on first use.
 */
let pool: WorkerPool | undefined;

export function inboxPool(): WorkerPool {
  pool ??= createWorkerPool({
    module: taskModule(import.meta.url, './inbox.tasks'),
    resourceLimits: { maxYoungGenerationSizeMb: TASK_YOUNG_GENERATION_MB },
  });
  return pool;
}

let textThreads: WorkerPool | undefined;

/**
 * One thread apart for reading attachments' text (PDF, DOCX): a document may take seconds and much
 * memory, and must not hold up the composing of sends in `inboxPool`. Its heap is bounded, and a
 * document past EXTRACT_TIMEOUT_MS ends its thread (mail/attachment-text.ts).
 */
export function textPool(): WorkerPool {
  textThreads ??= createWorkerPool({
    module: taskModule(import.meta.url, './inbox.tasks'),
    size: 1,
    idleMs: 10_000,
    resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 },
  });
  return textThreads;
}

/**
 * The young generation of the inbox's task threads, in MiB (Node's default lets it grow to 32 MiB
 * and more). Their tasks make megabytes of short-lived pieces and strings; a smaller young
 * generation is collected sooner, at a small cost in task time (decision 0030, point 6).
 */
export const TASK_YOUNG_GENERATION_MB = 8;

/**
 * Request bodies from this size on are read in pieces as they arrive (platform/http/json-body.ts);
 * what remains of them without their large strings is parsed in a worker thread from this size on.
 */
export const OFFLOAD_JSON_BYTES = 1024 * 1024;
/**
 * String values of a body read in pieces from this raw size on are kept apart from the rest, and
 * turned into strings in a worker thread (an attachment's base64 is decoded as it arrives instead).
 */
export const LARGE_STRING_BYTES = 64 * 1024;
/** Messages whose text, HTML and attachments reach this size together are composed in a worker thread. */
export const OFFLOAD_COMPOSE_BYTES = 128 * 1024;
/**
 * A body (the text, or the HTML when there is no text) from this many characters on has its search
 * words read in a worker thread. Even read piecewise they held up other requests on the event loop,
 * and an HTML body is turned into text in one step (bench/README.md, big sends, 2026-11-24).
 */
export const OFFLOAD_WORDS_CHARS = 128 * 1024;
/** Attachment contents (base64) from this many characters on are checked and decoded in a worker thread. */
export const OFFLOAD_BASE64_CHARS = 1024 * 1024;
