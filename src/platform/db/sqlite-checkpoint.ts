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
 */
export interface Checkpointer {
  /** Stops looking at the WAL; a checkpoint under way finishes on its own. */
  stop(): void;
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
 * A WAL past this size is finished on the service's own connection (see checkpointOffThread): four
 * times the size the thread starts at.
 */
export const WAL_FINISH_BYTES = 4 * WAL_BYTES;
/** The most the service's connection copies when it finishes a WAL: what the thread left, at most this. */
const FINISH_MAX_BYTES = WAL_BYTES;

export function checkpointOffThread(sqlite: Sqlite.Database, file: string, intervalMs = 250): Checkpointer {
  sqlite.pragma('wal_autocheckpoint = 0');
  sqlite.pragma(`journal_size_limit = ${WAL_BYTES}`);
  const wal = `${file}-wal`;
  const pageSize = sqlite.pragma('page_size', { simple: true }) as number;
  let seen = '';
  let running = false;
  let stopped = false;
  const fallBack = () => {
    stopped = true;
    clearInterval(timer);
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
  };
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = true;
    void (async () => {
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
        // hundred milliseconds' worth) are copied here, between transactions, and the next write
        // starts the WAL over; if more than FINISH_MAX_BYTES arrived meanwhile (a big message),
        // they are left to the thread's next pass.
        if (!result || s.size <= WAL_FINISH_BYTES || stopped || !sqlite.open) return;
        const after = await stat(wal).catch(() => undefined);
        const frame = pageSize + WAL_FRAME_HEADER;
        const left = after
          ? Math.max(0, Math.floor((after.size - WAL_HEADER) / frame) - result.checkpointed) * frame
          : Infinity;
        if (left <= FINISH_MAX_BYTES && sqlite.open && !sqlite.inTransaction) sqlite.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        fallBack();
      } finally {
        running = false;
      }
    })();
  }, intervalMs);
  timer.unref();
  return { stop: () => void ((stopped = true), clearInterval(timer)) };
}
