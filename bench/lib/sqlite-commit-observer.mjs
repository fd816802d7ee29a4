import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import Sqlite from 'better-sqlite3';

/**
 * A child process of `bench/websocket-run.mjs` (pinned to the clients' core, off the server's): an outside
 * observer of commits on the service's SQLite file, as the bench's LISTEN is on PostgreSQL. It
 * opens the file read-only (the service keeps it in WAL mode, so readers never block the writer
 * and see a transaction exactly when it commits).
 *
 * `{ arm: marker }`, answered `{ armed }` at once: from then on it reads the event rows added since
 * its last look every `intervalMs`, until a `message.received` row whose payload holds `marker`
 * appears, and answers `{ at }`, on the monotonic clock every process shares (`process.hrtime`):
 * at most one interval plus one query after the commit. Then it sleeps until the next `arm`, so
 * that it takes nothing from the clients' core while the frames arrive. Arguments: the file and
 * the interval in milliseconds; it stops on `'stop'` or when the channel closes.
 */
const [file, interval] = process.argv.slice(2);
const intervalMs = Number(interval);
const db = new Sqlite(file, { readonly: true, fileMustExist: true });
const newer = db.prepare(`select rowid as id, event_type, payload from events where rowid > ? order by rowid`);
let last = db.prepare('select coalesce(max(rowid), 0) as id from events').get().id;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Timers cannot wait less than a millisecond: between looks it sleeps with Atomics.wait. */
function watch(marker) {
  const until = performance.now() + 10_000;
  while (performance.now() < until) {
    for (const row of newer.all(last)) {
      last = row.id;
      if (row.event_type === 'message.received' && row.payload.includes(marker))
        return Number(process.hrtime.bigint()) / 1e6;
    }
    Atomics.wait(sleeper, 0, 0, intervalMs);
  }
  return null;
}

const stop = () => {
  db.close();
  process.exit(0);
};
process.on('disconnect', stop);
process.on('message', (m) => {
  if (m === 'stop') return stop();
  process.send({ armed: m.arm });
  // After the answer has gone out: the watch blocks this process's event loop until it ends.
  setImmediate(() => process.send({ at: watch(m.arm) }));
});
process.send({ ready: true });
