import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { DOMAIN, dropInboxSchema, inboxConfig, loadService } from './inbox-seed.mjs';
import * as harness from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';
import { fmt, median, postgresUrl, RESULTS, ROOT, sourceOf, timestamp, writeResults } from './lib/harness.mjs';
import { formatLongTasks, formatProfile, longTasks, summarizeProfile } from './profile.mjs';

/**
 * `npm run bench:bigsend`: do sends at the size limits stall other organizations? One inbox
 * server (dist/src/inbox/main.js, INBOX_ROLES=api, not pinned: its worker threads may use the
 * second core, as they would on any machine with more than one). Organization "others" reads
 * `GET /v0/inboxes` over a few keep-alive connections, one request after the other on each, and
 * every latency is recorded, from a thread of the bench's own (lib/bigsend-readers.mjs), so that
 * the time the bench spends writing big bodies is not counted as the server's. Phase "alone": nothing else runs. Phase "big sends": organization
 * "big" at the same time keeps `--senders` sends in flight, each at the limits of the variant
 * (`text`: the largest text; `html`: the largest html; `full`: the largest text and html and
 * attachments totalling INBOX_MAX_ATTACHMENT_BYTES), each to one other local inbox. The server's
 * resident set is sampled from /proc every 10 ms; peak RSS per send in flight is (peak during the
 * phase − RSS of the server before) / senders, compared with the size of
 * the stored message (its RFC 5322 source). The target's measure takes it from a warm server
 * (decision 0031): the peak of the phase alone, which follows the first big send, instead of the
 * idle RSS, so what the sends in flight cost once the one-time costs of the first (a worker thread
 * started, heaps and caches grown) are paid. From idle is shown beside it. Phase "one send" in
 * between keeps a single big send in flight, which splits the growth from idle in two: what it
 * took to get one send through (peak during one send − idle RSS) and what each further send in
 * flight added ((peak during big sends − peak during one send) / (senders − 1)) (bench/README.md,
 * big sends).
 * Variant `mixed` is issue 32's send: 1.9 MiB of text and a 9.5 MiB attachment (14.6 MiB of JSON);
 * `--arrivals 10` replaces the keep-alive readers by one request every 10 ms on a new connection
 * each (open loop, as independent clients arrive), the way issue 32 measured the others' latency;
 * the phase "one send" is then its "one send after the other". Run it on PostgreSQL as the issue:
 * `BENCH_SQLITE=0 BENCH_POSTGRES_URL=… npm run bench:bigsend -- --variants mixed --arrivals 10`.
 * Options: --duration 10 --runs 3 --readers 4 --arrivals <ms> --senders 2
 * --variants text,html,full,mixed --profile --floor
 * (--runs: fresh servers per variant, each measured alone and during big sends; the verdicts
 * go by the median over the runs, since one run's p99 moves by tens of milliseconds; --profile:
 * one extra --cpu-prof run per variant, not counted; --floor: per run, one more fresh server that
 * only receives the same requests, each with an address the API refuses, so that every request
 * is read and parsed and answered 400 before anything is composed or stored: the memory that
 * receiving a body of that size takes, a floor under the target's measure). PostgreSQL too when BENCH_POSTGRES_URL or
 * TEST_POSTGRES_URL is set (schema bench_bigsend, dropped afterwards).
 */

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string' },
    runs: { type: 'string' },
    readers: { type: 'string' },
    arrivals: { type: 'string' },
    senders: { type: 'string' },
    variants: { type: 'string' },
    profile: { type: 'boolean' },
    floor: { type: 'boolean' },
  },
});
const opts = {
  duration: Number(args.duration ?? process.env.BENCH_DURATION ?? 10),
  runs: Number(args.runs ?? process.env.BENCH_RUNS ?? 3),
  readers: Number(args.readers ?? 4),
  /** ms between the others' requests, each on a new connection (instead of `readers` keep-alive loops). */
  arrivalMs: args.arrivals === undefined ? undefined : Number(args.arrivals),
  senders: Number(args.senders ?? 2),
  variants: (args.variants ?? 'text,html,full').split(','),
  profile: args.profile ?? process.env.BENCH_PROFILE === '1',
  floor: args.floor ?? false,
};
// The memory split compares the peak with one send in flight against the peak with more.
if (!(opts.senders >= 2)) throw new Error('--senders must be at least 2');
const MAIN = process.env.BENCH_OURS ?? path.join(ROOT, 'dist/src/inbox/main.js');
/** Another build's main.js (e.g. the commit before a change): run right before ours for each variant, same database. */
const BASELINE = process.env.BENCH_BASELINE;
const TARGET_P99_MS = 50;
/** Started in every measured server: its event-loop delay per phase. */
const LOOP_DELAY = new URL('./lib/loop-delay.mjs', import.meta.url).href;
const TARGET_RSS_FACTOR = 4;

/** Prose with umlauts and long paragraphs (quoted-printable, as real mail), `bytes` UTF-8 bytes long. */
function prose(bytes, html) {
  const sentence =
    'Sehr geehrte Damen und Herren, anbei die Übersicht der Lieferungen für das dritte Quartal; bitte prüfen Sie die Beträge und Fälligkeiten. ';
  const paragraph = html ? `<p>${sentence.repeat(6)}<b>Summe</b> &amp; Grüße</p>\n` : `${sentence.repeat(6)}\n\n`;
  const out = paragraph.repeat(Math.ceil(bytes / Buffer.byteLength(paragraph)));
  // Cut at a character boundary at or below `bytes`.
  let s = out.slice(0, bytes);
  while (Buffer.byteLength(s) > bytes) s = s.slice(0, -1);
  return s;
}

function bodies(limits, to) {
  const attachment = Buffer.alloc(limits.attachmentBytes);
  for (let i = 0; i < attachment.length; i++) attachment[i] = (i * 2654435761) >>> 24;
  const text = prose(limits.bodyBytes, false);
  const html = prose(limits.bodyBytes, true);
  const base = { to, subject: 'Quarterly delivery report' };
  // Issue 32's send: 1.9 MiB of text and a 9.5 MiB attachment, 14.6 MiB of JSON.
  const mixedText = prose(Math.min(limits.bodyBytes, 1.9 * 2 ** 20), false);
  const mixedAttachment = attachment.subarray(0, Math.min(attachment.length, 9.5 * 2 ** 20));
  return {
    mixed: JSON.stringify({
      ...base,
      text: mixedText,
      attachments: [
        {
          filename: 'report.bin',
          content_type: 'application/octet-stream',
          content: mixedAttachment.toString('base64'),
        },
      ],
    }),
    text: JSON.stringify({ ...base, text }),
    html: JSON.stringify({ ...base, html }),
    full: JSON.stringify({
      ...base,
      text,
      html,
      attachments: [
        { filename: 'report.bin', content_type: 'application/octet-stream', content: attachment.toString('base64') },
      ],
    }),
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function request(port, method, urlPath, apiKey, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Reads /proc/<pid>/status VmRSS in bytes. */
function rss(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** CPU time of the server's main thread (the event loop) so far, ms: utime + stime of /proc/<pid>/task/<pid>/stat. */
function mainThreadCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** The server's event-loop delay since the last call (lib/loop-delay.mjs, which it was started with): signals it and reads its report. */
async function loopDelay(pid, file) {
  const seqOf = () => {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return { seq: 0 };
    }
  };
  const before = existsSync(file) ? seqOf().seq : 0;
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 300; i++) {
    await sleep(10);
    const report = seqOf();
    if (report.seq > before) return report;
  }
  throw new Error('the server did not report its event-loop delay');
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** One phase: readers of `others` for `duration` s, with `senders` loops of big sends of `body` if given. */
async function phase({ port, pid, loopFile, others, big, body, senders, status = 200 }) {
  await loopDelay(pid, loopFile);
  let sent = 0;
  let sendMs = [];
  const rssBefore = rss(pid);
  const cpuBefore = mainThreadCpuMs(pid);
  // PostgreSQL's backends work for the sends too, on the same cores: their CPU beside the loop's.
  const pgCpu = harness.postgresCpu();
  let peak = rssBefore;
  const end = performance.now() + opts.duration * 1000;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 10);
  // The readers run in a thread of their own (lib/bigsend-readers.mjs), not timed by this busy one.
  const readers = new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./lib/bigsend-readers.mjs', import.meta.url), {
      workerData: {
        port,
        apiKey: others.apiKey,
        readers: opts.readers,
        arrivalMs: opts.arrivalMs,
        endAt: Date.now() + opts.duration * 1000,
      },
    });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const sender = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      const r = await request(
        port,
        'POST',
        `/v0/inboxes/${encodeURIComponent(big.from)}/messages/send`,
        big.apiKey,
        body,
      );
      if (r.status !== status)
        throw new Error(`big send answered ${r.status} instead of ${status}: ${r.body.slice(0, 300)}`);
      sendMs.push(performance.now() - t);
      sent++;
    }
  };
  const [read] = await Promise.all([readers, ...(body ? Array.from({ length: senders }, sender) : [])]);
  clearInterval(sampler);
  const loop = await loopDelay(pid, loopFile);
  const mainCpuMs = mainThreadCpuMs(pid) - cpuBefore;
  const postgresCpuMs = pgCpu() * 1000;
  // The readers' thread's array as it is: spreading it into another overflows the stack in long phases.
  const sorted = read.latencies.sort((a, b) => a - b);
  return {
    requests: sorted.length,
    errors: read.errors,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
    mainCpuMs,
    postgresCpuMs,
    sends: sent,
    sendMedianMs: sendMs.length ? median(sendMs) : null,
    rssBefore,
    rssPeak: peak,
    loop,
  };
}

/** The build (its `dist`) that serves `main`, a `dist/src/inbox/main.js`. */
const distOf = (main) => path.resolve(path.dirname(main), '../..');

/**
 * A fresh database (SQLite file or PostgreSQL schema) seeded by the build in `dist`: the server
 * measured next must find its own schema, and every run starts from the same state.
 */
async function seed(db, dir, dist) {
  if (db.sqliteFile) for (const suffix of ['', '-wal', '-shm']) rmSync(db.sqliteFile + suffix, { force: true });
  const svc = await loadService(dist);
  const config = inboxConfig(db.url, dir);
  const database = await svc.openInboxDatabase(config);
  try {
    if (database.dialect === 'postgres') await dropInboxSchema(db.url, dir).catch(() => {});
    if (database.dialect === 'postgres') {
      const { sql } = await import('kysely');
      const schema = new URL(db.url).searchParams.get('schema');
      await sql`create schema if not exists ${sql.id(schema)}`.execute(database.db);
    }
    await svc.migrateInbox(database);
    const { services } = svc.createInboxServices(config, database.db, { log: { warn() {}, error() {} } });
    const org = async (name, inboxes) => {
      const key = await services.apiKeys.createKey({ name });
      const owner = { apiKeyId: key.apiKeyId, organizationId: key.organizationId };
      const made = [];
      for (const username of inboxes)
        made.push((await services.inboxes.create(owner, { username, displayName: username })).inbox.inboxId);
      return { apiKey: key.key, inboxes: made };
    };
    const big = await org('big', ['bulk', 'archive']);
    const others = await org(
      'others',
      Array.from({ length: 20 }, (_, i) => `agent${i}`),
    );
    return {
      big: { apiKey: big.apiKey, from: big.inboxes[0], to: big.inboxes[1] },
      others,
      limits: { attachmentBytes: config.maxAttachmentBytes, bodyBytes: config.maxBodyBytes ?? 12 * 2 ** 20 },
    };
  } finally {
    await database.destroy();
  }
}

/** The same request with a recipient the API refuses: read and parsed in full, then answered 400. */
const refused = (body) => body.replace(/^\{"to":"[^"]*"/, '{"to":"not an address"');

async function runVariant(db, dir, port, seeded, variant, body, nodeArgs = [], file = MAIN, floor = false) {
  const env = {
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    INBOX_PORT: String(port),
    DATA_DIR: dir,
    INBOX_DATABASE_URL: db.url,
    INBOX_ROLES: 'api',
    INBOX_DOMAINS: DOMAIN,
    INBOX_RATE_LIMIT_PER_MINUTE: '10000000',
    INBOX_SEND_LIMIT_PER_DAY: '100000000',
    BENCH_LOOP_DELAY_FILE: path.join(dir, 'loop-delay.json'),
  };
  // Not pinned: the server and its worker threads may use both cores.
  // A report left by the last server would count as this one's.
  rmSync(env.BENCH_LOOP_DELAY_FILE, { force: true });
  const child = await harness.startServer({
    label: variant,
    file,
    env,
    nodeArgs: ['--import', LOOP_DELAY, ...nodeArgs],
    pin: false,
  });
  const loopFile = env.BENCH_LOOP_DELAY_FILE;
  try {
    // Warm-up: a few reads and one big send, so that both phases start from a warm server.
    for (let i = 0; i < 50; i++) await request(port, 'GET', '/v0/inboxes', seeded.others.apiKey);
    await sleep(500);
    const rssIdle = rss(child.pid);
    // --floor: nothing but refused requests from the idle server on, then one send for the message's size.
    const received = floor
      ? await phase({
          port,
          pid: child.pid,
          loopFile,
          others: seeded.others,
          big: seeded.big,
          body: refused(body),
          senders: opts.senders,
          status: 400,
        })
      : undefined;
    const first = await request(
      port,
      'POST',
      `/v0/inboxes/${encodeURIComponent(seeded.big.from)}/messages/send`,
      seeded.big.apiKey,
      body,
    );
    if (first.status !== 200)
      throw new Error(`${variant}: the big send answered ${first.status}: ${first.body.slice(0, 500)}`);
    const { message_id } = JSON.parse(first.body);
    const meta = JSON.parse(
      (
        await request(
          port,
          'GET',
          `/v0/inboxes/${encodeURIComponent(seeded.big.from)}/messages/${encodeURIComponent(message_id)}`,
          seeded.big.apiKey,
        )
      ).body,
    );
    const base = {
      server: file === MAIN ? 'ours' : 'baseline',
      load: os.loadavg()[0],
      variant,
      dialect: db.dialect,
      requestBytes: Buffer.byteLength(body),
      messageBytes: meta.size,
      rssIdle,
    };
    if (received) return { ...base, floor: true, received };
    await sleep(500);
    const alone = await phase({ port, pid: child.pid, loopFile, others: seeded.others, big: seeded.big });
    const one = await phase({
      port,
      pid: child.pid,
      loopFile,
      others: seeded.others,
      big: seeded.big,
      body,
      senders: 1,
    });
    const during = await phase({
      port,
      pid: child.pid,
      loopFile,
      others: seeded.others,
      big: seeded.big,
      body,
      senders: opts.senders,
    });
    return { ...base, alone, one, during };
  } finally {
    await child.stop();
  }
}

function databases(dir) {
  const out =
    process.env.BENCH_SQLITE === '0'
      ? []
      : [{ dialect: 'sqlite', url: `sqlite:${path.join(dir, 'inbox.db')}`, sqliteFile: path.join(dir, 'inbox.db') }];
  const pgUrl = postgresUrl('bench_bigsend');
  if (pgUrl) out.push({ dialect: 'postgres', url: pgUrl });
  return out;
}

/**
 * Peak RSS per big send in flight over the message's size: `fromWarmFactor`, the peak during big
 * sends over the peak of the readers' phase alone (after the first big send), spread over the
 * senders: the target's measure (decision 0031); `fromIdleFactor`, the same over the idle server's
 * RSS, and its two parts: `once`, the peak with one send in flight over the idle server's RSS, and
 * `perSend`, what each send beyond the first added to the peak (`factor`: that over the message's
 * size).
 */
function rssPerSend(r) {
  const perSend = (r.during.rssPeak - r.one.rssPeak) / (opts.senders - 1);
  const fromIdle = (r.during.rssPeak - r.rssIdle) / opts.senders;
  // The peak of the readers' phase alone, which follows the first big send (its thread started, its heaps grown).
  const fromWarm = (r.during.rssPeak - r.alone.rssPeak) / opts.senders;
  return {
    perSend,
    factor: perSend / r.messageBytes,
    once: r.one.rssPeak - r.rssIdle,
    fromIdleFactor: fromIdle / r.messageBytes,
    fromWarmFactor: fromWarm / r.messageBytes,
  };
}

/** Per database, variant and server: the median of the runs, with the range, and the verdicts by the medians. */
function medianTable(results) {
  const mb = (n) => fmt(n / 2 ** 20, 1);
  const rows = [
    `| Database | Variant | Server | Runs | Others' p99 alone (median) | Others' p99, one send after the other (median) | Others' p99 during big sends: median (min–max) | p99 < ${TARGET_P99_MS} ms (median) | Peak RSS per send in flight, from warm (median) | < ${TARGET_RSS_FACTOR}× message (median) | From idle (median) | Once, with the first send in flight (median) | Each further send in flight: median (min–max) |`,
    '|---|---|---|--:|--:|--:|--:|---|--:|---|--:|--:|--:|',
  ];
  const groups = new Map();
  for (const r of results) {
    const key = `${r.dialect}|${r.variant}|${r.server}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  for (const runs of groups.values()) {
    const [first] = runs;
    const during = runs.map((r) => r.during.p99);
    const p99 = median(during);
    const perSend = median(runs.map((r) => rssPerSend(r).perSend));
    const factors = runs.map((r) => rssPerSend(r).factor);
    const factor = median(factors);
    const once = median(runs.map((r) => rssPerSend(r).once));
    const fromIdle = median(runs.map((r) => rssPerSend(r).fromIdleFactor));
    const fromWarm = median(runs.map((r) => rssPerSend(r).fromWarmFactor));
    rows.push(
      `| ${first.dialect} | ${first.variant} | ${first.server} | ${runs.length} | ${fmt(median(runs.map((r) => r.alone.p99)), 1)} ms | ${fmt(median(runs.map((r) => r.one.p99)), 1)} ms | **${fmt(p99, 1)}** (${fmt(Math.min(...during), 1)}–${fmt(Math.max(...during), 1)}) ms | ${p99 < TARGET_P99_MS ? 'met' : '**missed**'} | **${fmt(fromWarm, 2)}×** | ${fromWarm < TARGET_RSS_FACTOR ? 'met' : '**missed**'} | ${fmt(fromIdle, 2)}× | ${mb(once)} MiB | ${mb(perSend)} MiB = ${fmt(factor, 2)}× (${fmt(Math.min(...factors), 2)}–${fmt(Math.max(...factors), 2)}×) |`,
    );
  }
  return rows.join('\n');
}

function table(results) {
  const mb = (n) => fmt(n / 2 ** 20, 1);
  const rows = [
    `| Database | Variant | Server (load) | Message | Others' p50 / p99 / max alone | Others' p50 / p99 / max, one send after the other | Others' p50 / p99 / max during big sends | Event-loop delay p99 / max, stalls ≥ 10 ms (count: ms in all): one send after the other; during big sends | CPU of the event loop / of PostgreSQL's processes: one send after the other; during | p99 ratio | p99 < ${TARGET_P99_MS} ms | Big sends (median) | Event-loop CPU per big send | RSS idle → warm → peak with one send → peak | Peak RSS per send in flight, from warm | < ${TARGET_RSS_FACTOR}× message | From idle | Each further send in flight |`,
    '|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|--:|--:|',
  ];
  for (const r of results) {
    const { perSend, factor, fromIdleFactor, fromWarmFactor } = rssPerSend(r);
    // The main thread's CPU during the big sends, less what serving the others' reads cost alone, per send.
    const readCpu = r.alone.requests ? (r.alone.mainCpuMs / r.alone.requests) * r.during.requests : 0;
    const loopPerSend = r.during.sends ? (r.during.mainCpuMs - readCpu) / r.during.sends : 0;
    const lat = (p) => `${fmt(p.p50, 1)} / ${fmt(p.p99, 1)} / ${fmt(p.max, 1)} ms`;
    const cpu = (p) => `${fmt(p.mainCpuMs)} / ${p.postgresCpuMs === undefined ? '–' : fmt(p.postgresCpuMs)} ms`;
    const loop = ({ loop: l }) =>
      l
        ? `${fmt(l.p99, 1)} / ${fmt(l.max, 1)} ms, ${l.stalls}: ${l.stalledMs} ms (longest ${l.longest.join(', ')})`
        : '–';
    rows.push(
      `| ${r.dialect} | ${r.variant} | ${r.server} #${r.run} (${fmt(r.load, 1)}) | ${mb(r.messageBytes)} MiB | ${lat(r.alone)} | ${lat(r.one)} | ${lat(r.during)} | ${loop(r.one)}; ${loop(r.during)} | ${cpu(r.one)}; ${cpu(r.during)} | **${fmt(r.during.p99 / r.alone.p99, 2)}** | ${r.during.p99 < TARGET_P99_MS ? 'met' : '**missed**'} | ${r.during.sends} in ${opts.duration} s (${fmt(r.during.sendMedianMs ?? 0)} ms) | ${fmt(loopPerSend)} ms | ${mb(r.rssIdle)} → ${mb(r.alone.rssPeak)} → ${mb(r.one.rssPeak)} → ${mb(r.during.rssPeak)} MiB | **${fmt(fromWarmFactor, 2)}×** | ${fromWarmFactor < TARGET_RSS_FACTOR ? 'met' : '**missed**'} | ${fmt(fromIdleFactor, 2)}× | ${mb(perSend)} MiB = ${fmt(factor, 2)}× |`,
    );
  }
  return rows.join('\n');
}

/** Every --floor run: peak RSS per refused request in flight, from the idle server, over the message's size. */
function floorTable(floors) {
  const mb = (n) => fmt(n / 2 ** 20, 1);
  const rows = [
    `| Database | Variant | Server (load) | Message | Requests refused in ${opts.duration} s | RSS idle → peak | Peak RSS per request in flight (from idle) | < ${TARGET_RSS_FACTOR}× message |`,
    '|---|---|---|--:|--:|--:|--:|---|',
  ];
  for (const f of floors) {
    const factor = (f.received.rssPeak - f.rssIdle) / opts.senders / f.messageBytes;
    rows.push(
      `| ${f.dialect} | ${f.variant} | ${f.server} #${f.run} (${fmt(f.load, 1)}) | ${mb(f.messageBytes)} MiB | ${f.received.sends} | ${mb(f.rssIdle)} → ${mb(f.received.rssPeak)} MiB | **${fmt(factor, 2)}×** | ${factor < TARGET_RSS_FACTOR ? 'met' : '**missed**'} |`,
    );
  }
  return rows.join('\n');
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bigsend-bench-'));
  const port = await harness.freePort();
  const stamp = timestamp();
  const results = [];
  const floors = [];
  const profiles = [];
  const source = process.env.BENCH_SOURCE ?? sourceOf(['src/inbox', 'src/platform']);
  console.log(
    `big-send bench: ${opts.runs} runs per variant, ${opts.duration} s per phase, ${opts.readers} readers, ${opts.senders} big sends in flight; variants ${opts.variants.join(', ')}`,
  );
  try {
    for (const db of databases(dir)) {
      const first = await seed(db, dir, distOf(MAIN));
      const all = bodies(first.limits, first.big.to);
      try {
        for (const variant of opts.variants) {
          for (let run = 1; run <= opts.runs; run++) {
            // With a baseline the two alternate (AB BA AB …), so that drift hits both alike.
            const order = BASELINE ? (run % 2 ? [BASELINE, MAIN] : [MAIN, BASELINE]) : [MAIN];
            for (const file of order) {
              const seeded = await seed(db, dir, distOf(file));
              await harness.quiet();
              const r = { ...(await runVariant(db, dir, port, seeded, variant, all[variant], [], file)), run };
              console.log(`${db.dialect} ${variant} ${r.server} run ${run}: ${JSON.stringify(r)}`);
              results.push(r);
              if (!opts.floor) continue;
              const f = {
                ...(await runVariant(
                  db,
                  dir,
                  port,
                  await seed(db, dir, distOf(file)),
                  variant,
                  all[variant],
                  [],
                  file,
                  true,
                )),
                run,
              };
              console.log(`${db.dialect} ${variant} ${f.server} floor ${run}: ${JSON.stringify(f)}`);
              floors.push(f);
            }
          }
          if (opts.profile) {
            const profileDir = path.join(RESULTS, 'profiles', `${stamp}-bigsend-${db.dialect}-${variant}`);
            mkdirSync(profileDir, { recursive: true });
            await runVariant(db, dir, port, await seed(db, dir, distOf(MAIN)), variant, all[variant], [
              '--cpu-prof',
              `--cpu-prof-dir=${profileDir}`,
            ]);
            for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
              const top = summarizeProfile(path.join(profileDir, file));
              profiles.push({
                dialect: db.dialect,
                variant,
                file: path.relative(ROOT, path.join(profileDir, file)),
                ...top,
              });
              const long = longTasks(path.join(profileDir, file));
              profiles[profiles.length - 1].longTasks = long;
              console.log(`  profile ${file} (not counted):\n${formatProfile(top).replace(/^/gm, '    ')}`);
              console.log(`  its tasks of 10 ms or more:\n${formatLongTasks(long).replace(/^/gm, '    ')}`);
            }
          }
        }
      } finally {
        if (db.dialect === 'postgres') await dropInboxSchema(db.url, dir);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const machine = await machineWithCosts();
  const md = [
    `Big-send bench, ${new Date().toISOString()}; ${machine}`,
    `Server: dist/src/inbox/main.js with INBOX_ROLES=api (built from ${source}), not pinned. ${opts.arrivalMs ? `Another organization's GET /v0/inboxes every ${opts.arrivalMs} ms, each on a new connection,` : `${opts.readers} readers of another organization, each one GET /v0/inboxes after the other,`} for ${opts.duration} s alone, ${opts.duration} s beside one big send in flight and ${opts.duration} s beside ${opts.senders}; ${opts.runs} runs per variant, each on a fresh server.`,
    '',
    medianTable(results),
    '',
    'Every run:',
    '',
    table(results),
    '',
    ...(floors.length
      ? [
          `Receiving alone (--floor): ${opts.senders} loops of the same requests with a refused recipient, each read, parsed and answered 400, from the idle server on:`,
          '',
          floorTable(floors),
          '',
        ]
      : []),
  ].join('\n');
  writeResults(
    stamp,
    { date: new Date().toISOString(), machine, source, options: opts, results, floors, profiles },
    md,
  );
}

await main();
