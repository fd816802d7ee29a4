import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { staleReason } from '../../scripts/build-once.mjs';
import { formatProfile, summarizeProfile } from '../profile.mjs';

/**
 * What the benchmarks of both services share: pinned server processes, the autocannon child,
 * CPU accounting from /proc, the quiet-machine wait, medians, the dist snapshot and the results
 * files. `run.mjs` (property) and `inbox-run.mjs` (inbox) hold only their scenarios.
 */

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const RESULTS = path.join(ROOT, 'bench/results');
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';
/** More CPU than this used by other processes during a run marks it disturbed (cores). */
export const DISTURBED = 0.25;

export { freePort } from './ports.mjs';

/**
 * Resolves with the child's exit code once it exited (null when a signal ended it). A child that
 * already ended, by a code or by a signal (a server without a SIGTERM handler), resolves at once:
 * its 'exit' event has gone by and would never come again.
 */
export const exited = (child) =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.once('exit', resolve),
  );

/**
 * Starts `file` under node, pinned to SERVER_CPU unless `pin` is false; resolves once it printed
 * its first line (it listens). `label` prefixes what it prints afterwards.
 */
export async function startServer({ label, file, env, nodeArgs = [], pin = true }) {
  const argv = [...nodeArgs, file];
  const [command, commandArgs] = pin
    ? ['taskset', ['-c', SERVER_CPU, process.execPath, ...argv]]
    : [process.execPath, argv];
  const child = spawn(command, commandArgs, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const ready = await Promise.race([
    new Promise((resolve) => lines.once('line', () => resolve(true))),
    exited(child).then(() => false),
    sleep(60_000, false, { ref: false }),
  ]);
  if (!ready) {
    child.kill('SIGKILL');
    throw new Error(`${label} server did not start`);
  }
  lines.on('line', (line) =>
    process.stdout.write(`  [${label}] ${line.length > 300 ? `${line.slice(0, 300)}…` : line}\n`),
  );
  return stoppable(child);
}

/** A child process as a server: its pid, and stop() (SIGTERM, SIGKILL after 10 s, until it exited). */
export function stoppable(child) {
  return {
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM');
      if ((await Promise.race([exited(child), sleep(10_000, 'timeout', { ref: false })])) === 'timeout')
        child.kill('SIGKILL');
      await exited(child);
    },
  };
}

/** Starts a server with `start()`, calls fn(server) and stops it again. */
export async function withServer(start, fn) {
  const server = await start();
  try {
    return await fn(server);
  } finally {
    await server.stop();
  }
}

/** CPU seconds used so far by the processes `pids` (utime + stime from /proc, at 100 ticks/s). */
export function cpuSeconds(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100;
}

export function postgresPids() {
  return readdirSync('/proc').filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/comm`, 'utf8') === 'postgres\n';
    } catch {
      return false;
    }
  });
}

/**
 * PostgreSQL's CPU over a run: `postgresCpu()` at its start returns a function giving the CPU
 * seconds its processes used since. A backend started meanwhile (a pool that grows under load, a
 * connection opened after the start) counts from zero; one that ended meanwhile is lost, as
 * /proc no longer has it. Taking the processes at the start alone missed the new backends: their
 * work was counted as other work and the runs marked disturbed.
 */
export function postgresCpu() {
  const at = () => new Map(postgresPids().map((pid) => [pid, cpuSeconds([pid])]));
  const start = at();
  return () => {
    let used = 0;
    for (const [pid, now] of at()) used += now - (start.get(pid) ?? 0);
    return used;
  };
}

/** Busy CPU seconds of the whole machine so far, all cores (/proc/stat). */
export function machineBusy() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / 100;
}

/**
 * Other work on this shared machine skews a run: wait (up to a minute, or BENCH_QUIET_WAIT
 * seconds) for a quiet second.
 */
const QUIET_WAIT = Number(process.env.BENCH_QUIET_WAIT ?? 60);
/** How often a disturbed run is tried (BENCH_ATTEMPTS, default 3); the last one is kept, marked. */
export const ATTEMPTS = Number(process.env.BENCH_ATTEMPTS ?? 3);

export async function quiet() {
  for (let waited = 0; waited < QUIET_WAIT; waited++) {
    const start = machineBusy();
    await sleep(1000);
    if (machineBusy() - start < 0.15) return;
  }
  console.log(`  (the machine stayed busy for ${QUIET_WAIT} s; measuring anyway)`);
}

/**
 * One measurement: a fresh server from `start(nodeArgs)`, warm-up and measured load from
 * autocannon on its own core (`load.mjs`), the server stopped by its PID. `load` holds
 * connections, warmup and duration (seconds) and optionally `probe` (sequential requests timed
 * after the warm-up). Returns autocannon's figures with the CPU use of the server, of PostgreSQL
 * and of everything else on the machine while autocannon measured.
 */
export async function measure({ label, start, dialect, request, port, load, nodeArgs = [] }) {
  await quiet();
  const server = await start(nodeArgs);
  try {
    const spec = { url: `http://127.0.0.1:${port}${request.path}`, ...request, ...load };
    const child = spawn('taskset', ['-c', LOAD_CPU, process.execPath, 'bench/load.mjs', JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let dbCpu = () => 0;
    const cpu = () => ({
      server: cpuSeconds([server.pid]),
      db: dbCpu(),
      machine: machineBusy(),
      wall: Date.now() / 1000,
    });
    let before;
    let after;
    let result;
    for await (const line of createInterface({ input: child.stdout })) {
      if (line === 'warm') {
        if (dialect === 'postgres') dbCpu = postgresCpu();
        before = cpu();
      } else {
        after = cpu();
        result = JSON.parse(line);
      }
    }
    if ((await exited(child)) !== 0 || !result) throw new Error('the load generator failed');
    if (result.non2xx || result.errors || result.timeouts)
      throw new Error(`${label}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
    // CPU in cores while autocannon measured; `otherCpu` is what neither the bench nor the database used.
    const use = (key) => (after[key] - before[key]) / (after.wall - before.wall);
    const { cpu: loadCpu, ...measured } = result;
    const otherCpu = Math.max(0, use('machine') - use('server') - use('db') - loadCpu);
    // Per request: CPU seconds in the window over the requests it served.
    const perRequestUs = (key) => ((after[key] - before[key]) / result.total) * 1e6;
    return {
      ...measured,
      serverCpu: use('server'),
      dbCpu: use('db'),
      loadCpu,
      otherCpu,
      serverUsPerRequest: perRequestUs('server'),
      dbUsPerRequest: perRequestUs('db'),
    };
  } finally {
    await server.stop();
  }
}

/** Repeats a measurement (up to 3 times) while other work on the machine used more than DISTURBED cores. */
export async function undisturbed(run) {
  let r;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    r = await run();
    if (r.otherCpu <= DISTURBED) return r;
    console.log(
      `  (other processes used ${fmt(r.otherCpu * 100)} % CPU during that run of ${fmt(r.rps)} req/s; ${attempt < ATTEMPTS ? 'repeating it' : 'keeping it, marked disturbed'})`,
    );
  }
  return { ...r, disturbed: true };
}

/** One extra run under --cpu-prof (not counted): `run(nodeArgs)` measures; returns where the CPU went. */
export async function profiled(dir, run) {
  mkdirSync(dir, { recursive: true });
  // The SQLite statements too (lib/sql-probe.mjs): the profile charges their time to their callers.
  const probe = pathToFileURL(path.join(ROOT, 'bench/lib/sql-probe.mjs'));
  probe.searchParams.set('out', dir);
  const r = await run(['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', probe.href]);
  // The main thread's profile (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile): a worker's has its own.
  const file = path.join(
    dir,
    readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ??
      readdirSync(dir).find((f) => f.endsWith('.cpuprofile')),
  );
  const top = summarizeProfile(file);
  const sql = sqlSummary(dir, top.busyMs);
  return { r, file: path.relative(ROOT, file), top, sql, text: formatProfile(top) + formatSql(sql) };
}

/**
 * The statements lib/sql-probe.mjs counted in `dir` (every server process of the run), the most time
 * first: those of main threads, which share the busy time of the profile; those of worker threads
 * (`sql-<pid>-t<n>.json`, such as the checkpointer's), which do not, as a total beside them.
 */
export function sqlSummary(dir, busyMs, top = 25) {
  const read = (pattern) => {
    const all = new Map();
    for (const f of readdirSync(dir).filter((name) => pattern.test(name)))
      for (const { sql, calls, ns } of JSON.parse(readFileSync(path.join(dir, f), 'utf8'))) {
        const s = all.get(sql) ?? { calls: 0, ns: 0 };
        all.set(sql, { calls: s.calls + calls, ns: s.ns + ns });
      }
    return [...all].map(([sql, s]) => ({ sql, ...s })).sort((a, b) => b.ns - a.ns);
  };
  const statements = read(/^sql-\d+\.json$/);
  const totalMs = statements.reduce((sum, s) => sum + s.ns, 0) / 1e6;
  const workers = read(/^sql-\d+-t\d+\.json$/);
  return {
    workers: workers.map((s) => ({
      sql: s.sql.length > 60 ? `${s.sql.slice(0, 60)}…` : s.sql,
      calls: s.calls,
      ms: Math.round(s.ns / 1e6),
    })),
    totalMs: Math.round(totalMs),
    share: busyMs ? Math.round((1000 * totalMs) / busyMs) / 10 : undefined,
    statements: statements.slice(0, top).map((s) => ({
      sql: s.sql.length > 110 ? `${s.sql.slice(0, 110)}…` : s.sql,
      calls: s.calls,
      usEach: Math.round(s.ns / s.calls / 100) / 10,
      share: busyMs ? Math.round(s.ns / 1e3 / busyMs) / 10 : undefined,
    })),
  };
}

export function formatSql(summary) {
  if (!summary.statements.length) return '';
  const lines = [
    `SQLite statements (counted): ${summary.totalMs} ms${summary.share === undefined ? '' : ` = ${summary.share} % of busy`}`,
    '  calls  µs each  % busy  statement',
  ];
  for (const s of summary.statements)
    lines.push(
      `  ${String(s.calls).padStart(6)}  ${String(s.usEach).padStart(7)}  ${String(s.share ?? '').padStart(6)}  ${s.sql}`,
    );
  if (summary.workers?.length)
    lines.push(
      `  in worker threads (not in the busy time): ${summary.workers.map((w) => `${w.sql} ×${w.calls}, ${w.ms} ms`).join('; ')}`,
    );
  return `\n${lines.join('\n')}`;
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Runs ours and the limit alternately (ABBA…) `runs` times; `one(kind)` measures once. */
export async function alternate(runs, one, log) {
  const out = [];
  for (let run = 1; run <= runs; run++) {
    for (const kind of run % 2 ? ['ours', 'baseline'] : ['baseline', 'ours']) {
      const r = await undisturbed(() => one(kind));
      const cpus = `CPU: server ${fmt(r.serverCpu * 100)} %, autocannon ${fmt(r.loadCpu * 100)} %, postgres ${fmt(r.dbCpu * 100)} %, other ${fmt(r.otherCpu * 100)} %`;
      const latency = r.mean !== undefined ? `mean ${fmt(r.mean, 2)} ms  ` : '';
      const probe = r.probe ? `  unloaded ${fmt(r.probe.p50Us)} µs` : '';
      console.log(
        `  run ${run} ${kind.padEnd(8)} ${fmt(r.rps).padStart(7)} req/s  ${latency}p99 ${r.p99} ms${probe}  ${cpus}${r.disturbed ? '  (disturbed)' : ''}`,
      );
      out.push({ ...log, kind, run, ...r });
    }
  }
  return out;
}

/** Medians of one server's runs. */
export function medians(runs, kind) {
  const rs = runs.filter((r) => r.kind === kind);
  const med = (get) => median(rs.map(get));
  const out = {
    rps: med((r) => r.rps),
    p99: med((r) => r.p99),
    cpuUs: med((r) => r.serverUsPerRequest),
    dbCpuUs: med((r) => r.dbUsPerRequest),
  };
  if (rs.every((r) => r.mean !== undefined)) out.mean = med((r) => r.mean);
  if (rs.every((r) => r.probe)) out.probeUs = med((r) => r.probe.p50Us);
  return out;
}

/**
 * Ours runs from a copy of dist/ taken at the start, so that a rebuild meanwhile (tests, a
 * watcher) cannot change the server under test halfway through. Returns the copy's root.
 */
export function snapshotDist(name) {
  const dir = path.join(RESULTS, name);
  rmSync(dir, { recursive: true, force: true });
  cpSync(path.join(ROOT, 'dist'), dir, { recursive: true });
  return dir;
}

/** The commit the server was built from, noting uncommitted changes under `paths`. */
export function sourceOf(paths) {
  const git = (...a) => spawnSync('git', a, { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
  // A bench run straight from node (not `npm run bench:…`, which builds first) measures dist/ as it is.
  const stale = staleReason(ROOT);
  return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', ...paths) ? ` with uncommitted changes in ${paths.join(' or ')}` : ''}${stale ? `, but dist/ is older (${stale})` : ''}`;
}

export function machineDescription() {
  return `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.type()} ${os.release()}`;
}

/** The PostgreSQL URL of the run (BENCH_POSTGRES_URL or TEST_POSTGRES_URL) with `?schema=`, or undefined. */
export function postgresUrl(schema) {
  const raw = process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL;
  if (!raw) return undefined;
  const url = new URL(raw);
  url.searchParams.set('schema', schema);
  return url.toString();
}

export function writeResults(stamp, raw, md) {
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(path.join(RESULTS, `${stamp}.json`), `${JSON.stringify(raw, null, 2)}\n`);
  writeFileSync(path.join(RESULTS, `${stamp}.md`), md);
  console.log(`\n${md}\nwritten to bench/results/${stamp}.{json,md}`);
}

export const timestamp = () => new Date().toISOString().replace(/[:.]/g, '-');
