import { stat } from 'node:fs/promises';
import type Sqlite from 'better-sqlite3';
import { createWorkerPool, taskModule, type WorkerPool } from '../workers/pool.js';

/**
 * WAL checkpoints of the service's SQLite files, off the event loop.
 *
 * SQLite's automatic checkpoint runs in the connection whose commit takes the WAL past 1000
 * pages: it copies every page written since into the database file and fsyncs it, inside that
 * commit. better-sqlite3 is synchronous, so the event loop (every other request) waits for it, and
 * after a message of megabytes it copies megabytes. Here the service's connection has automatic
 * checkpoints off, and a worker thread with a connection of its own runs a PASSIVE checkpoint
 * when the WAL changed (looked at every `intervalMs`). Should the thread fail, the connection
 * checkpoints itself again as SQLite does by default.
 *
 * Under writes that never pause the thread's passes never catch up with the writer, and SQLite
 * starts a WAL over only once every frame was copied; so now and then the service's writes are
 * held back for one more pass of the thread (`quiet`), after which the next write starts the WAL
 * over. The event loop serves everything else meanwhile (decision 0050).
 */
export interface Checkpointer {
  /**
   * Stops looking at the WAL, and resolves once a checkpoint under way has finished: until then
   * the thread has the file open and may be writing to it.
   */
  stop(): Promise<void>;
  /** How many times a pass while the writes were held back left the WAL fully copied. */
  readonly finishes: number;
}

export interface CheckpointOptions {
  /**
   * Runs `work` while the service's connection writes nothing: no transaction is open, and writes
   * that arrive meanwhile wait (without holding the event loop) until `work` settled.
   */
  readonly quiet: <T>(work: () => Promise<T>) => Promise<T>;
  readonly intervalMs?: number;
}

/** One thread for every SQLite file of the process, started on the first checkpoint, ended when idle. */
let pool: WorkerPool | undefined;
const checkpointPool = () =>
  (pool ??= createWorkerPool({ module: taskModule(import.meta.url, './sqlite-checkpoint.tasks'), size: 1 }));

const DEFAULT_AUTOCHECKPOINT = 1000;
/** The WAL file's header and each frame's header, in bytes (SQLite's file format): frames follow the header in order. */
const WAL_HEADER = 32;
const WAL_FRAME_HEADER = 24;
/**
 * A WAL is checkpointed once it grew past this size (SQLite's own threshold, 1000 pages of 4 KiB),
 * and truncated back to it when SQLite starts it over: small writes (a start's migrations, a
 * quiet service) never start the thread.
 */
const WAL_BYTES = 4 * 1024 * 1024;
/**
 * A WAL past this size is finished with the writes held back (see checkpointOffThread): four times
 * the size the thread starts at.
 */
export const WAL_FINISH_BYTES = 4 * WAL_BYTES;
/**
 * The most a finish copies: what the thread's last pass left, at most this (tens of milliseconds
 * on this machine's disk, the longest the writes are held back).
 */
const FINISH_MAX_BYTES = WAL_BYTES;

export function checkpointOffThread(sqlite: Sqlite.Database, file: string, options: CheckpointOptions): Checkpointer {
  const { quiet, intervalMs = 250 } = options;
  let finishes = 0;
  sqlite.pragma('wal_autocheckpoint = 0');
  sqlite.pragma(`journal_size_limit = ${WAL_BYTES}`);
  const wal = `${file}-wal`;
  const pageSize = sqlite.pragma('page_size', { simple: true }) as number;
  let seen = '';
  let running = false;
  let stopped = false;
  /** The pass under way, if any: `stop()` waits for it. */
  let pass: Promise<void> | undefined;
  const fallBack = () => {
    stopped = true;
    clearInterval(timer);
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
  };
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = true;
    pass = (async () => {
      try {
        const s = await stat(wal).catch(() => undefined);
        // Small, or unchanged since the last checkpoint (or no WAL yet): nothing to copy now.
        const now = s ? `${s.mtimeMs}:${s.size}` : '';
        if (!s || s.size <= WAL_BYTES || now === seen || stopped) return;
        const result = await checkpointPool().run<{ log: number; checkpointed: number } | null>('checkpoint', file);
        // A reader still on old pages kept part of the WAL: try again next time.
        if (result && result.checkpointed >= result.log) seen = now;
        // SQLite starts a WAL over only when a write begins with every frame copied. Under steady
        // writes that never happens: new frames arrive while the thread copies, and the WAL grows
        // without bound (tens of MB in seconds), which costs disk and makes every read look
        // further. So once it is large, the frames written since the thread's pass (a few
        // hundred milliseconds' worth) are copied by the thread once more while the service's
        // writes wait, and the next write starts the WAL over; if more than FINISH_MAX_BYTES
        // arrived meanwhile (a big message), they are left to the thread's next pass. The copy
        // used to run here on the service's connection, 35-50 ms of a stalled event loop each
        // time (decision 0050).
        if (!result || s.size <= WAL_FINISH_BYTES || stopped || !sqlite.open) return;
        const after = await stat(wal).catch(() => undefined);
        const frame = pageSize + WAL_FRAME_HEADER;
        const left = after
          ? Math.max(0, Math.floor((after.size - WAL_HEADER) / frame) - result.checkpointed) * frame
          : Infinity;
        if (left > FINISH_MAX_BYTES) return;
        await quiet(async () => {
          if (stopped || !sqlite.open) return;
          const finished = await checkpointPool().run<{ log: number; checkpointed: number } | null>('checkpoint', file);
          if (finished && finished.checkpointed >= finished.log) finishes++;
        });
      } catch {
        fallBack();
      } finally {
        running = false;
      }
    })();
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await pass;
    },
    // Once per database opened, not per call: its own map costs nothing (decision 0056).
    // eslint-disable-next-line no-restricted-syntax
    get finishes() {
      return finishes;
    },
  };
}
