import { writeFileSync } from 'node:fs';
import { setInterval } from 'node:timers';
import { createRequire } from 'node:module';
import { threadId } from 'node:worker_threads';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Loaded into a server under `--profile` (`node --import …/sql-probe.mjs?out=<dir>`, harness.mjs
 * `profiled`): times every better-sqlite3 call (a statement's run, all, get or iterate, and
 * `exec`; for `iterate`, the call that opens the iterator) by its SQL text, and writes the counts
 * to `<dir>/sql-<pid>.json` every second and at exit (a worker thread's, such as the SQLite
 * checkpointer's, to `sql-<pid>-t<threadId>.json`: one file per thread, none overwriting another's). Which statements a request runs, and how
 * long SQLite takes for each inside the server,
 * is what the CPU profile cannot show: it charges SQLite's time to whichever JavaScript function
 * called into it. A server on PostgreSQL writes an empty list.
 */

const out = new URL(import.meta.url).searchParams.get('out');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** By SQL text as prepared (the same string object each call, so a cheap key): calls and nanoseconds. */
const stats = new Map();
const count = (sql, started) => {
  const ns = Number(process.hrtime.bigint() - started);
  const s = stats.get(sql);
  if (s) {
    s.calls += 1;
    s.ns += ns;
  } else stats.set(sql, { calls: 1, ns });
};

if (out) {
  const Database = createRequire(path.join(ROOT, 'package.json'))('better-sqlite3');
  const scratch = new Database(':memory:');
  const statement = Object.getPrototypeOf(scratch.prepare('select 1'));
  scratch.close();
  for (const method of ['run', 'all', 'get', 'iterate']) {
    const original = statement[method];
    statement[method] = function timed(...args) {
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        count(this.source, started);
      }
    };
  }
  const exec = Database.prototype.exec;
  Database.prototype.exec = function timed(sql) {
    const started = process.hrtime.bigint();
    try {
      return exec.call(this, sql);
    } finally {
      count(String(sql), started);
    }
  };
  // Whitespace collapsed when written, not on every call: texts that differ only in it are one.
  const write = () => {
    const merged = new Map();
    for (const [sql, s] of stats) {
      const key = String(sql).replace(/\s+/g, ' ').trim();
      const m = merged.get(key) ?? { sql: key, calls: 0, ns: 0 };
      merged.set(key, { sql: key, calls: m.calls + s.calls, ns: m.ns + s.ns });
    }
    writeFileSync(
      path.join(out, `sql-${process.pid}${threadId ? `-t${threadId}` : ''}.json`),
      JSON.stringify([...merged.values()]),
    );
  };
  setInterval(write, 1000).unref();
  process.on('exit', write);
}
