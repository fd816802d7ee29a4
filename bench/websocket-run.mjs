import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { execSync, spawn } from 'node:child_process';
import {
  freePort,
  LOAD_CPU,
  postgresUrl,
  ROOT,
  sourceOf,
  startServer,
  timestamp,
  writeResults,
} from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';

/**
 * `npm run bench:ws`: real-time events over WebSocket at 1,000 subscribed connections.
 *
 * The service (dist/src/inbox/main.js, roles api, worker and smtp, pinned to CPU 0) on a fresh
 * database; `--connections` WebSocket clients on loopback (`ws`, the client
 * the SDK is built on) in `--client-processes` child processes (`lib/ws-clients.mjs`, pinned to CPU
 * 1), each client subscribed to `message.received`
 * of one inbox. Then messages arrive
 * one at a time, the next once every client has the previous one's frame: `--messages` sent
 * through the API (`POST …/messages/send`) and as many through SMTP (one session, one message per
 * transaction). For each message and client: the time from the start of the request (API) or the
 * end of DATA (SMTP) to the frame. The commit lies inside that interval (before the API answer,
 * before the 250), so these are upper bounds of commit-to-frame; the time to the API answer and
 * to the 250 is reported beside them. Closer to commit-to-frame: from the event's own time (the
 * received copy's `created_at`, taken when the message is composed or parsed, before its delivery's unit of work commits, read off
 * the first frame of each message) to each frame, on the wall clock both processes share. On
 * PostgreSQL also from the commit itself: this process LISTENs on the event feed's channel, and
 * PostgreSQL delivers the NOTIFY the delivery sends in its transaction to every listener when it
 * commits; its arrival here is the commit (plus one loopback hop). On SQLite from the commit too:
 * a process (`lib/sqlite-commit-observer.mjs`, on the clients' core) opens the service's file read-only (WAL: a
 * reader sees a transaction when it commits, never blocks the writer) and, from just before each
 * message until its event row appears, looks for new event rows every `--observe-ms` (0.5 ms), so
 * it sees the commit at most one interval plus one query late (the figure is low by at most that
 * much). All times are on the monotonic clock the processes
 * share (`process.hrtime`). Memory: the server's RSS before the clients connect and
 * after they subscribed, divided by the connections.
 *
 * Options: --connections 1000 --messages 100 --warmup 10 (per path, after the clients
 * subscribed, not measured) --client-processes 1 --observe-ms 0.5
 * --dialect sqlite|postgres|both (PostgreSQL with
 * BENCH_POSTGRES_URL or TEST_POSTGRES_URL, schema bench_ws, dropped afterwards).
 */
const { values: args } = parseArgs({
  options: {
    connections: { type: 'string' },
    messages: { type: 'string' },
    dialect: { type: 'string' },
    'client-processes': { type: 'string' },
    'observe-ms': { type: 'string' },
    warmup: { type: 'string' },
  },
});
const CONNECTIONS = Number(args.connections ?? process.env.BENCH_CONNECTIONS ?? 1000);
const MESSAGES = Number(args.messages ?? process.env.BENCH_MESSAGES ?? 100);
const wanted = args.dialect ?? process.env.BENCH_DIALECT ?? 'both';
const CLIENT_PROCESSES = Number(args['client-processes'] ?? 1);
const OBSERVE_MS = Number(args['observe-ms'] ?? 0.5);
const WARMUP = Number(args.warmup ?? 10);
const DOMAIN = 'inbox.localhost';
const DIST = path.join(ROOT, 'dist');

const from = (file) => import(pathToFileURL(path.join(DIST, 'src', file)).href);
const [service, config, spec, databaseModule, feed] = await Promise.all(
  [
    'inbox/service.js',
    'platform/config/config.js',
    'inbox/inbox.config.js',
    'platform/db/database.js',
    'inbox/realtime/event-feed.js',
  ].map(from),
);

const quietLog = { warn() {}, error() {}, info() {} };
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
/** Milliseconds on the monotonic clock every process of the machine shares (CLOCK_MONOTONIC). */
const now = () => Number(process.hrtime.bigint()) / 1e6;
/** Wall-clock milliseconds, on the clock the server's timestamps use, of a monotonic time. */
const WALL_OFFSET = performance.timeOrigin + performance.now() - now();
const wallOf = (t) => t + WALL_OFFSET;

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s.at(-1) };
}

/** A minimal SMTP client over one connection: EHLO once, then one transaction per message. */
async function smtpSession(port) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  let buffer = '';
  const waiters = [];
  socket.on('data', (d) => {
    buffer += d.toString('latin1');
    let i;
    while ((i = buffer.indexOf('\r\n')) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      if (line[3] === '-') continue;
      waiters.shift()?.(line);
    }
  });
  const reply = () => new Promise((resolve) => waiters.push(resolve));
  const command = async (text, expect) => {
    const answer = reply();
    socket.write(`${text}\r\n`);
    const line = await answer;
    if (!line.startsWith(expect)) throw new Error(`SMTP ${text.split(' ')[0]}: ${line}`);
    return line;
  };
  const greeting = await reply();
  if (!greeting.startsWith('220')) throw new Error(`SMTP greeting: ${greeting}`);
  await command('EHLO bench.example', '250');
  return {
    async send(to, subject) {
      await command('MAIL FROM:<bench@sender.example>', '250');
      await command(`RCPT TO:<${to}>`, '250');
      await command('DATA', '354');
      const message = [
        `From: bench@sender.example`,
        `To: ${to}`,
        `Subject: ${subject}`,
        `Message-ID: <${subject}@sender.example>`,
        'Date: Mon, 16 Nov 2026 09:00:00 +0000',
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        '',
        `Hello ${subject}.`,
        '.',
        '',
      ].join('\r\n');
      const answer = reply();
      socket.write(message);
      const t0 = now();
      const line = await answer;
      if (!line.startsWith('250')) throw new Error(`SMTP DATA: ${line}`);
      return { t0, acknowledged: now() };
    },
    close: () => socket.end('QUIT\r\n'),
  };
}

async function run(dialect) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-ws-'));
  const dbUrl = dialect === 'postgres' ? postgresUrl('bench_ws') : `sqlite:${path.join(dir, 'inbox.db')}`;
  const [port, smtpPort] = [await freePort(), await freePort()];
  const env = {
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    INBOX_PORT: String(port),
    INBOX_SMTP_PORT: String(smtpPort),
    INBOX_DATABASE_URL: dbUrl,
    DATA_DIR: dir,
    INBOX_DOMAINS: DOMAIN,
    INBOX_ROLES: 'api,worker,smtp',
    INBOX_SMTP_VERIFY_AUTH: 'false',
    INBOX_SMTP_GREETING_DELAY_MS: '0',
    INBOX_RATE_LIMIT_PER_MINUTE: '10000000',
    INBOX_WS_MAX_CONNECTIONS_PER_KEY: String(CONNECTIONS + 10),
  };
  // Seeded through the service's own code: migrations and one organization's key.
  const cfg = config.loadConfig(spec.inboxConfigSpec, env);
  const database = await service.openInboxDatabase(cfg);
  await service.migrateInbox(database);
  const { key } = await service
    .createInboxServices(cfg, database.db, { log: quietLog })
    .services.apiKeys.createKey({ name: 'bench' });
  await database.destroy();

  const server = await startServer({ label: `inbox ${dialect}`, file: path.join(DIST, 'src/inbox/main.js'), env });
  const base = `http://127.0.0.1:${port}`;
  const api = async (method, p, body) => {
    const res = await globalThis.fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return JSON.parse(text);
  };
  const children = [];
  // The commit, as an outside observer sees it (see above): onCommit(at, payload).
  let commitListener;
  let observer;
  let onCommit = () => {};
  let arm = async () => {};
  if (dialect === 'postgres') {
    const pg = (await import('pg')).default;
    commitListener = new pg.Client({
      connectionString: process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL,
    });
    await commitListener.connect();
    commitListener.on('notification', (n) => {
      if (n.payload?.includes('"message.received"')) onCommit(now());
    });
    await commitListener.query(`LISTEN "${databaseModule.notifyChannel(feed.TOPIC, 'bench_ws')}"`);
  } else {
    // Started once the service has created the file; a process on the clients' core, off the server's.
    observer = spawn(
      'taskset',
      [
        '-c',
        LOAD_CPU,
        process.execPath,
        path.join(import.meta.dirname, 'lib/sqlite-commit-observer.mjs'),
        path.join(dir, 'inbox.db'),
        String(OBSERVE_MS),
      ],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    const ready = new Promise((resolve, reject) =>
      observer
        .once('message', resolve)
        .once('exit', (code) => reject(new Error(`the SQLite commit observer exited (${code})`))),
    );
    await ready;
    let armed = () => {};
    observer.on('message', (m) => (m.armed ? armed() : m.at !== null && onCommit(m.at)));
    // Watching from just before each message until its commit (see lib/sqlite-commit-observer.mjs).
    arm = (marker) => new Promise((resolve) => ((armed = resolve), observer.send({ arm: marker })));
  }
  try {
    const sender = (await api('POST', '/v0/inboxes', { username: 'bench-sender' })).inbox_id;
    const target = (await api('POST', '/v0/inboxes', { username: 'bench-target' })).inbox_id;
    // Warm the paths once before measuring.
    await api('POST', `/v0/inboxes/${encodeURIComponent(sender)}/messages/send`, {
      to: [target],
      subject: 'warm-up',
      text: 'warm',
    });
    await new Promise((r) => setTimeout(r, 500));
    const rssBefore = rssOf(server.pid);

    // Clients in child processes, each with its share; their answers come over the IPC channel.
    const connectStarted = now();
    const url = `ws://127.0.0.1:${port}/v0?api_key=${key}`;
    const subscribe = { type: 'subscribe', event_types: ['message.received'], inbox_ids: [target] };
    const answers = new Map();
    const answer = (child, kind) => new Promise((resolve) => answers.set(`${child.pid}:${kind}`, resolve));
    for (let i = 0; i < CLIENT_PROCESSES; i++) {
      const count = Math.floor(CONNECTIONS / CLIENT_PROCESSES) + (i < CONNECTIONS % CLIENT_PROCESSES ? 1 : 0);
      // Pinned to the core the server is not pinned to, as the other benches' load generators.
      const child = spawn(
        'taskset',
        ['-c', LOAD_CPU, process.execPath, path.join(import.meta.dirname, 'lib/ws-clients.mjs')],
        { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
      );
      child.on('message', (m) => {
        const kind = Object.keys(m)[0];
        answers.get(`${child.pid}:${kind}`)?.(m);
        answers.delete(`${child.pid}:${kind}`);
      });
      children.push({ child, count });
    }
    await Promise.all(
      children.map(({ child, count }) => {
        const connected = answer(child, 'connected');
        child.send({ connect: { url, count, subscribe } });
        return connected;
      }),
    );
    const connectSeconds = (now() - connectStarted) / 1000;
    await new Promise((r) => setTimeout(r, 1000));
    const rssAfter = rssOf(server.pid);

    const measureOne = async (marker, deliver) => {
      let t0 = 0;
      let committed = NaN;
      onCommit = (at) => {
        if (Number.isNaN(committed)) committed = at;
      };
      await arm(marker);
      const arrivals = children.map(({ child }) => answer(child, 'arrived'));
      await Promise.all(
        children.map(({ child }) => {
          const ready = answer(child, 'expecting');
          child.send({ expect: marker });
          return ready;
        }),
      );
      const timing = await deliver((t) => (t0 = t));
      const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 10_000));
      const got = await Promise.race([Promise.all(arrivals), timeout]);
      if (got === 'timeout') throw new Error(`not every client had the frame of ${marker} within 10 s`);
      const latencies = got.flatMap((m) => m.arrived);
      const createdAt = got[0].createdAt;
      // The observer's own hop (PostgreSQL's notification to a second listener, a busy core) may
      // bring the commit after some frames: waited for, and such frames count as negative latencies.
      for (let waited = 0; Number.isNaN(committed) && waited < 1000; waited += 5)
        await new Promise((r) => setTimeout(r, 5));
      if (Number.isNaN(committed)) throw new Error(`no commit seen for ${marker} within 1 s of its frames`);
      return {
        frames: latencies.map((at) => at - t0),
        fromEvent: latencies.map((at) => wallOf(at) - createdAt),
        fromCommit: latencies.map((at) => at - committed),
        acknowledged: timing.acknowledged - t0,
      };
    };

    const scenario = async (name, deliverOne, count = MESSAGES) => {
      const frames = [];
      const fromEvent = [];
      const fromCommit = [];
      const acks = [];
      for (let m = 0; m < count; m++) {
        const r = await measureOne(`${name}-${m}-mark`, (start) => deliverOne(`${name}-${m}-mark`, start));
        frames.push(...r.frames);
        fromEvent.push(...r.fromEvent);
        fromCommit.push(...r.fromCommit);
        acks.push(r.acknowledged);
      }
      return {
        frames: summary(frames),
        fromEvent: summary(fromEvent),
        fromCommit: summary(fromCommit),
        acknowledged: summary(acks),
      };
    };

    const byApi = async (subject, start) => {
      const t0 = now();
      start(t0);
      await api('POST', `/v0/inboxes/${encodeURIComponent(sender)}/messages/send`, {
        to: [target],
        subject,
        text: 'Hello.',
      });
      return { acknowledged: now() };
    };
    const smtp = await smtpSession(smtpPort);
    const bySmtp = async (subject, start) => {
      const sent = await smtp.send(target, subject);
      start(sent.t0);
      return sent;
    };
    // The fan-out to every client, not measured: the warm-up above ran before any client connected.
    await scenario('warm-api', byApi, WARMUP);
    await scenario('warm-smtp', bySmtp, WARMUP);
    const results = {};
    results.api = await scenario('api', byApi);
    results.smtp = await scenario('smtp', bySmtp);
    smtp.close();
    const load = execSync('uptime').toString().trim();
    return {
      dialect,
      connections: CONNECTIONS,
      messages: MESSAGES,
      clientProcesses: CLIENT_PROCESSES,
      observeMs: OBSERVE_MS,
      connectSeconds,
      rssBefore,
      rssAfter,
      bytesPerConnection: (rssAfter - rssBefore) / CONNECTIONS,
      results,
      load,
    };
  } finally {
    for (const { child } of children) child.send({ close: true });
    await commitListener?.end();
    observer?.send('stop');
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    if (dialect === 'postgres') {
      const pg = (await import('pg')).default;
      const client = new pg.Client({
        connectionString: process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL,
      });
      await client.connect();
      await client.query('drop schema if exists bench_ws cascade');
      await client.end();
    }
  }
}

const dialects = wanted === 'both' ? ['sqlite', ...(postgresUrl('bench_ws') ? ['postgres'] : [])] : [wanted];
const stamp = timestamp();
const runs = [];
const loadBefore = execSync('uptime').toString().trim();
for (const dialect of dialects) {
  console.log(
    `${dialect}: ${CONNECTIONS} connections in ${CLIENT_PROCESSES} client processes, ${MESSAGES} messages by API and ${MESSAGES} by SMTP`,
  );
  runs.push(await run(dialect));
}
const ms = (n) => n.toFixed(1);
const rows = runs.flatMap((r) =>
  ['api', 'smtp'].map((kind) => {
    const { frames, fromEvent, fromCommit, acknowledged } = r.results[kind];
    const commit = `${ms(fromCommit.p50)} | ${ms(fromCommit.p99)}`;
    return `| ${r.dialect} | ${kind === 'api' ? 'API send' : 'SMTP'} | ${r.connections} | ${frames.n} | ${commit} | ${ms(fromEvent.p50)} | ${ms(fromEvent.p99)} | ${ms(fromEvent.max)} | ${ms(frames.p50)} | ${ms(frames.p99)} | ${ms(acknowledged.p50)} | ${Math.round(r.bytesPerConnection / 1024)} KiB |`;
  }),
);
const md = [
  `## WebSocket events, ${stamp}`,
  '',
  `${await machineWithCosts()}; source ${sourceOf(['src', 'bench'])}`,
  `${CONNECTIONS} connections in ${CLIENT_PROCESSES} client processes on CPU ${LOAD_CPU} (server on CPU 0); SQLite commits observed every ${OBSERVE_MS} ms`,
  `load before: \`${loadBefore}\``,
  ...runs.map((r) => `load after ${r.dialect}: \`${r.load}\``),
  '',
  '| Dialect | Arrival | Connections | Frames | commit→frame p50 ms | p99 ms | event→frame p50 ms | p99 ms | max ms | request→frame p50 ms | p99 ms | answer p50 ms | server RSS per connection |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows,
  '',
  "commit→frame: PostgreSQL, from the arrival of the delivery's NOTIFY at a listener of this process (PostgreSQL sends it at commit); SQLite, from the moment a read-only reader of the file, looking every " +
    OBSERVE_MS +
    ' ms, first sees the event row; to the frame at each client. event→frame: from the received copy\'s `created_at` (taken when the message is composed or parsed, before its delivery commits) to the frame at each client. request→frame: from the start of the API request (or the end of DATA); the commit lies inside that interval. "answer": the API response (or the 250 after DATA).',
].join('\n');
writeResults(`ws-${stamp}`, runs, md);
