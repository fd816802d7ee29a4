import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { execSync } from 'node:child_process';
import WebSocket from 'ws';
import { freePort, machineDescription, postgresUrl, ROOT, sourceOf, startServer, timestamp, writeResults } from './lib/harness.mjs';

/**
 * `npm run bench:ws`: real-time events over WebSocket at 1,000 subscribed connections.
 *
 * The service (dist/src/inbox/main.js, roles api, worker and smtp, pinned to CPU 0) on a fresh
 * database; this process holds `--connections` WebSocket clients on loopback (`ws`, the client
 * the SDK is built on), each subscribed to `message.received` of one inbox. Then messages arrive
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
 * commits; its arrival here is the commit (plus one loopback hop). Memory: the server's RSS before the clients connect and
 * after they subscribed, divided by the connections.
 *
 * Options: --connections 1000 --messages 100 --dialect sqlite|postgres|both (PostgreSQL with
 * BENCH_POSTGRES_URL or TEST_POSTGRES_URL, schema bench_ws, dropped afterwards).
 */
const { values: args } = parseArgs({ options: { connections: { type: 'string' }, messages: { type: 'string' }, dialect: { type: 'string' } } });
const CONNECTIONS = Number(args.connections ?? process.env.BENCH_CONNECTIONS ?? 1000);
const MESSAGES = Number(args.messages ?? process.env.BENCH_MESSAGES ?? 100);
const wanted = args.dialect ?? process.env.BENCH_DIALECT ?? 'both';
const DOMAIN = 'inbox.localhost';
const DIST = path.join(ROOT, 'dist');

const from = (file) => import(pathToFileURL(path.join(DIST, 'src', file)).href);
const [service, config, spec, databaseModule, feed] = await Promise.all(['inbox/service.js', 'platform/config/config.js', 'inbox/inbox.config.js', 'platform/db/database.js', 'inbox/realtime/event-feed.js'].map(from));

const quietLog = { warn() {}, error() {}, info() {} };
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
const now = () => performance.now();
/** Wall-clock milliseconds, on the clock the server's timestamps use, at performance.now()'s resolution. */
const wallOf = (t) => performance.timeOrigin + t;

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
      const message = [`From: bench@sender.example`, `To: ${to}`, `Subject: ${subject}`, `Message-ID: <${subject}@sender.example>`, 'Date: Mon, 16 Nov 2026 09:00:00 +0000', 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', `Hello ${subject}.`, '.', ''].join('\r\n');
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
  const { key } = await service.createInboxServices(cfg, database.db, { log: quietLog }).services.apiKeys.createKey({ name: 'bench' });
  await database.destroy();

  const server = await startServer({ label: `inbox ${dialect}`, file: path.join(DIST, 'src/inbox/main.js'), env });
  const base = `http://127.0.0.1:${port}`;
  const api = async (method, p, body) => {
    const res = await globalThis.fetch(`${base}${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return JSON.parse(text);
  };
  const clients = [];
  // PostgreSQL: the commit, as every listener of the event feed's channel sees it (see above).
  let commitListener;
  let onCommit = () => {};
  if (dialect === 'postgres') {
    const pg = (await import('pg')).default;
    commitListener = new pg.Client({ connectionString: process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL });
    await commitListener.connect();
    commitListener.on('notification', (n) => {
      if (n.payload?.includes('"message.received"')) onCommit(now());
    });
    await commitListener.query(`LISTEN "${databaseModule.notifyChannel(feed.TOPIC, 'bench_ws')}"`);
  }
  try {
    const sender = (await api('POST', '/v0/inboxes', { username: 'bench-sender' })).inbox_id;
    const target = (await api('POST', '/v0/inboxes', { username: 'bench-target' })).inbox_id;
    // Warm the paths once before measuring.
    await api('POST', `/v0/inboxes/${encodeURIComponent(sender)}/messages/send`, { to: [target], subject: 'warm-up', text: 'warm' });
    await new Promise((r) => setTimeout(r, 500));
    const rssBefore = rssOf(server.pid);

    // Frames are matched by subject without parsing the JSON: the client's cost stays out of the figures.
    let expecting = null;
    const connectStarted = now();
    for (let i = 0; i < CONNECTIONS; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, CONNECTIONS - i) }, () =>
          new Promise((resolve, reject) => {
            const ws = new WebSocket(`ws://127.0.0.1:${port}/v0?api_key=${key}`, { perMessageDeflate: false });
            const client = { ws, subscribed: false };
            ws.on('message', (data) => {
              const at = now();
              if (!client.subscribed) {
                client.subscribed = true;
                return resolve();
              }
              if (expecting && data.includes(expecting.marker)) expecting.arrived(at, data);
            });
            ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'], inbox_ids: [target] })));
            ws.once('error', reject);
            clients.push(client);
          }),
        ),
      );
    }
    const connectSeconds = (now() - connectStarted) / 1000;
    await new Promise((r) => setTimeout(r, 1000));
    const rssAfter = rssOf(server.pid);

    const measureOne = async (marker, deliver) => {
      const latencies = [];
      let done;
      const all = new Promise((resolve) => (done = resolve));
      let t0 = 0;
      let createdAt = NaN;
      let committed = NaN;
      onCommit = (at) => {
        if (Number.isNaN(committed)) committed = at;
      };
      expecting = {
        marker: Buffer.from(marker),
        arrived(at, data) {
          // Parsed once per message: every client's frame carries the same event.
          if (!latencies.length) createdAt = Date.parse(JSON.parse(data.toString()).message.created_at);
          latencies.push(at);
          if (latencies.length === CONNECTIONS) done();
        },
      };
      const timing = await deliver((t) => (t0 = t));
      const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 10_000));
      if ((await Promise.race([all, timeout])) === 'timeout') throw new Error(`only ${latencies.length} of ${CONNECTIONS} frames for ${marker}`);
      expecting = null;
      if (commitListener && Number.isNaN(committed)) throw new Error(`no commit signal for ${marker}`);
      return { frames: latencies.map((at) => at - t0), fromEvent: latencies.map((at) => wallOf(at) - createdAt), fromCommit: commitListener ? latencies.map((at) => at - committed) : [], acknowledged: timing.acknowledged - t0 };
    };

    const scenario = async (name, deliverOne) => {
      const frames = [];
      const fromEvent = [];
      const fromCommit = [];
      const acks = [];
      for (let m = 0; m < MESSAGES; m++) {
        const r = await measureOne(`${name}-${m}-mark`, (start) => deliverOne(`${name}-${m}-mark`, start));
        frames.push(...r.frames);
        fromEvent.push(...r.fromEvent);
        fromCommit.push(...r.fromCommit);
        acks.push(r.acknowledged);
      }
      return { frames: summary(frames), fromEvent: summary(fromEvent), fromCommit: summary(fromCommit), acknowledged: summary(acks) };
    };

    const results = {};
    results.api = await scenario('api', async (subject, start) => {
      const t0 = now();
      start(t0);
      await api('POST', `/v0/inboxes/${encodeURIComponent(sender)}/messages/send`, { to: [target], subject, text: 'Hello.' });
      return { acknowledged: now() };
    });
    const smtp = await smtpSession(smtpPort);
    results.smtp = await scenario('smtp', async (subject, start) => {
      const sent = await smtp.send(target, subject);
      start(sent.t0);
      return sent;
    });
    smtp.close();
    const load = execSync('uptime').toString().trim();
    return { dialect, connections: CONNECTIONS, messages: MESSAGES, connectSeconds, rssBefore, rssAfter, bytesPerConnection: (rssAfter - rssBefore) / CONNECTIONS, results, load };
  } finally {
    for (const c of clients) c.ws.terminate();
    await commitListener?.end();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    if (dialect === 'postgres') {
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL });
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
  console.log(`${dialect}: ${CONNECTIONS} connections, ${MESSAGES} messages by API and ${MESSAGES} by SMTP`);
  runs.push(await run(dialect));
}
const ms = (n) => n.toFixed(1);
const rows = runs.flatMap((r) =>
  ['api', 'smtp'].map((kind) => {
    const { frames, fromEvent, fromCommit, acknowledged } = r.results[kind];
    const commit = fromCommit.n ? `${ms(fromCommit.p50)} | ${ms(fromCommit.p99)}` : '– | –';
    return `| ${r.dialect} | ${kind === 'api' ? 'API send' : 'SMTP'} | ${r.connections} | ${frames.n} | ${commit} | ${ms(fromEvent.p50)} | ${ms(fromEvent.p99)} | ${ms(fromEvent.max)} | ${ms(frames.p50)} | ${ms(frames.p99)} | ${ms(acknowledged.p50)} | ${Math.round(r.bytesPerConnection / 1024)} KiB |`;
  }),
);
const md = [
  `## WebSocket events, ${stamp}`,
  '',
  `${machineDescription()}; source ${sourceOf(['src', 'bench'])}`,
  `load before: \`${loadBefore}\``,
  ...runs.map((r) => `load after ${r.dialect}: \`${r.load}\``),
  '',
  '| Dialect | Arrival | Connections | Frames | commit→frame p50 ms | p99 ms | event→frame p50 ms | p99 ms | max ms | request→frame p50 ms | p99 ms | answer p50 ms | server RSS per connection |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows,
  '',
  'commit→frame (PostgreSQL): from the arrival of the delivery\'s NOTIFY at a listener of this process (PostgreSQL sends it at commit) to the frame at each client. event→frame: from the received copy\'s `created_at` (taken when the message is composed or parsed, before its delivery commits) to the frame at each client. request→frame: from the start of the API request (or the end of DATA); the commit lies inside that interval. "answer": the API response (or the 250 after DATA).',
].join('\n');
writeResults(`ws-${stamp}`, runs, md);
