/* global performance */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/**
 * `npm run bench:faults`: two fault timings of the inbox service, from dist/ (built first), on
 * PostgreSQL (BENCH_POSTGRES_URL or TEST_POSTGRES_URL) and a redis-server of its own on a spare
 * loopback port (the shared one is never touched).
 *
 * 1. Crash takeover: an api+worker process holds a webhook delivery (the receiver does not answer);
 *    it is killed with SIGKILL; the time until a worker-only process delivers that event.
 * 2. Redis outage latency: GET /v0/inboxes, one request at a time, with Redis up, stopped, and
 *    frozen (SIGSTOP: connections open, no answers); medians, p99 and ratios to "up".
 * Options (env): BENCH_RUNS (takeover runs, default 3), BENCH_REQUESTS (per Redis state, default 300).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PG = process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL;
if (!PG) throw new Error('set BENCH_POSTGRES_URL (or TEST_POSTGRES_URL)');
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const { createInboxServices, migrateInbox, openInboxDatabase } = await import(
  path.join(ROOT, 'dist/src/inbox/service.js')
);
const { loadConfig } = await import(path.join(ROOT, 'dist/src/platform/config/config.js'));
const { inboxConfigSpec } = await import(path.join(ROOT, 'dist/src/inbox/inbox.config.js'));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

async function sparePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function until(check, what, ms = 120_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function schemaUrl(schema) {
  const url = new URL(PG);
  url.searchParams.set('schema', schema);
  return url.toString();
}

async function dropSchema(schema) {
  const client = new pg.Client({ connectionString: PG });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

function startInbox(env) {
  const child = spawn(process.execPath, ['dist/src/inbox/main.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      INBOX_WEBHOOK_ALLOW_PRIVATE: 'true',
      INBOX_SMTP_VERIFY_AUTH: 'false',
      INBOX_DOMAINS: 'faults.test',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const port = Number(env.INBOX_PORT);
  const ready = () =>
    until(
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
      `instance on ${port}`,
    );
  const exited = new Promise((r) => child.once('exit', r));
  return { child, port, ready, exited };
}

async function organization(url) {
  const config = loadConfig(inboxConfigSpec, {
    INBOX_DATABASE_URL: url,
    INBOX_DATABASE_POOL_SIZE: '2',
    INBOX_DOMAINS: 'faults.test',
  });
  const database = await openInboxDatabase(config);
  await migrateInbox(database);
  const { services } = createInboxServices(config, database.db, { log: { warn() {}, error() {} } });
  const { key } = await services.apiKeys.createKey({});
  return { key, close: () => database.destroy() };
}

async function api(port, key, method, url, body) {
  const res = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

async function takeover() {
  const schema = `bench_faults_${randomBytes(4).toString('hex')}`;
  const url = schemaUrl(schema);
  const arrivals = [];
  const receiver = createServer((req, res) => {
    req.resume();
    arrivals.push({ at: Date.now(), id: req.headers['svix-id'] });
    if (arrivals.length > 1) res.writeHead(200).end('ok'); // the first request is never answered
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
  const victim = startInbox({
    INBOX_DATABASE_URL: url,
    INBOX_ROLES: 'api,worker',
    INBOX_PORT: String(await sparePort()),
    INBOX_SMTP_PORT: '0',
  });
  await victim.ready();
  const org = await organization(url);
  let survivor;
  try {
    const inbox = (await api(victim.port, org.key, 'POST', '/v0/inboxes', { username: 'crash' })).body.inbox_id;
    await api(victim.port, org.key, 'POST', '/v0/webhooks', { url: hook, event_types: ['message.sent'] });
    await api(victim.port, org.key, 'POST', `/v0/inboxes/${encodeURIComponent(inbox)}/messages/send`, {
      to: [inbox],
      subject: 'crash',
      text: 'x',
    });
    // The victim, the only worker so far, holds the delivery (the receiver never answers it).
    await until(() => arrivals.length >= 1, 'the first delivery attempt');
    survivor = startInbox({ INBOX_DATABASE_URL: url, INBOX_ROLES: 'worker', INBOX_PORT: String(await sparePort()) });
    await survivor.ready();
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    await victim.exited;
    await until(() => arrivals.length >= 2, 'the takeover', 300_000);
    return { ms: arrivals[1].at - killedAt, sameEvent: arrivals[1].id === arrivals[0].id };
  } finally {
    survivor?.child.kill('SIGTERM');
    if (victim.child.exitCode === null && victim.child.signalCode === null) victim.child.kill('SIGKILL');
    await survivor?.exited;
    await org.close();
    receiver.closeAllConnections();
    receiver.close();
    await dropSchema(schema);
  }
}

async function redisLatency() {
  const port = await sparePort();
  let redis;
  const startRedis = async () => {
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    await until(async () => {
      const ok = await new Promise((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.write('PING\r\n'));
        s.once('data', (d) => (s.destroy(), resolve(String(d).startsWith('+PONG'))));
        s.once('error', () => resolve(false));
      });
      return ok;
    }, 'redis-server');
  };
  const stopRedis = async () => {
    const r = redis;
    const gone = new Promise((res) => r.once('exit', res));
    r.kill('SIGCONT');
    r.kill('SIGKILL');
    await gone;
  };
  await startRedis();
  const schema = `bench_faults_${randomBytes(4).toString('hex')}`;
  const url = schemaUrl(schema);
  const server = startInbox({
    INBOX_DATABASE_URL: url,
    INBOX_ROLES: 'api',
    INBOX_PORT: String(await sparePort()),
    REDIS_URL: `redis://127.0.0.1:${port}`,
    INBOX_RATE_LIMIT_PER_MINUTE: '10000000',
  });
  const results = {};
  try {
    await server.ready();
    const org = await organization(url);
    await api(server.port, org.key, 'POST', '/v0/inboxes', { username: 'latency' });
    const measure = async (label) => {
      const times = [];
      let failures = 0;
      for (let i = 0; i < REQUESTS; i++) {
        const t = performance.now();
        const res = await fetch(`http://127.0.0.1:${server.port}/v0/inboxes`, {
          headers: { authorization: `Bearer ${org.key}` },
        });
        await res.arrayBuffer();
        times.push(performance.now() - t);
        if (res.status !== 200) failures++;
      }
      results[label] = { median: median(times), p99: pct(times, 0.99), max: Math.max(...times), failures };
    };
    await measure('warm-up');
    await measure('up');
    await stopRedis();
    await measure('stopped');
    await startRedis();
    await sleep(2_500);
    await measure('back');
    redis.kill('SIGSTOP');
    await measure('frozen');
    redis.kill('SIGCONT');
    await org.close();
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await stopRedis().catch(() => undefined);
    await dropSchema(schema);
  }
  delete results['warm-up'];
  return results;
}

const takeovers = [];
for (let i = 0; i < RUNS; i++) {
  const t = await takeover();
  takeovers.push(t);
  process.stdout.write(
    `takeover run ${i + 1}: ${(t.ms / 1000).toFixed(1)} s after SIGKILL (same event: ${t.sameEvent})\n`,
  );
}
process.stdout.write(
  `crash takeover: median ${(median(takeovers.map((t) => t.ms)) / 1000).toFixed(1)} s, max ${(Math.max(...takeovers.map((t) => t.ms)) / 1000).toFixed(1)} s over ${RUNS} runs\n`,
);
const latency = await redisLatency();
const up = latency.up.median;
for (const [state, r] of Object.entries(latency)) {
  process.stdout.write(
    `redis ${state.padEnd(7)}: median ${r.median.toFixed(2)} ms (×${(r.median / up).toFixed(2)} of up), p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(1)} ms, non-200: ${r.failures} of ${REQUESTS}\n`,
  );
}
