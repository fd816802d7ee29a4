import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DOMAIN, dropInboxSchema, LIST_INBOX, loadService, PEER_INBOX, seedInbox } from './inbox-seed.mjs';
import * as harness from './lib/harness.mjs';
import {
  alternate,
  fmt,
  freePort,
  medians,
  postgresUrl,
  RESULTS,
  ROOT,
  snapshotDist,
  sourceOf,
  timestamp,
  writeResults,
} from './lib/harness.mjs';
import { machineWithCosts } from './lib/machine-costs.mjs';
import { sqliteSnapshot } from './lib/sqlite-snapshot.mjs';

/**
 * `npm run bench:mcp`: the MCP door beside the REST API it stands on, in one run (issue 28: MCP at
 * ≥ 0.8 of REST). The same server (dist/src/inbox/main.js, INBOX_ROLES=api, on CPU 0), the same
 * database, the same key and autocannon on CPU 1; per scenario, REST and MCP runs alternate and
 * each starts a fresh server:
 *  - list: `GET /v0/inboxes/{id}/messages?limit=10` against `tools/call list_messages`
 *    `{ inboxId, limit: 10 }` (a POST to /mcp, as an agent's MCP client sends it, stateless);
 *  - send: `POST /v0/inboxes/{id}/messages/send` against `tools/call send_message`, a short
 *    message to another local inbox.
 * Before measuring, one call of each door is checked: the MCP answer is no error, and holds the
 * same messages as the REST answer (MCP answers 200 to a tool error, which autocannon would count).
 * Ratio = MCP ÷ REST (req/s).
 * Options: --runs 3 --duration 10 --warmup 3 --connections 50 --messages 5000 --only list|send
 * --dialect sqlite|postgres|both (PostgreSQL with BENCH_POSTGRES_URL or TEST_POSTGRES_URL, schema
 * bench_mcp, dropped afterwards) --profile (one more run of each door under --cpu-prof, not counted:
 * where the server's time goes, in bench/results/profiles/).
 */

const { values: args } = parseArgs({
  options: {
    ...Object.fromEntries(
      ['runs', 'duration', 'warmup', 'connections', 'messages', 'only', 'dialect'].map((k) => [k, { type: 'string' }]),
    ),
    profile: { type: 'boolean' },
  },
});
const opts = {
  runs: Number(args.runs ?? process.env.BENCH_RUNS ?? 3),
  duration: Number(args.duration ?? process.env.BENCH_DURATION ?? 10),
  warmup: Number(args.warmup ?? process.env.BENCH_WARMUP ?? 3),
  connections: Number(args.connections ?? process.env.BENCH_CONNECTIONS ?? 50),
  messages: Number(args.messages ?? 5000),
  only: args.only,
  dialect: args.dialect ?? process.env.BENCH_DIALECT ?? 'both',
  profile: args.profile ?? process.env.BENCH_PROFILE === '1',
};

const SNAPSHOT = snapshotDist('.dist-snapshot-mcp');
const SERVER = path.join(SNAPSHOT, 'src/inbox/main.js');
await loadService(SNAPSHOT);

const enc = encodeURIComponent;
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const toolCall = (name, args) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

function scenarios(key) {
  const message = { to: [LIST_INBOX], subject: 'Benchmark', text: 'A short message sent by the benchmark.' };
  const all = [
    {
      id: 'list',
      name: 'list messages (10)',
      rest: {
        method: 'GET',
        path: `/v0/inboxes/${enc(LIST_INBOX)}/messages?limit=10`,
        headers: { authorization: `Bearer ${key}` },
      },
      mcp: {
        method: 'POST',
        path: '/mcp',
        headers: { ...MCP_HEADERS, 'x-api-key': key },
        body: toolCall('list_messages', { inboxId: LIST_INBOX, limit: 10 }),
      },
    },
    {
      id: 'send',
      name: 'send a message (local delivery)',
      rest: {
        method: 'POST',
        path: `/v0/inboxes/${enc(PEER_INBOX)}/messages/send`,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(message),
      },
      mcp: {
        method: 'POST',
        path: '/mcp',
        headers: { ...MCP_HEADERS, 'x-api-key': key },
        body: toolCall('send_message', { inboxId: PEER_INBOX, ...message }),
      },
    },
  ];
  return opts.only ? all.filter((s) => opts.only.split(',').includes(s.id)) : all;
}

function serverEnv(db, dir, port) {
  return {
    HOST: '127.0.0.1',
    INBOX_PORT: String(port),
    INBOX_DATABASE_URL: db.url,
    DATA_DIR: dir,
    LOG_LEVEL: 'warn',
    INBOX_ROLES: 'api',
    INBOX_DOMAINS: DOMAIN,
    INBOX_RATE_LIMIT_PER_MINUTE: '10000000',
    INBOX_SEND_LIMIT_PER_DAY: '100000000',
  };
}

/** `restore`: puts the database back as it was before the runs (a SQLite send scenario). */
const start =
  (db, dir, port, restore = () => {}) =>
  (nodeArgs = []) => {
    restore();
    return harness.startServer({ label: 'server', file: SERVER, env: serverEnv(db, dir, port), nodeArgs });
  };

/** One call of each door: the MCP answer is a result, not an error, and lists what REST lists. */
async function check(db, dir, port, scenario) {
  const server = await start(db, dir, port)();
  try {
    const base = `http://127.0.0.1:${port}`;
    const send = (r) => fetch(base + r.path, { method: r.method, headers: r.headers, body: r.body });
    const rest = await send(scenario.rest);
    if (!rest.ok) throw new Error(`${scenario.id}: REST answered ${rest.status}`);
    const restBody = await rest.json();
    const mcp = await send(scenario.mcp);
    const mcpBody = await mcp.json();
    const result = mcpBody.result;
    if (!mcp.ok || !result || result.isError)
      throw new Error(`${scenario.id}: MCP answered ${mcp.status} ${JSON.stringify(mcpBody).slice(0, 300)}`);
    if (scenario.id === 'list') {
      const restIds = restBody.messages.map((m) => m.message_id).join();
      const mcpIds = result.structuredContent.messages.map((m) => m.messageId).join();
      if (restIds !== mcpIds) throw new Error('list: MCP and REST list different messages');
    } else if (!/^</.test(result.structuredContent.messageId)) throw new Error('send: MCP sent no message');
  } finally {
    await server.stop();
  }
}

async function benchDialect(dialect) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-mcp-'));
  const sqliteFile = path.join(dir, 'inbox.db');
  const url = dialect === 'postgres' ? postgresUrl('bench_mcp') : `sqlite:${sqliteFile}`;
  const db = { dialect, url };
  const port = await freePort();
  try {
    const started = Date.now();
    const seeded = await seedInbox({
      url,
      ...(dialect === 'sqlite' ? { sqliteFile } : {}),
      dataDir: dir,
      count: opts.messages,
      deepOffset: Math.min(opts.messages - 1, 10),
      limit: 10,
    });
    console.log(`\n${dialect}: seeded ${fmt(opts.messages)} messages in ${fmt((Date.now() - started) / 1000)} s`);
    const out = [];
    for (const scenario of scenarios(seeded.apiKey)) {
      await check(db, dir, port, scenario);
      console.log(`\n${dialect} — ${scenario.name}: MCP (ours) against REST (baseline)`);
      // Sends on SQLite: every run starts from the same database (lib/sqlite-snapshot.mjs).
      const snapshot = scenario.id === 'send' && dialect === 'sqlite' ? sqliteSnapshot(sqliteFile) : undefined;
      const runs = await alternate(
        opts.runs,
        (kind) =>
          harness.measure({
            label: `${kind} ${scenario.id}`,
            start: start(db, dir, port, snapshot?.restore),
            dialect,
            request: kind === 'ours' ? scenario.mcp : scenario.rest,
            port,
            load: { connections: opts.connections, warmup: opts.warmup, duration: opts.duration },
          }),
        { dialect, scenario: scenario.id },
      );
      if (opts.profile)
        for (const kind of ['ours', 'baseline']) {
          const where = path.join(RESULTS, 'profiles', `${timestamp()}-mcp-${dialect}-${scenario.id}-${kind}`);
          const { r, text } = await harness.profiled(where, (nodeArgs) =>
            harness.measure({
              label: `${kind} ${scenario.id} (profiled)`,
              start: start(db, dir, port, snapshot?.restore),
              dialect,
              request: kind === 'ours' ? scenario.mcp : scenario.rest,
              port,
              load: { connections: opts.connections, warmup: opts.warmup, duration: opts.duration },
              nodeArgs,
            }),
          );
          console.log(`  profiled ${kind} (not counted): ${fmt(r.rps)} req/s\n${text.replace(/^/gm, '    ')}`);
        }
      snapshot?.done();
      const mcp = medians(runs, 'ours');
      const rest = medians(runs, 'baseline');
      out.push({ dialect, scenario: scenario.id, name: scenario.name, mcp, rest, ratio: mcp.rps / rest.rps, runs });
    }
    return out;
  } finally {
    if (dialect === 'postgres') await dropInboxSchema(url, dir).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

const dialects = (opts.dialect === 'both' ? ['sqlite', 'postgres'] : [opts.dialect]).filter(
  (d) => d === 'sqlite' || postgresUrl('bench_mcp'),
);
const results = [];
for (const dialect of dialects) results.push(...(await benchDialect(dialect)));

const stamp = `mcp-${timestamp()}`;
const rows = results.map(
  (r) =>
    `| ${r.dialect} | ${r.name} | ${fmt(r.rest.rps)} | ${fmt(r.mcp.rps)} | **${fmt(r.ratio, 2)}** | ${r.rest.p99} / ${r.mcp.p99} | ${fmt(r.rest.cpuUs)} / ${fmt(r.mcp.cpuUs)} |`,
);
const md = [
  `# MCP beside REST (${new Date().toISOString()})`,
  '',
  `Machine: ${await machineWithCosts()}. Server: ${path.relative(ROOT, SERVER)} (built from ${sourceOf(['src'])}), INBOX_ROLES=api.`,
  `Median of ${opts.runs} runs per door, ${opts.duration} s each after ${opts.warmup} s of warm-up, ${opts.connections} connections, alternating; SQLite send runs each start from the same copy of the database. Target: MCP ÷ REST ≥ 0.8.`,
  '',
  '| Database | Scenario | REST req/s | MCP req/s | MCP ÷ REST | p99 ms REST / MCP | server µs CPU per request REST / MCP |',
  '|---|---|--:|--:|--:|--:|--:|',
  ...rows,
  '',
].join('\n');
writeResults(stamp, { opts, results }, md);
rmSync(path.join(RESULTS, '.dist-snapshot-mcp'), { recursive: true, force: true });
