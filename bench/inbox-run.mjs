import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { checkInboxAnswers, checkInboxSql, checkInboxWrites } from './inbox-check.mjs';
import {
  checkDeepToken,
  DOMAIN,
  dropInboxSchema,
  LIST_INBOX,
  loadService,
  PEER_INBOX,
  seedInbox,
} from './inbox-seed.mjs';
import * as harness from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';
import { sqliteSnapshot } from './lib/sqlite-snapshot.mjs';
import {
  alternate,
  fmt,
  LOAD_CPU,
  medians,
  postgresUrl,
  profiled,
  RESULTS,
  ROOT,
  SERVER_CPU,
  snapshotDist,
  sourceOf,
  timestamp,
  writeResults,
} from './lib/harness.mjs';

/**
 * `npm run bench:inbox`: the inbox server (dist/src/inbox/main.js, INBOX_ROLES=api) against its
 * limit (bench/baseline/inbox-baseline.mjs) on the same database, scenario by scenario,
 * alternating, server on CPU 0 and autocannon on CPU 1: the first page of an inbox of 100,000
 * messages, the page that starts at message 90,000, and sending a message to another local inbox.
 * Options: --runs 3 --duration 10 --warmup 3 --connections 50 --messages 100000 --deep 90000
 * --probe 500 --only first|deep|send --profile (or BENCH_RUNS, …, BENCH_PROFILE=1); --runs 0 runs only
 * the seed and the fairness checks. PostgreSQL too
 * when BENCH_POSTGRES_URL or TEST_POSTGRES_URL is set (schema bench_inbox, dropped afterwards).
 */

const SNAPSHOT = path.join(RESULTS, '.dist-snapshot-inbox');
// As in run.mjs: BENCH_OURS / BENCH_LIMIT replace either program (a patched copy of dist/, say),
// BENCH_CHECK=0 skips the fairness checks.
const SERVERS = {
  ours: path.resolve(ROOT, process.env.BENCH_OURS ?? path.join(SNAPSHOT, 'src/inbox/main.js')),
  baseline: path.resolve(ROOT, process.env.BENCH_LIMIT ?? 'bench/baseline/inbox-baseline.mjs'),
};
const CHECK = process.env.BENCH_CHECK !== '0';

const { values: args } = parseArgs({
  options: Object.fromEntries(
    ['runs', 'duration', 'warmup', 'warmup-requests', 'connections', 'messages', 'deep', 'probe', 'only']
      .map((k) => [k, { type: 'string' }])
      .concat([['profile', { type: 'boolean' }]]),
  ),
});
const option = (name, fallback) =>
  Number(args[name] ?? process.env[`BENCH_${name.toUpperCase().replace('-', '_')}`] ?? fallback);
const opts = {
  runs: option('runs', 3),
  duration: option('duration', 10),
  warmup: option('warmup', 3),
  // A warm-up of this many requests (0: of --warmup seconds). Counted, not timed: a send's warm-up
  // writes rows, and both programs must start measuring on a database of the same size; and it
  // lasts until the larger program's JIT has settled (bench/README.md, "Warm-up and the database
  // of a send run").
  warmupRequests: option('warmup-requests', 3000),
  connections: option('connections', 50),
  messages: option('messages', 100_000),
  deep: option('deep', 90_000),
  probe: option('probe', 500),
  profile: args.profile ?? process.env.BENCH_PROFILE === '1',
};
const only = args.only ?? process.env.BENCH_ONLY;
if (!(opts.deep > 0 && opts.deep < opts.messages)) {
  console.error(
    `--deep (${opts.deep}) must lie between 0 and --messages (${opts.messages}): the deep page starts there.`,
  );
  process.exit(2);
}

/** A short plain-text message, as an agent sends it with the SDK (`to` as a string). */
const SEND_BODY = JSON.stringify({
  to: PEER_INBOX,
  subject: 'Order 48213: delivery update',
  text: 'Hello,\n\nyour order 48213 left our warehouse today and should arrive\nwithin two working days. The tracking link follows in a separate mail.\n\nKind regards,\nSupport Agent',
});

function scenarios({ apiKey, deepToken }) {
  const headers = { authorization: `Bearer ${apiKey}` };
  const messages = `/v0/inboxes/${encodeURIComponent(LIST_INBOX)}/messages`;
  return [
    {
      id: 'first',
      name: 'GET /v0/inboxes/{id}/messages',
      plan: 'listFirst',
      target: 0.7,
      request: { method: 'GET', path: messages, headers },
    },
    {
      id: 'deep',
      name: `GET /v0/inboxes/{id}/messages?page_token=… (from message ${fmt(opts.deep)})`,
      plan: 'listDeep',
      target: 0.7,
      request: { method: 'GET', path: `${messages}?page_token=${deepToken}`, headers },
    },
    {
      id: 'send',
      name: 'POST /v0/inboxes/{id}/messages/send (local delivery)',
      plan: 'send',
      // Issue 32: sends at 0.7 of their limit, as every other scenario.
      target: 0.7,
      request: {
        method: 'POST',
        path: `${messages}/send`,
        headers: { ...headers, 'content-type': 'application/json' },
        body: SEND_BODY,
      },
    },
  ].filter((s) => !only || s.id === only);
}

function databases(dir) {
  const out = [
    { dialect: 'sqlite', url: `sqlite:${path.join(dir, 'inbox.db')}`, sqliteFile: path.join(dir, 'inbox.db') },
  ];
  const pgUrl = postgresUrl('bench_inbox');
  if (pgUrl) out.push({ dialect: 'postgres', url: pgUrl });
  return out;
}

/** The environment of both programs: the server's settings, read by the limit too. */
function serverEnv(db, dir, port) {
  return {
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    INBOX_PORT: String(port),
    DATA_DIR: dir,
    INBOX_DATABASE_URL: db.url,
    BASELINE_DATABASE_URL: db.url,
    INBOX_ROLES: 'api',
    INBOX_DOMAINS: DOMAIN,
    // Neither budget may end a measurement with 429s: a run sends tens of thousands of messages.
    INBOX_RATE_LIMIT_PER_MINUTE: '10000000',
    INBOX_SEND_LIMIT_PER_DAY: '100000000',
  };
}

function startServer(kind, db, dir, port, nodeArgs = [], extraEnv = {}) {
  return harness.startServer({
    label: kind,
    file: SERVERS[kind],
    env: { ...serverEnv(db, dir, port), ...extraEnv },
    nodeArgs,
  });
}

function measure(kind, db, dir, scenario, port, nodeArgs, restore = () => {}) {
  const load = {
    connections: opts.connections,
    warmup: opts.warmup,
    warmupRequests: opts.warmupRequests,
    duration: opts.duration,
    probe: scenario.plan === 'send' ? 0 : opts.probe,
  };
  const start = (a) => {
    restore();
    return startServer(kind, db, dir, port, a);
  };
  return harness.measure({
    label: `${kind} ${scenario.name}`,
    start,
    dialect: db.dialect,
    request: scenario.request,
    port,
    load,
    nodeArgs,
  });
}

/**
 * For the send scenario on SQLite: every run starts from the database as the checks left it
 * (lib/sqlite-snapshot.mjs). PostgreSQL runs share the schema (ABBAAB spreads the growth over
 * both programs).
 */
function sqliteRestorer(db, scenario) {
  if (scenario.plan !== 'send' || db.dialect !== 'sqlite') return undefined;
  return sqliteSnapshot(db.sqliteFile);
}

async function profile(db, dir, scenario, port, stamp, restore) {
  const out = [];
  for (const kind of ['ours', 'baseline']) {
    const profileDir = path.join(RESULTS, 'profiles', `${stamp}-inbox-${db.dialect}-${scenario.id}-${kind}`);
    const { r, file, top, text } = await profiled(profileDir, (a) =>
      measure(kind, db, dir, scenario, port, a, restore),
    );
    out.push({
      dialect: db.dialect,
      scenario: scenario.name,
      kind,
      rps: r.rps,
      cpuUsPerRequest: r.serverUsPerRequest,
      file,
      ...top,
    });
    console.log(`  profiled ${kind} (not counted): ${fmt(r.rps)} req/s\n${text.replace(/^/gm, '    ')}`);
  }
  return out;
}

async function benchScenario(db, dir, scenario, port, stamp) {
  const serve = (kind, extraEnv, fn) =>
    harness.withServer(
      () => startServer(kind, db, dir, port, [], extraEnv),
      () => fn(port),
    );
  const checks = {};
  if (CHECK) {
    const env = serverEnv(db, dir, port);
    const pair = await checkInboxSql({ main: SERVERS.ours, dialect: db.dialect, url: db.url, env, scenario, serve });
    if (pair) checks.concurrentSends = pair;
    const name = `${db.dialect} ${scenario.name}`;
    const answers = await checkInboxAnswers({ name, serve, request: scenario.request, read: scenario.plan !== 'send' });
    checks.bytes = answers.bytes;
    if (scenario.plan === 'send')
      checks.rowsWritten = await checkInboxWrites({
        name,
        dialect: db.dialect,
        url: db.url,
        ours: answers.ours,
        limit: answers.limit,
      });
    const what =
      scenario.plan === 'send'
        ? `same status, headers and JSON keys, the same rows written (${Object.entries(checks.rowsWritten)
            .map(([t, n]) => `${n} ${t}`)
            .join(', ')})${pair ? `; two concurrent sends: ${pair.server} (server), ${pair.limit} (limit)` : ''}`
        : `same headers and the same ${fmt(answers.bytes)}-byte body`;
    console.log(`${name}: same SQL, ${what}`);
  } else {
    console.log(`${db.dialect} ${scenario.name}: fairness checks skipped (BENCH_CHECK=0)`);
  }
  const restorer = opts.runs > 0 ? sqliteRestorer(db, scenario) : undefined;
  const runs = await alternate(opts.runs, (kind) => measure(kind, db, dir, scenario, port, [], restorer?.restore), {
    dialect: db.dialect,
    scenario: scenario.name,
    id: scenario.id,
  });
  const ours = medians(runs, 'ours');
  const baseline = medians(runs, 'baseline');
  const summary = {
    dialect: db.dialect,
    id: scenario.id,
    scenario: scenario.name,
    target: scenario.target,
    checks,
    ours,
    baseline,
    ratio: ours.rps / baseline.rps,
  };
  const profiles = opts.profile ? await profile(db, dir, scenario, port, stamp, restorer?.restore) : [];
  restorer?.done();
  return { summary, runs, profiles };
}

const warmupText = () =>
  opts.warmupRequests > 0 ? `a warm-up of ${fmt(opts.warmupRequests)} requests` : `${opts.warmup} s warm-up`;

const SEND_FLOOR = 1000;
const DEEP_FACTOR = 1.5;

function verdict(s) {
  const met = s.ratio >= s.target;
  const floor =
    s.id === 'send' && s.dialect === 'sqlite'
      ? ` and ${s.ours.rps >= SEND_FLOOR ? '≥' : '**<**'} ${fmt(SEND_FLOOR)}/s`
      : '';
  return `≥ ${fmt(s.target, 2)}: ${met ? 'met' : '**missed**'}${floor}`;
}

function table(summary) {
  const perRequest = (m) => `${fmt(m.cpuUs)}${m.dbCpuUs ? ` + ${fmt(m.dbCpuUs)}` : ''}`;
  const latency = (m) => `${fmt(m.mean ?? NaN, 1)} / ${m.p99} ms`;
  const rows = [
    '| Database | Scenario | Ours req/s | Ours mean / p99 | Limit req/s | Limit mean / p99 | Ratio | Target | CPU µs/request ours / limit |',
    '|---|---|--:|--:|--:|--:|--:|---|---|',
  ];
  for (const s of summary) {
    rows.push(
      `| ${s.dialect} | \`${s.scenario}\` | ${fmt(s.ours.rps)} | ${latency(s.ours)} | ${fmt(s.baseline.rps)} | ${latency(s.baseline)} | **${fmt(s.ratio, 2)}** | ${verdict(s)} | ${perRequest(s.ours)} / ${perRequest(s.baseline)} |`,
    );
  }
  const pages = [];
  for (const dialect of new Set(summary.map((s) => s.dialect))) {
    const first = summary.find((s) => s.dialect === dialect && s.id === 'first');
    const deep = summary.find((s) => s.dialect === dialect && s.id === 'deep');
    if (!first || !deep) continue;
    for (const kind of ['ours', 'baseline']) {
      const who = kind === 'ours' ? 'ours' : 'limit';
      const unloaded = deep[kind].probeUs / first[kind].probeUs;
      const loaded = deep[kind].mean / first[kind].mean;
      const mark = (x) => (kind === 'ours' ? (x <= DEEP_FACTOR ? 'met' : '**missed**') : '');
      pages.push(
        `| ${dialect} | ${who}, unloaded (1 connection, median) | ${fmt(first[kind].probeUs)} µs | ${fmt(deep[kind].probeUs)} µs | **${fmt(unloaded, 2)}** | ${mark(unloaded)} |`,
      );
      pages.push(
        `| ${dialect} | ${who}, under load (${opts.connections} connections, mean) | ${fmt(first[kind].mean, 2)} ms | ${fmt(deep[kind].mean, 2)} ms | **${fmt(loaded, 2)}** | ${mark(loaded)} |`,
      );
    }
  }
  if (pages.length)
    rows.push(
      '',
      '| Database | Latency | First page | Deep page | Deep / first | Target ≤ 1.5 |',
      '|---|---|--:|--:|--:|---|',
      ...pages,
    );
  return rows.join('\n');
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'inbox-bench-'));
  const port = await harness.freePort();
  const stamp = timestamp();
  const results = [];
  rmSync(SNAPSHOT, { recursive: true, force: true });
  if (!process.env.BENCH_OURS) snapshotDist(path.basename(SNAPSHOT));
  // BENCH_SOURCE describes a build made elsewhere (BENCH_OURS), e.g. of a clean checkout of one commit.
  const source = process.env.BENCH_SOURCE ?? sourceOf(['src/inbox', 'src/platform']);
  // The seed runs the migrations and code of the build under test (src/inbox/main.js → its dist root).
  await loadService(path.resolve(path.dirname(SERVERS.ours), '../..'));
  console.log(
    `inbox bench: ${opts.runs} runs × ${opts.duration} s (+${warmupText()}), ${opts.connections} connections, ${fmt(opts.messages)} messages, deep page from message ${fmt(opts.deep)}; server on CPU ${SERVER_CPU}, autocannon on CPU ${LOAD_CPU}`,
  );
  try {
    for (const db of databases(dir)) {
      const started = Date.now();
      const seeded = await seedInbox({
        url: db.url,
        sqliteFile: db.sqliteFile,
        dataDir: dir,
        count: opts.messages,
        deepOffset: opts.deep,
        log: console.log,
      });
      if (CHECK)
        await checkDeepToken({
          url: db.url,
          dataDir: dir,
          apiKey: seeded.apiKey,
          offset: opts.deep,
          limit: seeded.limit,
          token: seeded.deepToken,
        });
      console.log(
        `\n${db.dialect}: seeded ${fmt(opts.messages)} messages in ${fmt((Date.now() - started) / 1000)} s${CHECK ? `; paging through the service reaches the deep page's token` : ''}`,
      );
      try {
        for (const scenario of scenarios(seeded)) results.push(await benchScenario(db, dir, scenario, port, stamp));
      } finally {
        if (db.dialect === 'postgres') await dropInboxSchema(db.url, dir);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(SNAPSHOT, { recursive: true, force: true });
  }
  if (opts.runs === 0) {
    console.log('\n--runs 0: fairness checks only, nothing measured');
    return;
  }
  const summary = results.map((r) => r.summary);
  const machine = await machineWithCosts();
  const servers = Object.fromEntries(
    Object.entries(SERVERS).map(([kind, file]) => [
      kind,
      path.relative(ROOT, file).replace(/^bench\/results\/\.dist-snapshot-inbox\//, 'dist/'),
    ]),
  );
  const runs = results.flatMap((r) => r.runs);
  const raw = {
    date: new Date().toISOString(),
    machine,
    source,
    options: opts,
    servers,
    summary,
    runs,
    profiles: results.flatMap((r) => r.profiles),
  };
  const disturbed = runs.filter((r) => r.disturbed);
  const md = [
    `Inbox bench, ${new Date().toISOString()}; ${machine}`,
    `Servers: ours = ${servers.ours} with INBOX_ROLES=api (built from ${source}), limit = ${servers.baseline}.`,
    `Median of ${opts.runs} runs, ${opts.duration} s each after ${warmupText()}, ${opts.connections} connections; SQLite send runs each start from the same copy of the database. Ratio = ours / limit (req/s). Unloaded latency: median of ${opts.probe} sequential requests after the warm-up.`,
    'CPU µs/request: server process (+ PostgreSQL backends) CPU time divided by requests served.',
    `Runs disturbed by other work on the machine (> 0.25 core, after 3 attempts): ${disturbed.length} of ${runs.length}${disturbed.length ? ` (${disturbed.map((r) => `${r.dialect} ${r.id} ${r.kind} run ${r.run}`).join(', ')})` : ''}.`,
    '',
    table(summary),
    '',
  ].join('\n');
  writeResults(stamp, raw, md);
}

await main();
