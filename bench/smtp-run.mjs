import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import * as harness from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';
import { ensurePostfix, postfixInstance, SMTP_SOURCE } from './lib/postfix.mjs';
import {
  ATTEMPTS,
  cpuSeconds,
  DISTURBED,
  exited,
  fmt,
  LOAD_CPU,
  machineBusy,
  median,
  postgresCpu,
  postgresUrl,
  profiled,
  quiet,
  RESULTS,
  ROOT,
  SERVER_CPU,
  snapshotDist,
  sourceOf,
  timestamp,
  writeResults,
} from './lib/harness.mjs';

/**
 * `npm run bench:smtp`: inbound SMTP throughput of the inbox service (dist/src/inbox/main.js,
 * INBOX_ROLES=smtp, INBOX_SMTP_VERIFY_AUTH=false) against its ceiling, a bare smtp-server that
 * discards DATA (bench/baseline/smtp-ceiling.mjs) with the same protocol settings, alternating,
 * server on CPU 0 and the load generator (bench/smtp-load.mjs) on CPU 1. Scenarios: 1 KiB
 * messages over 20 reused connections, 1 MiB messages with attachments over 20 reused
 * connections, and 1 KiB messages with a new connection per message, with the default 100 ms
 * greeting delay and with INBOX_SMTP_GREETING_DELAY_MS=0. Every run of ours starts on a freshly
 * seeded database (migrations, an organization, 20 inboxes and a webhook subscribed to
 * message.received, all through the service's own code), and afterwards the messages, their
 * message.received events and webhook delivery jobs in the database must each equal the 250s the
 * load generator received.
 *
 * `--anchor postfix` (or BENCH_ANCHOR=postfix) measures ours against Postfix instead, as an
 * operator would: a private Postfix instance (bench/lib/postfix.mjs: its own configuration and
 * queue in a scratch folder, loopback only, every message held after DATA, so written and fsynced
 * before its 250; Debian's postfix is installed when missing) and ours (greeting delay 0, as
 * Postfix's smtpd greets at once), both driven by Postfix's smtp-source with sessions reused
 * (`-d`) and with a new connection per message (--modes reuse,connect), --messages 10000 of 1 KiB
 * over --sessions 20 per run, alternating; afterwards every message is counted (ours: messages,
 * events and webhook jobs in the database; Postfix: files in its hold queue). Reports ours ÷
 * Postfix per run pair. Each run also measures the floor, the bare smtp-server that stores nothing
 * (baseline/smtp-ceiling.mjs): its ratio to Postfix is the most any server built on smtp-server
 * could reach on this machine, and shows whether the target is within reach at all (decision
 * 0041). --profile adds one --cpu-prof run of ours per mode.
 *
 * Options: --runs 3 --duration 10 --warmup 3 --sessions 20 --only small|large|connect|connect0
 * --client raw|nodemailer --clients (first compare the two clients against both servers)
 * --anchor ceiling|postfix --messages 10000 --modes reuse,connect
 * --profile (or BENCH_RUNS, …, BENCH_CLIENT, BENCH_PROFILE=1). PostgreSQL too when
 * BENCH_POSTGRES_URL or TEST_POSTGRES_URL is set (schema bench_smtp, dropped afterwards);
 * BENCH_SQLITE=0 skips SQLite.
 */

const SNAPSHOT = path.join(RESULTS, '.dist-snapshot-smtp');
// As in the other benches: BENCH_OURS / BENCH_LIMIT replace either program (a patched dist/, say).
/** The bare smtp-server: the default ceiling, and always the floor of the Postfix comparison, whatever BENCH_LIMIT names. */
const BARE = path.resolve(ROOT, 'bench/baseline/smtp-ceiling.mjs');
const SERVERS = {
  ours: path.resolve(ROOT, process.env.BENCH_OURS ?? path.join(SNAPSHOT, 'src/inbox/main.js')),
  ceiling: process.env.BENCH_LIMIT ? path.resolve(ROOT, process.env.BENCH_LIMIT) : BARE,
};
/** A build of the service (seeded and checked) rather than the ceiling: BENCH_LIMIT may name one, for an A/B of two builds. */
const isService = (kind) => path.basename(SERVERS[kind]) === 'main.js';
const DOMAIN = 'inbox.localhost';
const INBOXES = 20;
const SMALL_TARGET = 1000;

const { values: args } = parseArgs({
  options: Object.fromEntries(
    ['runs', 'duration', 'warmup', 'sessions', 'only', 'client', 'anchor', 'messages', 'modes']
      .map((k) => [k, { type: 'string' }])
      .concat([
        ['profile', { type: 'boolean' }],
        ['clients', { type: 'boolean' }],
      ]),
  ),
});
const option = (name, fallback) => Number(args[name] ?? process.env[`BENCH_${name.toUpperCase()}`] ?? fallback);
const opts = {
  runs: option('runs', 3),
  duration: option('duration', 10),
  warmup: option('warmup', 3),
  sessions: option('sessions', 20),
  client: args.client ?? process.env.BENCH_CLIENT ?? 'raw',
  profile: args.profile ?? process.env.BENCH_PROFILE === '1',
  clients: args.clients ?? process.env.BENCH_CLIENTS === '1',
  anchor: args.anchor ?? process.env.BENCH_ANCHOR ?? 'ceiling',
  messages: option('messages', 10_000),
  modes: (args.modes ?? process.env.BENCH_MODES ?? 'reuse,connect').split(','),
};
if (!['ceiling', 'postfix'].includes(opts.anchor)) throw new Error('--anchor is ceiling or postfix');
const only = args.only ?? process.env.BENCH_ONLY;

const SCENARIOS = [
  { id: 'small', name: '1 KiB, 20 reused connections', size: 'small', mode: 'reuse', greetingDelayMs: 100 },
  {
    id: 'large',
    name: '1 MiB with attachments, 20 reused connections',
    size: 'large',
    mode: 'reuse',
    greetingDelayMs: 100,
  },
  {
    id: 'connect',
    name: '1 KiB, new connection per message, greeting delay 100 ms',
    size: 'small',
    mode: 'connect',
    greetingDelayMs: 100,
  },
  {
    id: 'connect0',
    name: '1 KiB, new connection per message, greeting delay 0',
    size: 'small',
    mode: 'connect',
    greetingDelayMs: 0,
  },
].filter((s) => !only || only.split(',').includes(s.id));

const RECIPIENTS = Array.from({ length: INBOXES }, (_, i) => `agent-${String(i + 1).padStart(2, '0')}@${DOMAIN}`);

// ---------------------------------------------------------------------------------------------
// The database: seeded through the service's own code, counted after each run.

let svc;
async function loadService(dist) {
  const from = (file) => import(pathToFileURL(path.join(dist, 'src', file)).href);
  const [service, config, spec] = await Promise.all(
    ['inbox/service.js', 'platform/config/config.js', 'inbox/inbox.config.js'].map(from),
  );
  svc = { ...service, ...config, ...spec };
}

const quietLog = { warn() {}, error() {} };
const configOf = (db, dir) =>
  svc.loadConfig(svc.inboxConfigSpec, {
    LOG_LEVEL: 'warn',
    INBOX_DATABASE_URL: db.url,
    DATA_DIR: dir,
    INBOX_DOMAINS: DOMAIN,
    INBOX_ROLES: 'smtp',
  });

/** A fresh database: migrations, one organization (API key), 20 inboxes, a webhook for message.received. */
async function seed(db, dir) {
  if (db.sqliteFile) for (const suffix of ['', '-wal', '-shm']) rmSync(db.sqliteFile + suffix, { force: true });
  if (db.dialect === 'postgres') await dropSchema(db, dir);
  const config = configOf(db, dir);
  const database = await svc.openInboxDatabase(config);
  try {
    await svc.migrateInbox(database);
    const { services } = svc.createInboxServices(config, database.db, { log: quietLog });
    const key = await services.apiKeys.createKey({ name: 'bench-smtp' });
    const owner = { apiKeyId: key.apiKeyId, organizationId: key.organizationId };
    for (const address of RECIPIENTS)
      await services.inboxes.create(owner, { username: address.split('@')[0], displayName: 'Support Agent' });
    await services.webhooks.create(owner, {
      url: 'https://hooks.example.org/agentmail',
      eventTypes: ['message.received'],
    });
    await services.limiter.close();
  } finally {
    await database.destroy();
  }
}

/** What inbound delivery wrote: messages, their message.received events, webhook delivery jobs, threads, attachments. */
async function storedCounts(db, dir) {
  const database = await svc.openInboxDatabase(configOf(db, dir));
  try {
    const count = async (q) => Number((await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const d = database.db;
    return {
      messages: await count(d.selectFrom('messages')),
      events: await count(d.selectFrom('events').where('event_type', '=', 'message.received')),
      jobs: await count(d.selectFrom('jobs')),
      threads: await count(d.selectFrom('threads')),
      attachments: await count(d.selectFrom('attachments')),
    };
  } finally {
    await database.destroy();
  }
}

async function dropSchema(db, dir) {
  const url = new URL(db.url);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  const database = await svc.openInboxDatabase(configOf({ ...db, url: url.toString() }, dir));
  try {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(database.db);
  } finally {
    await database.destroy();
  }
}

function databases(dir) {
  const out = [];
  if (process.env.BENCH_SQLITE !== '0')
    out.push({ dialect: 'sqlite', url: `sqlite:${path.join(dir, 'smtp.db')}`, sqliteFile: path.join(dir, 'smtp.db') });
  const pgUrl = postgresUrl('bench_smtp');
  if (pgUrl) out.push({ dialect: 'postgres', url: pgUrl });
  return out;
}

// ---------------------------------------------------------------------------------------------
// One measurement.

function serverEnv(db, dir, port, scenario) {
  return {
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    // The API is not started (INBOX_ROLES=smtp): this port serves /healthz and /metrics. Both
    // ports lie below the ephemeral range (harness.freePort), out of reach of the load's sockets.
    INBOX_PORT: String(port.management),
    INBOX_SMTP_PORT: String(port.smtp),
    INBOX_SMTP_HOSTNAME: `mx.${DOMAIN}`,
    DATA_DIR: dir,
    INBOX_DATABASE_URL: db.url,
    INBOX_DOMAINS: DOMAIN,
    // The listener alone: the message.received event and its webhook delivery job are written in
    // the message's transaction, before the 250; delivering them is the worker's, not measured here.
    INBOX_ROLES: 'smtp',
    // No DNS on the benchmark machine: SPF, DKIM and DMARC would each wait for their timeout.
    INBOX_SMTP_VERIFY_AUTH: 'false',
    INBOX_SMTP_GREETING_DELAY_MS: String(scenario.greetingDelayMs),
    // Every session comes from 127.0.0.1, and a sender with a connection per message briefly holds
    // a 21st while the server closes the last one: the per-address limit (20) would answer 421.
    INBOX_SMTP_MAX_CONNECTIONS_PER_IP: '1000',
  };
}

async function measure({ kind, db, dir, scenario, port, client = opts.client, nodeArgs = [] }) {
  if (isService(kind)) await seed(db, dir);
  await quiet();
  const server = await harness.startServer({
    label: kind,
    file: SERVERS[kind],
    env: serverEnv(db, dir, port, scenario),
    nodeArgs,
  });
  let result;
  let before;
  let after;
  try {
    const spec = {
      host: '127.0.0.1',
      port: port.smtp,
      sessions: opts.sessions,
      warmup: opts.warmup,
      duration: opts.duration,
      mode: scenario.mode,
      size: scenario.size,
      client,
      recipients: RECIPIENTS,
    };
    const child = spawn('taskset', ['-c', LOAD_CPU, process.execPath, 'bench/smtp-load.mjs', JSON.stringify(spec)], {
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
    for await (const line of createInterface({ input: child.stdout })) {
      if (line === 'warm') {
        if (db.dialect === 'postgres') dbCpu = postgresCpu();
        before = cpu();
      } else if (!after) {
        after = cpu();
        result = JSON.parse(line);
      }
    }
    if ((await exited(child)) !== 0 || !result) throw new Error('the load generator failed');
  } finally {
    await server.stop();
  }
  const label = `${db.dialect} ${scenario.id} ${kind}`;
  if (result.errors)
    throw new Error(`${label}: ${result.errors} failed transactions, e.g. ${result.errorSamples.join(' | ')}`);
  let stored;
  if (isService(kind)) {
    // Nothing acknowledged may be missing, and nothing may be stored without its event and job.
    stored = await storedCounts(db, dir);
    const expected = {
      messages: result.ok250,
      events: result.ok250,
      jobs: result.ok250,
      ...(scenario.size === 'large' ? { attachments: result.ok250 } : {}),
    };
    const wrong = Object.entries(expected).filter(([k, n]) => stored[k] !== n);
    if (wrong.length)
      throw new Error(
        `${label}: ${result.ok250} messages answered 250, but the database holds ${wrong.map(([k]) => `${stored[k]} ${k}`).join(', ')}`,
      );
  }
  const seconds = after.wall - before.wall;
  const use = (key) => (after[key] - before[key]) / seconds;
  const { cpu: loadCpu, ...measured } = result;
  const otherCpu = Math.max(0, use('machine') - use('server') - use('db') - loadCpu);
  const perMessageUs = (key) => ((after[key] - before[key]) / result.total) * 1e6;
  return {
    ...measured,
    serverCpu: use('server'),
    dbCpu: use('db'),
    loadCpu,
    otherCpu,
    serverUsPerMessage: perMessageUs('server'),
    dbUsPerMessage: perMessageUs('db'),
    ...(stored ? { stored } : {}),
  };
}

/** Repeats a measurement (up to ATTEMPTS times) while other work used more than DISTURBED cores. */
async function undisturbed(run) {
  let r;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    r = await run();
    if (r.otherCpu <= DISTURBED) return r;
    console.log(
      `  (other processes used ${fmt(r.otherCpu * 100)} % CPU during that run of ${fmt(r.rps)} msg/s; ${attempt < ATTEMPTS ? 'repeating it' : 'keeping it, marked disturbed'})`,
    );
  }
  return { ...r, disturbed: true };
}

const describe = (r) =>
  `${fmt(r.rps).padStart(6)} msg/s  p50 ${fmt(r.p50, 1)} ms  p99 ${fmt(r.p99, 1)} ms  ${fmt(r.serverUsPerMessage)} µs CPU/msg  CPU: server ${fmt(r.serverCpu * 100)} %, load ${fmt(r.loadCpu * 100)} %, postgres ${fmt(r.dbCpu * 100)} %, other ${fmt(r.otherCpu * 100)} %${r.reconnects ? `  ${r.reconnects} reconnects (421)` : ''}${r.stored ? `  stored ${r.stored.messages} = 250s` : `  250s ${r.ok250}`}${r.disturbed ? '  (disturbed)' : ''}`;

/** Ours and the ceiling alternately (ABBA…), `runs` times each. */
async function alternate(db, dir, scenario, port) {
  const out = [];
  for (let run = 1; run <= opts.runs; run++) {
    for (const kind of run % 2 ? ['ours', 'ceiling'] : ['ceiling', 'ours']) {
      const r = await undisturbed(() => measure({ kind, db, dir, scenario, port }));
      console.log(`  run ${run} ${kind.padEnd(8)} ${describe(r)}`);
      out.push({ dialect: db.dialect, id: scenario.id, scenario: scenario.name, kind, run, ...r });
    }
  }
  return out;
}

function medians(runs, kind) {
  const rs = runs.filter((r) => r.kind === kind);
  const med = (get) => median(rs.map(get));
  return {
    rps: med((r) => r.rps),
    p50: med((r) => r.p50),
    p99: med((r) => r.p99),
    mibPerSecond: med((r) => r.mibPerSecond),
    cpuUs: med((r) => r.serverUsPerMessage),
    dbCpuUs: med((r) => r.dbUsPerMessage),
    loadCpu: med((r) => r.loadCpu),
  };
}

async function profile(db, dir, scenario, port, stamp) {
  const out = [];
  for (const kind of ['ours', 'ceiling']) {
    const profileDir = path.join(RESULTS, 'profiles', `${stamp}-smtp-${db.dialect}-${scenario.id}-${kind}`);
    const { r, file, top, text } = await profiled(profileDir, (nodeArgs) =>
      measure({ kind, db, dir, scenario, port, nodeArgs }),
    );
    out.push({
      dialect: db.dialect,
      scenario: scenario.name,
      kind,
      rps: r.rps,
      cpuUsPerMessage: r.serverUsPerMessage,
      file,
      ...top,
    });
    console.log(`  profiled ${kind} (not counted): ${fmt(r.rps)} msg/s\n${text.replace(/^/gm, '    ')}`);
  }
  return out;
}

/** Which client can load the servers harder: one run of each against each server, 1 KiB, reused connections. */
async function compareClients(db, dir, port) {
  const scenario = SCENARIOS.find((s) => s.id === 'small') ?? {
    id: 'small',
    name: '1 KiB, 20 reused connections',
    size: 'small',
    mode: 'reuse',
    greetingDelayMs: 100,
  };
  const out = [];
  console.log(`\n${db.dialect}: the load generator's clients, ${scenario.name}`);
  for (const kind of ['ceiling', 'ours']) {
    for (const client of ['raw', 'nodemailer']) {
      const r = await undisturbed(() => measure({ kind, db, dir, scenario, port, client }));
      console.log(`  ${kind.padEnd(8)} ${client.padEnd(10)} ${describe(r)}`);
      out.push({
        dialect: db.dialect,
        kind,
        client,
        rps: r.rps,
        p99: r.p99,
        loadCpu: r.loadCpu,
        serverCpu: r.serverCpu,
        serverUsPerMessage: r.serverUsPerMessage,
        disturbed: r.disturbed ?? false,
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

function verdict(s) {
  if (s.id !== 'small' || s.dialect !== 'sqlite') return 'n/a';
  return `≥ ${fmt(SMALL_TARGET)}/s: ${s.ours.rps >= SMALL_TARGET ? 'met' : '**missed**'}`;
}

function table(summary) {
  const perMessage = (m) => `${fmt(m.cpuUs)}${m.dbCpuUs ? ` + ${fmt(m.dbCpuUs)}` : ''}`;
  const latency = (m) => `${fmt(m.p50, 1)} / ${fmt(m.p99, 1)} ms`;
  const rows = [
    '| Database | Scenario | Ours msg/s | Ours p50 / p99 | Ceiling msg/s | Ceiling p50 / p99 | Ratio | Target | CPU µs/message ours / ceiling |',
    '|---|---|--:|--:|--:|--:|--:|---|---|',
  ];
  for (const s of summary) {
    const mib = s.id === 'large' ? ` (${fmt(s.ours.mibPerSecond, 1)} MiB/s)` : '';
    const cmib = s.id === 'large' ? ` (${fmt(s.ceiling.mibPerSecond, 1)} MiB/s)` : '';
    rows.push(
      `| ${s.dialect} | ${s.scenario} | ${fmt(s.ours.rps)}${mib} | ${latency(s.ours)} | ${fmt(s.ceiling.rps)}${cmib} | ${latency(s.ceiling)} | **${fmt(s.ratio, 2)}** | ${verdict(s)} | ${perMessage(s.ours)} / ${perMessage(s.ceiling)} |`,
    );
  }
  return rows.join('\n');
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'smtp-bench-'));
  const port = { smtp: await harness.freePort(), management: await harness.freePort() };
  const stamp = timestamp();
  const results = [];
  const clientRuns = [];
  rmSync(SNAPSHOT, { recursive: true, force: true });
  if (!process.env.BENCH_OURS) snapshotDist(path.basename(SNAPSHOT));
  const source = process.env.BENCH_SOURCE ?? sourceOf(['src/inbox', 'src/platform']);
  await loadService(path.resolve(path.dirname(SERVERS.ours), '../..'));
  console.log(
    `smtp bench: ${opts.runs} runs × ${opts.duration} s (+${opts.warmup} s warm-up), ${opts.sessions} sessions, ${opts.client} client; server on CPU ${SERVER_CPU}, load generator on CPU ${LOAD_CPU}`,
  );
  try {
    for (const db of databases(dir)) {
      try {
        if (opts.clients) clientRuns.push(...(await compareClients(db, dir, port)));
        for (const scenario of SCENARIOS) {
          console.log(`\n${db.dialect} ${scenario.name}`);
          const runs = await alternate(db, dir, scenario, port);
          const ours = medians(runs, 'ours');
          const ceiling = medians(runs, 'ceiling');
          const summary = {
            dialect: db.dialect,
            id: scenario.id,
            scenario: scenario.name,
            ours,
            ceiling,
            ratio: ours.rps / ceiling.rps,
          };
          const profiles = opts.profile ? await profile(db, dir, scenario, port, stamp) : [];
          results.push({ summary, runs, profiles });
        }
      } finally {
        if (db.dialect === 'postgres') await dropSchema(db, dir);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(SNAPSHOT, { recursive: true, force: true });
  }
  const summary = results.map((r) => r.summary);
  const machine = await machineWithCosts();
  const servers = Object.fromEntries(
    Object.entries(SERVERS).map(([kind, file]) => [
      kind,
      path.relative(ROOT, file).replace(/^bench\/results\/\.dist-snapshot-smtp\//, 'dist/'),
    ]),
  );
  const runs = results.flatMap((r) => r.runs);
  const raw = {
    date: new Date().toISOString(),
    machine,
    source,
    options: opts,
    servers,
    clients: clientRuns,
    summary,
    runs,
    profiles: results.flatMap((r) => r.profiles),
  };
  const disturbed = runs.filter((r) => r.disturbed);
  const clientLines = clientRuns.length
    ? [
        '',
        '| Database | Server | Client | msg/s | p99 | Load generator CPU | Server CPU |',
        '|---|---|---|--:|--:|--:|--:|',
        ...clientRuns.map(
          (c) =>
            `| ${c.dialect} | ${c.kind} | ${c.client} | ${fmt(c.rps)} | ${fmt(c.p99, 1)} ms | ${fmt(c.loadCpu * 100)} % | ${fmt(c.serverCpu * 100)} % |`,
        ),
      ]
    : [];
  const md = [
    `SMTP bench, ${new Date().toISOString()}; ${machine}`,
    `Servers: ours = ${servers.ours} with INBOX_ROLES=smtp, INBOX_SMTP_VERIFY_AUTH=false (built from ${source}), ceiling = ${servers.ceiling}. Client: ${opts.client}.`,
    `Median of ${opts.runs} runs, ${opts.duration} s each after ${opts.warmup} s warm-up, ${opts.sessions} parallel sessions. Ratio = ours / ceiling (msg/s). Latency: MAIL FROM to the 250 after the final dot (reused connections), connect to that 250 (new connection per message).`,
    'CPU µs/message: server process (+ PostgreSQL backends) CPU time divided by the messages answered 250 in the window. Every run of ours: messages, message.received events and webhook jobs stored = 250s received.',
    `Runs disturbed by other work on the machine (> ${DISTURBED} core, after 3 attempts): ${disturbed.length} of ${runs.length}${disturbed.length ? ` (${disturbed.map((r) => `${r.dialect} ${r.id} ${r.kind} run ${r.run}`).join(', ')})` : ''}.`,
    '',
    table(summary),
    ...clientLines,
    '',
  ].join('\n');
  writeResults(`${stamp}-smtp`, raw, md);
}

// ---------------------------------------------------------------------------------------------
// --anchor postfix: ours against a private Postfix instance, both driven by Postfix's smtp-source.

const ANCHOR_SENDER = 'anna.becker@acme-logistics.example';
const ANCHOR_MODES = {
  reuse: { name: 'sessions reused (smtp-source -d)', args: ['-d'] },
  connect: { name: 'a new connection per message', args: [] },
};

/** CPU seconds of a process tree's root, its reaped children (cutime, cstime) and its live children. */
function treeCpuSeconds(root) {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pid) === root) ticks += fields.slice(11, 15).reduce((n, f) => n + Number(f), 0);
      else if (Number(fields[1]) === root) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100;
}

/** CPU seconds of this process's reaped children (the load generator, once it exited). */
function reapedChildrenCpuSeconds() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * One run: a fresh server (ours on a freshly seeded database, or Postfix with an empty queue),
 * smtp-source on LOAD_CPU sending opts.messages messages of 1 KiB over opts.sessions sessions, and
 * afterwards every message counted where the server stored it.
 */
async function measureAnchor({ kind, db, dir, mode, port, postfix, nodeArgs = [] }) {
  let server;
  if (kind === 'floor') {
    // The bare smtp-server that stores nothing (baseline/smtp-ceiling.mjs), greeting at once too:
    // the most any server built on this protocol library could reach beside Postfix here.
    await quiet();
    const running = await harness.startServer({
      label: kind,
      file: BARE,
      env: serverEnv(db, dir, port, { greetingDelayMs: 0 }),
    });
    server = { ...running, cpu: () => cpuSeconds([running.pid]), smtpPort: port.smtp };
  } else if (kind === 'ours') {
    await seed(db, dir);
    await quiet();
    // Postfix's smtpd greets at once; so does ours here (INBOX_SMTP_GREETING_DELAY_MS=0).
    const running = await harness.startServer({
      label: kind,
      file: SERVERS.ours,
      env: serverEnv(db, dir, port, { greetingDelayMs: 0 }),
      nodeArgs,
    });
    server = { ...running, cpu: () => cpuSeconds([running.pid]), smtpPort: port.smtp };
  } else {
    await quiet();
    const master = await postfix.start();
    server = { stop: async () => postfix.stop(), cpu: () => treeCpuSeconds(master), smtpPort: port.postfix };
  }
  let before;
  let after;
  try {
    const dbCpu = kind === 'ours' && db.dialect === 'postgres' ? postgresCpu() : () => 0;
    const sample = () => ({
      server: server.cpu(),
      db: dbCpu(),
      load: reapedChildrenCpuSeconds(),
      machine: machineBusy(),
      wall: performance.now() / 1000,
    });
    const argv = [
      ...['-c', LOAD_CPU, SMTP_SOURCE, ...ANCHOR_MODES[mode].args],
      ...['-s', String(opts.sessions), '-m', String(opts.messages), '-l', '1024'],
      ...['-M', 'mail-out-3.sender.example', '-f', ANCHOR_SENDER, '-t', RECIPIENTS[0]],
      `127.0.0.1:${server.smtpPort}`,
    ];
    before = sample();
    const child = spawn('taskset', argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const code = await exited(child);
    after = sample();
    if (code !== 0) throw new Error(`${kind}: smtp-source failed (${code}): ${stderr.trim().slice(0, 500)}`);
  } finally {
    await server.stop();
  }
  const label = `${db.dialect} ${mode} ${kind}`;
  let stored;
  if (kind === 'floor') {
    // It keeps nothing to count; smtp-source exits non-zero on a refused message.
    stored = undefined;
  } else if (kind === 'ours') {
    const counts = await storedCounts(db, dir);
    const wrong = ['messages', 'events', 'jobs'].filter((k) => counts[k] !== opts.messages);
    if (wrong.length)
      throw new Error(
        `${label}: smtp-source sent ${opts.messages}, the database holds ${wrong.map((k) => `${counts[k]} ${k}`).join(', ')}`,
      );
    stored = counts.messages;
  } else {
    stored = postfix.held();
    const elsewhere = postfix.elsewhere();
    if (stored !== opts.messages || elsewhere)
      throw new Error(
        `${label}: smtp-source sent ${opts.messages}, the hold queue holds ${stored} (${elsewhere} elsewhere)`,
      );
  }
  const seconds = after.wall - before.wall;
  const use = (key) => (after[key] - before[key]) / seconds;
  return {
    rps: opts.messages / seconds,
    seconds,
    stored,
    serverCpu: use('server'),
    dbCpu: use('db'),
    loadCpu: use('load'),
    otherCpu: Math.max(0, use('machine') - use('server') - use('db') - use('load')),
    serverUsPerMessage: ((after.server - before.server) / opts.messages) * 1e6,
    dbUsPerMessage: ((after.db - before.db) / opts.messages) * 1e6,
    loadAverage: os.loadavg()[0],
  };
}

const describeAnchor = (r) =>
  `${fmt(r.rps).padStart(6)} msg/s  ${fmt(r.seconds, 1)} s  ${fmt(r.serverUsPerMessage)}${r.dbUsPerMessage ? ` + ${fmt(r.dbUsPerMessage)}` : ''} µs CPU/msg  CPU: server ${fmt(r.serverCpu * 100)} %, load ${fmt(r.loadCpu * 100)} %, postgres ${fmt(r.dbCpu * 100)} %, other ${fmt(r.otherCpu * 100)} %  stored ${r.stored === undefined ? 'nothing (floor)' : fmt(r.stored)}  load average ${fmt(r.loadAverage, 2)}${r.disturbed ? '  (disturbed)' : ''}`;

async function postfixAnchor() {
  ensurePostfix();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'smtp-anchor-'));
  chmodSync(dir, 0o755); // Postfix's processes run as the postfix user
  const port = {
    smtp: await harness.freePort(),
    management: await harness.freePort(),
    postfix: await harness.freePort(),
  };
  const postfix = postfixInstance({ dir: path.join(dir, 'postfix'), port: port.postfix, cpu: SERVER_CPU });
  const stamp = timestamp();
  rmSync(SNAPSHOT, { recursive: true, force: true });
  if (!process.env.BENCH_OURS) snapshotDist(path.basename(SNAPSHOT));
  const source = process.env.BENCH_SOURCE ?? sourceOf(['src/inbox', 'src/platform']);
  await loadService(path.resolve(path.dirname(SERVERS.ours), '../..'));
  console.log(
    `smtp bench, anchor Postfix: ${opts.runs} runs × ${fmt(opts.messages)} messages of 1 KiB, ${opts.sessions} sessions (smtp-source); servers on CPU ${SERVER_CPU}, smtp-source on CPU ${LOAD_CPU}`,
  );
  const runs = [];
  const profiles = [];
  // Interrupted (Ctrl-C, a timeout's SIGTERM): the Postfix instance and its scratch folder go too.
  const interrupted = (signal) => {
    postfix.stop();
    rmSync(dir, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for (const db of databases(dir)) {
      try {
        for (const mode of opts.modes) {
          console.log(`\n${db.dialect} ${ANCHOR_MODES[mode].name}`);
          for (let run = 1; run <= opts.runs; run++) {
            for (const kind of run % 2 ? ['ours', 'postfix', 'floor'] : ['floor', 'postfix', 'ours']) {
              const r = await undisturbed(() => measureAnchor({ kind, db, dir, mode, port, postfix }));
              console.log(`  run ${run} ${kind.padEnd(8)} ${describeAnchor(r)}`);
              runs.push({ dialect: db.dialect, mode, kind, run, ...r });
            }
          }
          if (opts.profile) {
            const profileDir = path.join(RESULTS, 'profiles', `${stamp}-smtp-postfix-${db.dialect}-${mode}-ours`);
            const { r, file, top, text } = await profiled(profileDir, (nodeArgs) =>
              measureAnchor({ kind: 'ours', db, dir, mode, port, postfix, nodeArgs }),
            );
            profiles.push({
              dialect: db.dialect,
              mode,
              rps: r.rps,
              cpuUsPerMessage: r.serverUsPerMessage,
              file,
              ...top,
            });
            console.log(`  profiled ours (not counted): ${fmt(r.rps)} msg/s\n${text.replace(/^/gm, '    ')}`);
          }
        }
      } finally {
        if (db.dialect === 'postgres') await dropSchema(db, dir);
      }
    }
  } finally {
    postfix.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(SNAPSHOT, { recursive: true, force: true });
  }
  const rows = [
    '| Database | Mode | Postfix msg/s | Ours msg/s | Ours ÷ Postfix | Median ratio | Target ≥ 2.0 | CPU µs/message ours / Postfix | Floor ÷ Postfix (stores nothing) | CPU µs/message floor |',
    '|---|---|--:|--:|--:|--:|---|---|--:|--:|',
  ];
  const summary = [];
  for (const dialect of [...new Set(runs.map((r) => r.dialect))]) {
    for (const mode of opts.modes) {
      const of = (kind) => runs.filter((r) => r.dialect === dialect && r.mode === mode && r.kind === kind);
      const [ours, pf, floor] = [of('ours'), of('postfix'), of('floor')];
      const ratios = ours.map((o, i) => o.rps / pf[i].rps);
      const ratio = median(ratios);
      const floorRatios = floor.map((f, i) => f.rps / pf[i].rps);
      const list = (rs) => rs.map((r) => fmt(r.rps)).join(' / ');
      const cpu = (rs) => fmt(median(rs.map((r) => r.serverUsPerMessage + r.dbUsPerMessage)));
      summary.push({
        dialect,
        mode,
        ratio,
        ratios,
        ours: median(ours.map((r) => r.rps)),
        postfix: median(pf.map((r) => r.rps)),
        floor: median(floor.map((r) => r.rps)),
        floorRatio: median(floorRatios),
      });
      rows.push(
        `| ${dialect} | ${ANCHOR_MODES[mode].name} | ${list(pf)} | ${list(ours)} | ${ratios.map((x) => fmt(x, 2)).join(' / ')} | **${fmt(ratio, 2)}** | ${ratio >= 2 ? 'met' : '**missed**'} | ${cpu(ours)} / ${cpu(pf)} | ${floorRatios.map((x) => fmt(x, 2)).join(' / ')} | ${cpu(floor)} |`,
      );
    }
  }
  const machine = await machineWithCosts();
  const disturbed = runs.filter((r) => r.disturbed);
  const md = [
    `SMTP bench, anchor Postfix, ${new Date().toISOString()}; ${machine}; load average at the end ${os
      .loadavg()
      .map((x) => fmt(x, 2))
      .join(' ')}`,
    `Ours = ${path.relative(ROOT, SERVERS.ours).replace(/^bench\/results\/\.dist-snapshot-smtp\//, 'dist/')} (INBOX_ROLES=smtp, INBOX_SMTP_VERIFY_AUTH=false, INBOX_SMTP_GREETING_DELAY_MS=0, built from ${source}); Postfix = ${postfixVersion()} as a private instance (hold after DATA, discard transports); floor = the bare smtp-server of bench/baseline/smtp-ceiling.mjs, same protocol settings, greeting at once, storing nothing (what any server on this protocol library could reach here).`,
    `Load: smtp-source, ${opts.sessions} sessions, ${fmt(opts.messages)} messages of 1 KiB per run; msg/s = messages / wall time of smtp-source; every message counted afterwards (ours: messages, events and webhook jobs in the database; Postfix: files in the hold queue). Runs alternate (ABBA…); ratio per run pair.`,
    `Runs disturbed by other work on the machine (> ${DISTURBED} core, after ${ATTEMPTS} attempts): ${disturbed.length} of ${runs.length}${disturbed.length ? ` (${disturbed.map((r) => `${r.dialect} ${r.mode} ${r.kind} run ${r.run}`).join(', ')})` : ''}.`,
    '',
    rows.join('\n'),
    '',
  ].join('\n');
  writeResults(
    `${stamp}-smtp-postfix`,
    { date: new Date().toISOString(), machine, source, options: opts, summary, runs, profiles },
    md,
  );
}

function postfixVersion() {
  const r = spawnSync('/usr/sbin/postconf', ['-d', '-h', 'mail_version'], { encoding: 'utf8' });
  return `Postfix ${r.stdout.trim()}`;
}

await (opts.anchor === 'postfix' ? postfixAnchor() : main());
