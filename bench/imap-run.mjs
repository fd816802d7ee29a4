import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { clearTimeout } from 'node:timers';
import { parseArgs } from 'node:util';
import { ImapFlow } from 'imapflow';
import { sql } from 'kysely';
import { ensureDovecot, dovecotVersion, startDovecot, writeMaildir } from './lib/dovecot.mjs';
import {
  freePort,
  postgresUrl,
  median,
  fmt,
  RESULTS,
  SERVER_CPU,
  snapshotDist,
  sourceOf,
  startServer,
  timestamp,
  writeResults,
} from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';

/**
 * `npm run bench:imap`: the IMAP listener of the inbox service (dist/src/inbox/main.js,
 * INBOX_ROLES=imap, SQLite) beside Dovecot (a private instance, bench/lib/dovecot.mjs, no FTS
 * plugin), both holding the same --messages (10,000) in their INBOX: stored through the service's
 * own send path, and the very bytes it stored written as a Maildir for Dovecot. The same client
 * (imapflow) and load against each, alternating, each server pinned to CPU 0:
 *
 * - headers: FETCH of UID, FLAGS, ENVELOPE and the usual header fields of the whole folder
 *   (messages per second);
 * - bodies: FETCH BODY.PEEK[] of 100 messages spread over the folder, ten times (messages per second);
 * - search: SEARCH TEXT of a word one message holds (searches per second);
 * - idle: a flag set by a second session, seen by an IDLE-ing one (notifications per second, the
 *   inverse of the median latency).
 *
 * Every scenario is first run once unmeasured on each server (Dovecot builds its index and cache
 * then, ours warms its statements). Checks: both folders hold --messages messages and the search
 * finds the same message (its Message-ID) on both. Reports ours ÷ Dovecot per scenario (above 1:
 * ours is faster). Options: --messages 10000 --runs 3 --bodies 100 --searches 5 --idles 20
 * --scenarios headers,bodies,search,idle --dialect sqlite (or postgres: BENCH_POSTGRES_URL or
 * TEST_POSTGRES_URL, schema bench_imap, dropped afterwards). BENCH_IMAP_PROFILE=dir starts our server with
 * `node --cpu-prof --cpu-prof-dir=dir` (a profile written when it stops; read it with
 * `node bench/lib/cpu-profile.mjs dir/*.cpuprofile`).
 */

const { values: args } = parseArgs({
  options: Object.fromEntries(
    ['messages', 'runs', 'bodies', 'searches', 'idles', 'scenarios', 'dialect'].map((name) => [
      name,
      { type: 'string' },
    ]),
  ),
});
const opts = {
  messages: Number(args.messages ?? 10_000),
  runs: Number(args.runs ?? 3),
  bodies: Number(args.bodies ?? 100),
  searches: Number(args.searches ?? 5),
  idles: Number(args.idles ?? 20),
  scenarios: (args.scenarios ?? 'headers,bodies,search,idle').split(','),
  dialect: args.dialect ?? 'sqlite',
};
if (!['sqlite', 'postgres'].includes(opts.dialect)) throw new Error('--dialect is sqlite or postgres');
/** PostgreSQL (--dialect postgres): BENCH_POSTGRES_URL or TEST_POSTGRES_URL, schema bench_imap, dropped afterwards. */
const PG_SCHEMA = 'bench_imap';
const pgUrl = opts.dialect === 'postgres' ? postgresUrl(PG_SCHEMA) : undefined;
if (opts.dialect === 'postgres' && !pgUrl)
  throw new Error('--dialect postgres needs BENCH_POSTGRES_URL or TEST_POSTGRES_URL');
/** A folder for CPU profiles of our server (node --cpu-prof), when set. */
const PROFILE = process.env.BENCH_IMAP_PROFILE;
const DOMAIN = 'inbox.localhost';
const RARE = 'xylophonequartz';
const WORDS = 'agent inbox mail report invoice meeting draft review budget schedule summary thread'.split(' ');

// ---------------------------------------------------------------------------------------------
// Seeding: the service's own code, in this process, on the snapshot of dist/.

async function loadService(dist) {
  const from = (file) => import(pathToFileURL(path.join(dist, 'src', file)).href);
  const [service, config, spec, repo] = await Promise.all(
    [
      'inbox/service.js',
      'platform/config/config.js',
      'inbox/inbox.config.js',
      'inbox/mailstore/message.repository.js',
    ].map(from),
  );
  return { ...service, ...config, ...spec, ...repo };
}

function text(i) {
  const words = [];
  for (let w = 0; w < 120; w++) words.push(WORDS[(i * 7 + w * 13) % WORDS.length]);
  if (i === Math.floor(opts.messages / 2)) words.splice(60, 0, RARE);
  return `Message ${i}.\n\n${words.join(' ')}\n`;
}

/** Migrations, one organization, an inbox and a sender; --messages sends; returns the key and the stored sources in UID order. */
async function seed(svc, dir) {
  const env = {
    LOG_LEVEL: 'warn',
    INBOX_DATABASE_URL: pgUrl ?? `sqlite:${path.join(dir, 'imap.db')}`,
    DATA_DIR: dir,
    INBOX_DOMAINS: DOMAIN,
    INBOX_ROLES: 'imap',
    INBOX_SEND_LIMIT_PER_DAY: String(opts.messages * 2 + 100),
  };
  const config = svc.loadConfig(svc.inboxConfigSpec, env);
  const database = await svc.openInboxDatabase(config);
  try {
    if (pgUrl) {
      await sql`drop schema if exists ${sql.id(PG_SCHEMA)} cascade`.execute(database.db);
      await sql`create schema ${sql.id(PG_SCHEMA)}`.execute(database.db);
    }
    await svc.migrateInbox(database);
    const { services } = svc.createInboxServices(config, database.db, { log: { warn() {}, error() {} } });
    const key = await services.apiKeys.createKey({ name: 'bench-imap' });
    const owner = { apiKeyId: key.apiKeyId, organizationId: key.organizationId };
    const { inbox } = await services.inboxes.create(owner, { username: 'agent', displayName: 'Agent' });
    const { inbox: sender } = await services.inboxes.create(owner, { username: 'sender', displayName: 'Sender' });
    const started = performance.now();
    for (let i = 0; i < opts.messages; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, opts.messages - i) }, (_, k) =>
          services.outgoing.send(owner, sender.inboxId, {
            to: inbox.inboxId,
            subject: `Bench message ${i + k} about ${WORDS[(i + k) % WORDS.length]}`,
            text: text(i + k),
          }),
        ),
      );
    console.log(`seeded ${opts.messages} messages in ${fmt((performance.now() - started) / 1000, 1)} s`);
    const rows = await database.db
      .selectFrom('folder_messages')
      .select(['message_pk'])
      .where('inbox_id', '=', inbox.inboxId)
      .where('folder', '=', 'INBOX')
      .orderBy('uid')
      .execute();
    const sources = [];
    for (const r of rows) sources.push(await svc.findRawSource(database.db, Number(r.message_pk)));
    await services.limiter.close();
    return { env, user: inbox.inboxId, pass: key.key, sources };
  } finally {
    await database.destroy();
  }
}

async function dropSchema() {
  const svc = await loadService(dist);
  const config = svc.loadConfig(svc.inboxConfigSpec, { INBOX_DATABASE_URL: pgUrl, INBOX_DOMAINS: DOMAIN });
  const database = await svc.openInboxDatabase(config);
  try {
    await sql`drop schema if exists ${sql.id(PG_SCHEMA)} cascade`.execute(database.db);
  } finally {
    await database.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// The load: one imapflow client per scenario, the same against both servers.

const client = (port, user, pass) =>
  new ImapFlow({ host: '127.0.0.1', port, secure: false, doSTARTTLS: false, auth: { user, pass }, logger: false });

async function session(port, user, pass, fn) {
  const c = client(port, user, pass);
  await c.connect();
  try {
    await c.mailboxOpen('INBOX');
    return await fn(c);
  } finally {
    await c.logout().catch(() => c.close());
  }
}

const SCENARIOS = {
  async headers(c) {
    let n = 0;
    const started = performance.now();
    for await (const m of c.fetch('1:*', {
      uid: true,
      flags: true,
      envelope: true,
      headers: ['from', 'to', 'subject', 'date', 'message-id'],
    }))
      if (m.envelope) n++;
    return { count: n, rate: n / ((performance.now() - started) / 1000) };
  },
  async bodies(c) {
    const total = c.mailbox.exists;
    const step = Math.max(1, Math.floor(total / opts.bodies));
    const seqs = Array.from({ length: Math.min(opts.bodies, total) }, (_, i) => 1 + i * step);
    // Ten rounds: one FETCH of 100 small messages takes tens of milliseconds, too short to time alone.
    let n = 0;
    const started = performance.now();
    for (let round = 0; round < 10; round++)
      for await (const m of c.fetch(seqs.join(','), { source: true })) if (m.source?.length) n++;
    return { count: n / 10, rate: n / ((performance.now() - started) / 1000) };
  },
  async search(c) {
    let found = [];
    const started = performance.now();
    for (let i = 0; i < opts.searches; i++) found = await c.search({ body: RARE });
    const rate = opts.searches / ((performance.now() - started) / 1000);
    const hit = found.length === 1 ? await c.fetchOne(String(found[0]), { envelope: true }) : undefined;
    return { count: found.length, messageId: hit?.envelope?.messageId, rate };
  },
};

/** A flag set by one session, seen by another in IDLE: the median latency, as notifications per second. */
async function idle(port, user, pass) {
  const watcher = client(port, user, pass);
  const actor = client(port, user, pass);
  await watcher.connect();
  await actor.connect();
  try {
    await watcher.mailboxOpen('INBOX');
    await actor.mailboxOpen('INBOX');
    const latencies = [];
    let waiting;
    watcher.on('flags', (e) => {
      if (waiting && e.seq === 1) waiting();
    });
    // Each step toggles \\Flagged on message 1, from wherever the last run left it.
    let flagged = (await actor.fetchOne('1', { flags: true })).flags.has('\\Flagged');
    for (let i = 0; i < opts.idles; i++) {
      const idling = watcher.idle();
      // imapflow sends IDLE at once; a NOOP round trip of the other session lets the server take it.
      await actor.noop();
      await new Promise((r) => setTimeout(r, 20));
      const seen = new Promise((resolve) => (waiting = resolve));
      const started = performance.now();
      await (flagged ? actor.messageFlagsRemove('1', ['\\Flagged']) : actor.messageFlagsAdd('1', ['\\Flagged']));
      flagged = !flagged;
      const timeout = setTimeout(() => waiting?.(new Error('no notification in 10 s')), 10_000);
      const error = await seen;
      clearTimeout(timeout);
      if (error) throw error;
      latencies.push(performance.now() - started);
      waiting = undefined;
      await watcher.noop();
      await idling;
    }
    const ms = median(latencies);
    return { count: latencies.length, latencyMs: ms, rate: 1000 / ms };
  } finally {
    for (const c of [watcher, actor]) await c.logout().catch(() => c.close());
  }
}

async function measure(name, kind, target) {
  const { port, user, pass } = target;
  const result =
    name === 'idle' ? await idle(port, user, pass) : await session(port, user, pass, (c) => SCENARIOS[name](c));
  console.log(`${name} ${kind}: ${fmt(result.rate, 1)}/s (${result.count})`);
  return result;
}

// ---------------------------------------------------------------------------------------------

ensureDovecot();
const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-imap-'));
// Dovecot's mail processes run as its own user: they must reach the Maildir below.
chmodSync(dir, 0o755);
const dist = snapshotDist('.dist-snapshot-imap');
const servers = [];
try {
  const svc = await loadService(dist);
  const seeded = await seed(svc, dir);
  if (seeded.sources.length !== opts.messages)
    throw new Error(`INBOX holds ${seeded.sources.length} of ${opts.messages} messages`);
  const dovecotDir = path.join(dir, 'dovecot');
  writeMaildir(dovecotDir, seeded.sources);

  const oursPort = await freePort();
  const ours = await startServer({
    label: 'ours',
    file: path.join(dist, 'src/inbox/main.js'),
    nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(PROFILE)}`] : [],
    env: {
      ...seeded.env,
      INBOX_PORT: String(await freePort()),
      INBOX_IMAP_PORT: String(oursPort),
      INBOX_IMAP_ALLOW_PLAINTEXT_LOOPBACK: 'true',
    },
  });
  servers.push(ours);
  console.log('ours started; starting Dovecot');
  const dovecotPort = await freePort();
  const dovecot = await startDovecot({ dir: dovecotDir, port: dovecotPort, cpu: SERVER_CPU });
  servers.push(dovecot);
  const targets = {
    ours: { port: oursPort, user: seeded.user, pass: seeded.pass },
    dovecot: { port: dovecotPort, user: 'bench', pass: 'any' },
  };

  const names = ['headers', 'bodies', 'search', 'idle'].filter((n) => opts.scenarios.includes(n));
  const results = {};
  for (const name of names) {
    results[name] = { ours: [], dovecot: [] };
    // Warm-up, and the fairness checks.
    const warm = {};
    for (const kind of ['ours', 'dovecot']) warm[kind] = await measure(name, kind, targets[kind]);
    if (name === 'headers')
      for (const kind of ['ours', 'dovecot'])
        if (warm[kind].count !== opts.messages)
          throw new Error(`${kind}: FETCH of the folder gave ${warm[kind].count} of ${opts.messages}`);
    if (name === 'search' && (warm.ours.count !== 1 || warm.ours.messageId !== warm.dovecot.messageId))
      throw new Error(`the search differs: ${JSON.stringify(warm)}`);
    for (let run = 0; run < opts.runs; run++)
      for (const kind of run % 2 ? ['dovecot', 'ours'] : ['ours', 'dovecot'])
        results[name][kind].push(await measure(name, kind, targets[kind]));
  }

  const units = { headers: 'messages/s', bodies: 'messages/s', search: 'searches/s', idle: 'notifications/s' };
  const rows = names.map((name) => {
    const ours = median(results[name].ours.map((r) => r.rate));
    const dovecot = median(results[name].dovecot.map((r) => r.rate));
    const extra =
      name === 'idle'
        ? ` (median latency: ours ${fmt(median(results.idle.ours.map((r) => r.latencyMs)), 1)} ms, Dovecot ${fmt(median(results.idle.dovecot.map((r) => r.latencyMs)), 1)} ms)`
        : '';
    return `| ${name} | ${fmt(ours, 1)} | ${fmt(dovecot, 1)} | ${units[name]} | **${fmt(ours / dovecot, 2)}**${extra} |`;
  });
  const stamp = timestamp();
  const md = [
    `# bench:imap ${stamp}`,
    '',
    `${opts.messages} messages in INBOX, ${opts.runs} runs per scenario (medians), alternating. Ours = dist/src/inbox/main.js (INBOX_ROLES=imap, ${pgUrl ? 'PostgreSQL' : 'SQLite'}, built from ${sourceOf(['src'])}); ${dovecotVersion()} as a private instance, Maildir, no FTS plugin. Client: imapflow. ${await machineWithCosts()}.`,
    '',
    '| scenario | ours | Dovecot | unit | ours ÷ Dovecot |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  writeResults(stamp, { opts, results }, md);
} finally {
  for (const s of servers.reverse()) await s.stop();
  if (pgUrl) await dropSchema().catch((err) => console.error(`schema ${PG_SCHEMA} not dropped: ${err.message}`));
  rmSync(dir, { recursive: true, force: true });
  rmSync(path.join(RESULTS, '.dist-snapshot-imap'), { recursive: true, force: true });
}
