import Sqlite from 'better-sqlite3';
import { serveTasks, type TaskResult } from '../workers/tasks.js';

/**
 * The task of the SQLite checkpoint thread (`sqlite-checkpoint.ts`): copies the WAL's committed
 * pages into the database file on a connection of its own, so that neither the copy nor the
 * database file's fsync runs on the event loop. PASSIVE: it never waits for, nor blocks, the
 * service's readers and writer.
 */
function checkpointTask(file: string): TaskResult {
  const db = new Sqlite(file, { fileMustExist: true });
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    return { value: result ?? null };
  } finally {
    db.close();
  }
}

serveTasks({ checkpoint: checkpointTask });
