import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { fetchRaw, loggingKysely } from './check.mjs';
import { PLAN, sendBatch, statement } from './baseline/inbox-sql.mjs';

/**
 * Guards that make the inbox comparison fair, run before each scenario is measured:
 * (1) the server and the limit run the statements of inbox-sql.mjs's plan, in order (the server
 *     through `inject()` on a Kysely that logs, the limit as it records them with BENCH_SQL_LOG=1);
 *     on SQLite also two concurrent sends, which must share one group commit with a savepoint
 *     each, or commit one after the other, in both;
 * (2) both answer the same: reads with the same status, headers and body bytes; sends with the
 *     same status, headers and JSON keys (the ids differ);
 * (3) sends write the same rows: messages, threads, labels, events, webhook jobs and search
 *     documents, compared after normalising keys, ids and times.
 */

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;

function firstDifference(what, a, b) {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  const around = (s) => JSON.stringify(s.slice(Math.max(0, i - 80), i + 80));
  return new Error(`${what} differ at offset ${i}:\n  server: ${around(a)}\n  limit:  ${around(b)}`);
}

/** The statements of the scenario's request(s), as the built server runs them (inject, logging Kysely). */
async function serverStatements({ main, dialect, url, env, requests }) {
  const load = (file) => import(pathToFileURL(path.join(path.dirname(main), file)).href);
  const [{ buildInboxApp }, { createInboxServices }, { loadConfig }, { inboxConfigSpec }] = await Promise.all([
    load('app.js'),
    load('service.js'),
    load('../platform/config/config.js'),
    load('inbox.config.js'),
  ]);
  const issued = [];
  const db = loggingKysely(dialect, url, (event) => issued.push(event.query.sql));
  const config = loadConfig(inboxConfigSpec, env);
  const { services } = createInboxServices(config, db, { log: { warn() {}, error() {} } });
  const app = await buildInboxApp(services, { ping: async () => {} });
  try {
    const responses = await Promise.all(
      requests.map((r) => app.inject({ method: r.method, url: r.path, headers: r.headers, payload: r.body })),
    );
    for (const res of responses)
      if (res.statusCode >= 300) throw new Error(`the inbox app answered ${res.statusCode}: ${res.body}`);
  } finally {
    await app.close();
    await db.destroy();
  }
  return issued;
}

/** The statements the limit ran for the request(s), sent at once over separate connections. */
async function limitStatements({ serve, requests }) {
  return serve('baseline', { BENCH_SQL_LOG: '1' }, async (port) => {
    const responses = await Promise.all(requests.map((r) => fetchRaw(port, r)));
    for (const res of responses)
      if (res.status >= 300) throw new Error(`the limit answered ${res.status}: ${res.body}`);
    return JSON.parse((await fetchRaw(port, { method: 'GET', path: '/__sql', headers: {} })).body);
  });
}

/** Whether `issued` is `expected` (names of inbox-sql.mjs) in the dialect. */
const same = (dialect, issued, expected) =>
  JSON.stringify(issued) === JSON.stringify(expected.map((name) => statement(dialect, name)));

/**
 * Two sends at once: each authenticates and reads its sending inbox outside any transaction
 * (whenever it arrives), then either both share a group commit (a savepoint each) or each commits
 * alone. Returns the form seen.
 */
function pairForm(dialect, issued) {
  const outside = [statement(dialect, 'auth'), statement(dialect, 'inbox')];
  const rest = issued.filter((s) => !outside.includes(s));
  if (issued.length - rest.length !== 4) return undefined;
  if (same(dialect, rest, sendBatch(2, dialect))) return 'one group commit';
  if (same(dialect, rest, [...sendBatch(1, dialect), ...sendBatch(1, dialect)])) return 'two commits';
  return undefined;
}

export async function checkInboxSql({ main, dialect, url, env, scenario, serve }) {
  const plan = scenario.plan === 'send' ? ['auth', 'inbox', ...sendBatch(1, dialect)] : PLAN[scenario.plan];
  const show = (list) => list.join('\n  ');
  for (const [who, issued] of [
    ['server', await serverStatements({ main, dialect, url, env, requests: [scenario.request] })],
    ['limit', await limitStatements({ serve, requests: [scenario.request] })],
  ]) {
    if (!same(dialect, issued, plan))
      throw new Error(
        `${dialect} ${scenario.name}: the ${who}'s SQL differs from the plan.\n${who}:\n  ${show(issued)}\nplan:\n  ${show(plan.map((n) => statement(dialect, n)))}`,
      );
  }
  if (scenario.plan !== 'send' || dialect !== 'sqlite') return undefined;
  const pair = [scenario.request, scenario.request];
  const forms = {};
  for (const [who, issued] of [
    ['server', await serverStatements({ main, dialect, url, env, requests: pair })],
    ['limit', await limitStatements({ serve, requests: pair })],
  ]) {
    forms[who] = pairForm(dialect, issued);
    if (!forms[who])
      throw new Error(
        `${dialect} ${scenario.name}: two concurrent sends on the ${who} ran neither one group commit nor two commits:\n  ${show(issued)}`,
      );
  }
  return forms;
}

function normalizedHeaders(response) {
  return response.headers
    .map(([name, value]) => {
      if (name === 'date') return [name, '(date)'];
      if (name === 'x-request-id') return [name, /^[0-9a-f-]{36}$/.test(value) ? '(uuid)' : value];
      if (name === 'ratelimit-remaining' || name === 'ratelimit-reset')
        return [name, /^\d+$/.test(value) ? '(n)' : value];
      return [name, value];
    })
    .map((h) => h.join(': '))
    .join('\n');
}

/** The body of a send with its ids replaced by their shapes. */
function sendShape(body) {
  const parsed = JSON.parse(body);
  return JSON.stringify(
    Object.fromEntries(
      Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v.replace(UUID, '(uuid)') : v]),
    ),
  );
}

/** Same status and headers; reads the same body bytes, sends the same JSON keys and id shapes. Returns the bodies. */
export async function checkInboxAnswers({ name, serve, request, read }) {
  const ours = await serve('ours', {}, (port) => fetchRaw(port, request));
  const limit = await serve('baseline', {}, (port) => fetchRaw(port, request));
  if (ours.status !== limit.status)
    throw new Error(`${name}: status ${ours.status} (server) vs ${limit.status} (limit): ${limit.body}`);
  const [oh, lh] = [normalizedHeaders(ours), normalizedHeaders(limit)];
  if (oh !== lh) throw firstDifference(`${name}: the headers`, oh, lh);
  const [ob, lb] = read ? [ours.body, limit.body] : [sendShape(ours.body), sendShape(limit.body)];
  if (ob !== lb) throw firstDifference(`${name}: the bodies`, ob, lb);
  return { ours, limit, bytes: Buffer.byteLength(ours.body) };
}

function openReader(dialect, url) {
  if (dialect === 'sqlite') {
    const db = new Sqlite(url.replace(/^sqlite:/, ''), { readonly: true });
    return { all: async (text, params) => db.prepare(text).all(params), close: async () => db.close() };
  }
  const u = new URL(url);
  const schema = u.searchParams.get('schema');
  u.searchParams.delete('schema');
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  const pool = new pg.Pool({
    connectionString: u.toString(),
    max: 1,
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  });
  let n = 0;
  const numbered = (text) => text.replace(/\?/g, () => `$${++n}`);
  return {
    all: async (text, params) => {
      n = 0;
      return (await pool.query(numbered(text), params)).rows;
    },
    close: () => pool.end(),
  };
}

/**
 * The search documents of the copies and their threads (search.repository.ts): FTS5 rows on
 * SQLite, tsvector rows on PostgreSQL; keys as `message_pk`, so that they are normalised like
 * the labels'.
 */
async function searchRowsOf(reader, dialect, pks, threadIds) {
  const inList = (n) => Array.from({ length: n }, () => '?').join(', ');
  if (dialect === 'sqlite') {
    return {
      message_search: await reader.all(
        `select rowid as message_pk, scope, subject, addresses, body from message_search where rowid in (${inList(pks.length)}) order by rowid`,
        pks,
      ),
      thread_search: await reader.all(
        `select rowid as message_pk, scope, subject, addresses, body, thread_id from thread_search where thread_id in (${inList(threadIds.length)}) order by rowid`,
        threadIds,
      ),
    };
  }
  return {
    message_search: await reader.all(
      `select message_pk, organization_id, pod_id, inbox_id, subject::text, addresses::text, document::text from message_search where message_pk in (${inList(pks.length)}) order by message_pk`,
      pks,
    ),
    thread_search: await reader.all(
      `select rank_pk as message_pk, thread_id, organization_id, pod_id, inbox_id, subject_words, address_words, body_words, subject::text, addresses::text, document::text from thread_search where thread_id in (${inList(threadIds.length)}) order by rank_pk`,
      threadIds,
    ),
  };
}

/** Every row one send wrote (but the day's counter and the usage counts), with keys, ids and times normalised. */
async function writtenBy(reader, dialect, messageId) {
  const inList = (n) => Array.from({ length: n }, () => '?').join(', ');
  const messages = await reader.all('select * from messages where message_id = ? order by id', [messageId]);
  const pks = messages.map((m) => Number(m.id));
  const threadIds = messages.map((m) => m.thread_id);
  const threads = await reader.all(
    `select * from threads where thread_id in (${inList(threadIds.length)}) order by id`,
    threadIds,
  );
  const labels = await reader.all(
    `select message_pk, label from message_labels where message_pk in (${inList(pks.length)}) order by message_pk, label`,
    pks,
  );
  const events = await reader.all('select * from events where payload like ? order by event_type', [`%${messageId}%`]);
  const eventIds = events.map((e) => e.event_id);
  const jobs = eventIds.length
    ? await reader.all(
        `select * from jobs where ${eventIds.map(() => 'payload like ?').join(' or ')} order by id`,
        eventIds.map((id) => `%${id}%`),
      )
    : [];
  const rows = { messages, threads, labels, events, jobs, ...(await searchRowsOf(reader, dialect, pks, threadIds)) };
  const value = (key, v) => {
    if (key === 'id') return '(id)';
    if (key === 'message_pk') return `(message ${pks.indexOf(Number(v))})`;
    if (Buffer.isBuffer(v) || v instanceof Uint8Array)
      v = Buffer.from(v)
        .toString('latin1')
        .replace(/^Date: .*$/m, 'Date: (date)');
    if (typeof v === 'boolean') v = Number(v);
    // Thread ids also appear as one word in the FTS5 scope (search-text.ts threadWord).
    return typeof v === 'string'
      ? v
          .replace(ISO, '(time)')
          .replace(UUID, '(uuid)')
          .replace(/evt_[0-9a-f]{32}/g, 'evt_(id)')
          .replace(/\bt[0-9a-f]{32}\b/g, 't(thread)')
      : v;
  };
  return JSON.stringify(
    Object.fromEntries(
      Object.entries(rows).map(([table, list]) => [
        table,
        list.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, value(k, v)]))),
      ]),
    ),
    null,
    1,
  );
}

/** The rows the two sends of checkInboxAnswers wrote must be the same. */
export async function checkInboxWrites({ name, dialect, url, ours, limit }) {
  const reader = openReader(dialect, url);
  try {
    const [o, l] = [
      await writtenBy(reader, dialect, JSON.parse(ours.body).message_id),
      await writtenBy(reader, dialect, JSON.parse(limit.body).message_id),
    ];
    if (!JSON.parse(o).messages.length) throw new Error(`${name}: found no rows of the server's send`);
    if (o !== l) throw firstDifference(`${name}: the rows written`, o, l);
    const counts = JSON.parse(o);
    return Object.fromEntries(Object.entries(counts).map(([table, list]) => [table, list.length]));
  } finally {
    await reader.close();
  }
}
