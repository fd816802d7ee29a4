import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { prng } from './lib/prng.mjs';

/**
 * `npm run bench:search`: full-text search (issue 10 §3) over ONE inbox of 1,000,000 messages
 * (in 200,000 threads), on SQLite and, when BENCH_POSTGRES_URL or TEST_POSTGRES_URL is set, on
 * PostgreSQL (schema bench_search). The server is the build under test (dist/), started in this
 * process on a loopback port; every request goes through HTTP (fetch). Queries are sequential:
 * latency, not throughput. Beside each scenario the baseline runs what a search without an index
 * would: the same words as LIKE '%word%' over subject and text, newest first, LIMIT 50, straight in
 * SQL (fewer samples: it is slow). The seeded database is kept (bench/results/.search-*) and reused
 * by the next run with the same --messages. The run stops by itself.
 * Options: --messages 1000000 --samples 40 --baseline-samples 3 --fresh (re-seed), --seed-only (seed
 * and stop: seeding needs no quiet machine, so it can run outside /tmp/bench.lock).
 */

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const { values: args } = parseArgs({
  options: {
    messages: { type: 'string' },
    samples: { type: 'string' },
    'baseline-samples': { type: 'string' },
    fresh: { type: 'boolean' },
    'seed-only': { type: 'boolean' },
  },
});
const N = Number(args.messages ?? process.env.BENCH_MESSAGES ?? 1_000_000);
const SAMPLES = Number(args.samples ?? 40);
const BASELINE_SAMPLES = Number(args['baseline-samples'] ?? 3);
const PER_THREAD = 5;
const DOMAIN = 'inbox.localhost';
const RESULTS = path.join(ROOT, 'bench', 'results');
mkdirSync(RESULTS, { recursive: true });

const from = (file) => import(pathToFileURL(path.join(ROOT, 'dist', 'src', file)).href);
const [service, configMod, configSpec, text] = await Promise.all(
  ['inbox/service.js', 'platform/config/config.js', 'inbox/inbox.config.js', 'inbox/core/search-text.js'].map(from),
);

// --- the data: deterministic, a Zipf-like vocabulary (a few very common words, many rare ones) ---
const random = prng(20261124);
const syllables = [
  'ka',
  'lo',
  'mi',
  're',
  'tu',
  'sa',
  'ne',
  'vo',
  'di',
  'pa',
  'ru',
  'shi',
  'ten',
  'bor',
  'gal',
  'fin',
  'mar',
  'quo',
  'zel',
  'wyn',
];
const VOCAB = Array.from({ length: 20_000 }, (_, i) => {
  let w = '';
  let n = i + 7;
  do {
    w += syllables[n % syllables.length];
    n = Math.floor(n / syllables.length);
  } while (n > 0);
  return w;
});
// Zipf (s = 1) by inverse CDF on precomputed cumulative weights.
const cumulative = [];
let total = 0;
for (let i = 0; i < VOCAB.length; i++) cumulative.push((total += 1 / (i + 1)));
const zipf = () => {
  const x = random() * total;
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return VOCAB[lo];
};
const pick = (list) => list[Math.floor(random() * list.length)];
const FIRST = [
  'anna',
  'ben',
  'clara',
  'david',
  'elif',
  'felix',
  'greta',
  'hannah',
  'ivan',
  'jonas',
  'karin',
  'lukas',
  'mia',
  'noah',
  'olga',
  'paul',
];
const LAST = [
  'albrecht',
  'becker',
  'costa',
  'dietrich',
  'engel',
  'fischer',
  'garcia',
  'hoffmann',
  'ivanova',
  'jansen',
  'keller',
  'lange',
  'meyer',
  'nowak',
  'ortiz',
  'peters',
];
const people = Array.from(
  { length: 2000 },
  (_, i) =>
    `${pick(FIRST)}.${pick(LAST)}${i}@${pick(['acme.example', 'brightwave.example', 'nordlicht.example', 'mail.example'])}`,
);
const TOPICS = ['invoice', 'delivery', 'refund', 'contract', 'password', 'webhook', 'export', 'subscription'];
const START = Date.UTC(2025, 0, 1);

function* messages(support) {
  for (let i = 0; i < N; i++) {
    const person = people[Math.floor(random() * people.length)];
    const inbound = random() < 0.7;
    const words = Array.from({ length: 15 + Math.floor(random() * 45) }, zipf);
    yield {
      pk: i + 1,
      thread: Math.floor(i / PER_THREAD),
      subject: `${pick(TOPICS)} ${zipf()} ${zipf()} #${Math.floor(random() * 100000)}`,
      from: inbound ? person : support,
      to: [inbound ? support : person],
      text: words.join(' '),
      timestamp: new Date(START + i * 30_000).toISOString(),
    };
  }
}

function docOf(m) {
  return text.messageDocument({
    subject: m.subject,
    from: m.from,
    to: m.to,
    cc: [],
    bcc: [],
    replyTo: [],
    text: m.text,
    html: null,
    attachments: [],
  });
}

// --- seeding, per dialect, in bulk --------------------------------------------------------------

function config(url, dataDir) {
  return configMod.loadConfig(configSpec.inboxConfigSpec, {
    LOG_LEVEL: 'warn',
    INBOX_DATABASE_URL: url,
    DATA_DIR: dataDir,
    INBOX_DOMAINS: DOMAIN,
    INBOX_ROLES: 'api',
    INBOX_PORT: '0',
    INBOX_RATE_LIMIT_PER_MINUTE: '10000000',
  });
}

/** Organization, key and the inbox through the service; returns what the rows need. */
async function prepare(url, dataDir) {
  const database = await service.openInboxDatabase(config(url, dataDir));
  await service.migrateInbox(database);
  const { services } = service.createInboxServices(config(url, dataDir), database.db, {
    log: { warn() {}, error() {} },
  });
  const key = await services.apiKeys.createKey({ name: 'bench' });
  const owner = { apiKeyId: key.apiKeyId, organizationId: key.organizationId };
  const inbox = (await services.inboxes.create(owner, { username: 'support', displayName: 'Support Agent' })).inbox;
  await database.destroy();
  return { key: key.key, organizationId: owner.organizationId, podId: inbox.podId, inboxId: inbox.inboxId };
}

async function seedSqlite(file, dataDir) {
  for (const s of ['', '-wal', '-shm']) rmSync(file + s, { force: true });
  const owner = await prepare(`sqlite:${file}`, dataDir);
  const db = new Sqlite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insMessage =
    db.prepare(`insert into messages (id, organization_id, inbox_id, thread_id, message_id, labels, timestamp, from_address, to_addresses, subject, preview, text_body, size, created_at, updated_at)
    values (?, ?, ?, ?, ?, '["received"]', ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const insLabel = db.prepare(`insert into message_labels (message_pk, label) values (?, 'received')`);
  const insThread =
    db.prepare(`insert into threads (id, thread_id, organization_id, inbox_id, subject, normalized_subject, senders, recipients, labels, message_count, size, preview, last_message_id, timestamp, created_at, updated_at)
    values (?, ?, ?, ?, ?, ?, ?, ?, '["received"]', ?, ?, ?, ?, ?, ?, ?)`);
  const insDoc = db.prepare(
    'insert into message_search (rowid, scope, subject, addresses, body) values (?, ?, ?, ?, ?)',
  );
  const insThreadDoc = db.prepare(
    'insert into thread_search (rowid, scope, subject, addresses, body, thread_id) values (?, ?, ?, ?, ?, ?)',
  );
  const scope = [
    text.scopeWord('o', owner.organizationId),
    text.scopeWord('p', owner.podId),
    text.scopeWord('i', owner.inboxId),
  ].join(' ');
  let batch = [];
  const flush = db.transaction((rows) => {
    for (const { m, doc, thread } of rows) {
      insMessage.run(
        m.pk,
        owner.organizationId,
        owner.inboxId,
        thread.thread_id,
        `<m${m.pk}@bench.example>`,
        m.timestamp,
        m.from,
        JSON.stringify(m.to),
        m.subject,
        m.text.slice(0, 200),
        m.text,
        m.text.length + 300,
        m.timestamp,
        m.timestamp,
      );
      insLabel.run(m.pk);
      insDoc.run(m.pk, scope, text.joinWords(doc.subject), text.joinWords(doc.addresses), text.joinWords(doc.body));
      if (thread.last) {
        insThread.run(
          m.thread + 1,
          thread.thread_id,
          owner.organizationId,
          owner.inboxId,
          m.subject,
          m.subject,
          JSON.stringify([m.from]),
          JSON.stringify(m.to),
          thread.count,
          thread.count * 500,
          m.text.slice(0, 200),
          `<m${m.pk}@bench.example>`,
          m.timestamp,
          thread.createdAt,
          m.timestamp,
        );
        const d = thread.doc;
        insThreadDoc.run(
          m.pk,
          `${scope} ${text.threadWord(thread.thread_id)}`,
          text.joinWords(d.subject),
          text.joinWords(d.addresses),
          text.joinWords(d.body),
          thread.thread_id,
        );
      }
    }
  });
  await eachMessage(owner, (row) => {
    batch.push(row);
    if (batch.length >= 10_000) {
      flush(batch);
      batch = [];
    }
  });
  flush(batch);
  db.exec(
    `insert into message_search(message_search) values ('optimize'); insert into thread_search(thread_search) values ('optimize'); analyze;`,
  );
  db.close();
  return owner;
}

/** Every message with its document and, on the last message of a thread, the thread's document. */
async function eachMessage(owner, visit) {
  let docs = [];
  let createdAt;
  for (const m of messages(owner.inboxId)) {
    const doc = docOf(m);
    if (m.pk % PER_THREAD === 1) {
      docs = [];
      createdAt = m.timestamp;
    }
    docs.push(doc);
    const last = m.pk % PER_THREAD === 0 || m.pk === N;
    const thread = {
      thread_id: `00000000-0000-7000-8000-${String(m.thread).padStart(12, '0')}`,
      last,
      count: docs.length,
      createdAt,
      doc: last ? text.mergeDocuments(docs) : undefined,
    };
    visit({ m, doc, thread });
  }
}

async function seedPostgres(url, dataDir) {
  const schema = new URL(url).searchParams.get('schema');
  const admin = new pg.Client({ connectionString: url.replace(/[?&]schema=[^&]*/, '') });
  await admin.connect();
  await admin.query(`drop schema if exists ${schema} cascade`);
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const owner = await prepare(url, dataDir);
  const client = new pg.Client({ connectionString: url.replace(/[?&]schema=[^&]*/, '') });
  await client.connect();
  await client.query(`set search_path to ${schema}`);
  await client.query('set synchronous_commit = off');
  // Bulk load: the GIN indexes are built once at the end instead of row by row.
  const gins = (
    await client.query(`select indexname, indexdef from pg_indexes where schemaname = $1 and indexname like '%_gin'`, [
      schema,
    ])
  ).rows;
  for (const g of gins) await client.query(`drop index ${g.indexname}`);
  let rows = [];
  const flush = async () => {
    if (!rows.length) return;
    const col = (f) => rows.map(f);
    await client.query('begin');
    await client.query(
      `insert into threads (id, thread_id, organization_id, inbox_id, subject, normalized_subject, senders, recipients, labels, message_count, size, preview, last_message_id, timestamp, created_at, updated_at)
       select * from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::int[], $11::text[], $12::text[], $13::text[], $14::text[], $13::text[])`,
      (() => {
        const t = rows.filter((r) => r.thread.last);
        return [
          t.map((r) => r.m.thread + 1),
          t.map((r) => r.thread.thread_id),
          t.map(() => owner.organizationId),
          t.map(() => owner.inboxId),
          t.map((r) => r.m.subject),
          t.map((r) => JSON.stringify([r.m.from])),
          t.map((r) => JSON.stringify(r.m.to)),
          t.map(() => '["received"]'),
          t.map((r) => r.thread.count),
          t.map((r) => r.thread.count * 500),
          t.map((r) => r.m.text.slice(0, 200)),
          t.map((r) => `<m${r.m.pk}@bench.example>`),
          t.map((r) => r.m.timestamp),
          t.map((r) => r.thread.createdAt),
        ];
      })(),
    );
    await client.query(
      `insert into messages (id, organization_id, inbox_id, thread_id, message_id, labels, timestamp, from_address, to_addresses, subject, preview, text_body, size, created_at, updated_at)
       select id, $2, $3, tid, mid, '["received"]', ts, f, t, s, p, b, sz, ts, ts from unnest($1::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int[]) as u(id, tid, mid, ts, f, t, s, p, b, sz)`,
      [
        col((r) => r.m.pk),
        owner.organizationId,
        owner.inboxId,
        col((r) => r.thread.thread_id),
        col((r) => `<m${r.m.pk}@bench.example>`),
        col((r) => r.m.timestamp),
        col((r) => r.m.from),
        col((r) => JSON.stringify(r.m.to)),
        col((r) => r.m.subject),
        col((r) => r.m.text.slice(0, 200)),
        col((r) => r.m.text),
        col((r) => r.m.text.length + 300),
      ],
    );
    await client.query(`insert into message_labels (message_pk, label) select unnest($1::bigint[]), 'received'`, [
      col((r) => r.m.pk),
    ]);
    await client.query(
      `insert into message_search (message_pk, organization_id, pod_id, inbox_id, subject, addresses, document)
       select pk, $2, $3, $4, array_to_tsvector(string_to_array(s, ' ')), array_to_tsvector(string_to_array(a, ' ')), array_to_tsvector(string_to_array(d, ' '))
       from unnest($1::bigint[], $5::text[], $6::text[], $7::text[]) as u(pk, s, a, d)`,
      [
        col((r) => r.m.pk),
        owner.organizationId,
        owner.podId,
        owner.inboxId,
        col((r) => text.joinWords(r.doc.subject)),
        col((r) => text.joinWords(r.doc.addresses)),
        col((r) => text.joinWords([...r.doc.subject, ...r.doc.addresses, ...r.doc.body])),
      ],
    );
    const t = rows.filter((r) => r.thread.last);
    await client.query(
      `insert into thread_search (thread_id, rank_pk, organization_id, pod_id, inbox_id, subject_words, address_words, body_words, subject, addresses, document)
       select tid, pk, $3, $4, $5, s, a, b, array_to_tsvector(string_to_array(s, ' ')), array_to_tsvector(string_to_array(a, ' ')), array_to_tsvector(string_to_array(s, ' ') || string_to_array(a, ' ') || string_to_array(b, ' '))
       from unnest($1::text[], $2::bigint[], $6::text[], $7::text[], $8::text[]) as u(tid, pk, s, a, b)`,
      [
        t.map((r) => r.thread.thread_id),
        t.map((r) => r.m.pk),
        owner.organizationId,
        owner.podId,
        owner.inboxId,
        t.map((r) => text.joinWords(r.thread.doc.subject)),
        t.map((r) => text.joinWords(r.thread.doc.addresses)),
        t.map((r) => text.joinWords(r.thread.doc.body)),
      ],
    );
    await client.query('commit');
    rows = [];
  };
  const pending = [];
  await eachMessage(owner, (row) => pending.push(row));
  for (let i = 0; i < pending.length; i += 5000) {
    rows = pending.slice(i, i + 5000);
    await flush();
  }
  pending.length = 0;
  await client.query(`set maintenance_work_mem = '512MB'`);
  for (const g of gins) await client.query(g.indexdef);
  await client.query(
    `select setval(pg_get_serial_sequence('messages', 'id'), ${N + 1}), setval(pg_get_serial_sequence('threads', 'id'), ${Math.ceil(N / PER_THREAD) + 1})`,
  );
  await client.query('vacuum analyze');
  await client.end();
  return owner;
}

// --- measuring ---------------------------------------------------------------------------------

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const ms = (v) => v.toFixed(1);

async function timeIt(fn, samples) {
  await fn(); // warm-up
  const out = [];
  for (let i = 0; i < samples; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

/** Query scenarios: words of every frequency, prefixes, several words, addresses, paging. */
function scenarios(owner) {
  const inbox = encodeURIComponent(owner.inboxId);
  const q = (path) => `${path}${path.includes('?') ? '&' : '?'}`;
  return [
    ['common word (rank 1)', `/v0/inboxes/${inbox}/messages/search?q=${VOCAB[0]}`, [VOCAB[0]]],
    ['medium word (rank 100)', `/v0/inboxes/${inbox}/messages/search?q=${VOCAB[99]}`, [VOCAB[99]]],
    ['rare word (rank 15000)', `/v0/inboxes/${inbox}/messages/search?q=${VOCAB[14999]}`, [VOCAB[14999]]],
    ['two medium words', `/v0/inboxes/${inbox}/messages/search?q=${VOCAB[50]}+${VOCAB[120]}`, [VOCAB[50], VOCAB[120]]],
    [
      'prefix, 3 letters',
      `/v0/inboxes/${inbox}/messages/search?q=${VOCAB[300].slice(0, 3)}*`,
      [VOCAB[300].slice(0, 3)],
    ],
    ['subject topic word', `/v0/inboxes/${inbox}/messages/search?q=refund`, ['refund']],
    [
      'sender address',
      `/v0/inboxes/${inbox}/messages/search?q=${encodeURIComponent(people[17])}`,
      [people[17].split('@')[0]],
    ],
    ['no match', `/v0/inboxes/${inbox}/messages/search?q=zzzqqq`, ['zzzqqq']],
    ['threads: medium word', `/v0/inboxes/${inbox}/threads/search?q=${VOCAB[99]}`, null],
    ['threads: organization, two words', `/v0/threads/search?q=${VOCAB[50]}+${VOCAB[120]}`, null],
  ].map(([name, path, like]) => ({ name, path: q(path).slice(0, -1), like }));
}

async function run(dialect, url, dataDir, seed) {
  const started = performance.now();
  const owner = await seed();
  const seedSeconds = (performance.now() - started) / 1000;
  if (args['seed-only']) return { dialect, seedSeconds, rows: [] };
  const running = await service.startInboxService(config(url, dataDir));
  const headers = { authorization: `Bearer ${owner.key}` };
  const rows = [];
  try {
    for (const s of scenarios(owner)) {
      let count = 0;
      let nextPath;
      const times = await timeIt(async () => {
        const res = await fetch(running.url + s.path, { headers });
        if (res.status !== 200) throw new Error(`${s.path}: ${res.status} ${await res.text()}`);
        const body = await res.json();
        count = body.count;
        nextPath = body.next_page_token ? `${s.path}&page_token=${body.next_page_token}` : undefined;
      }, SAMPLES);
      const row = { name: s.name, count, p50: pct(times, 50), p99: pct(times, 99), max: times[times.length - 1] };
      if (nextPath) {
        const page2 = await timeIt(
          async () => {
            const res = await fetch(running.url + nextPath, { headers });
            if (res.status !== 200) throw new Error(`${nextPath}: ${res.status}`);
          },
          Math.max(5, Math.floor(SAMPLES / 4)),
        );
        row.page2p99 = pct(page2, 99);
      }
      if (s.like && BASELINE_SAMPLES > 0) row.baseline = await baseline(running.database, s.like, owner);
      rows.push(row);
      console.log(
        `  ${dialect} ${s.name}: ${row.count} hits, p50 ${ms(row.p50)} ms, p99 ${ms(row.p99)} ms${row.baseline ? `, LIKE scan p50 ${ms(row.baseline)} ms` : ''}`,
      );
    }
  } finally {
    await running.close();
  }
  return { dialect, seedSeconds, rows };
}

/** The unindexed alternative: LIKE over subject and body, newest first, one page. */
async function baseline(database, words, owner) {
  const { sql } = await import('kysely');
  const db = database.db;
  const cond = sql.join(
    words.map(
      (w) =>
        sql`(lower(subject) like ${`%${w}%`} or lower(text_body) like ${`%${w}%`} or lower(from_address) like ${`%${w}%`})`,
    ),
    sql` and `,
  );
  const times = await timeIt(
    () =>
      sql`select id from messages where inbox_id = ${owner.inboxId} and ${cond} order by id desc limit 51`.execute(db),
    BASELINE_SAMPLES,
  );
  return pct(times, 50);
}

const uptime = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const results = [];
const dataDir = path.join(RESULTS, '.search-data');
mkdirSync(dataDir, { recursive: true });
console.log(`search bench: ${N} messages in one inbox, ${SAMPLES} samples per scenario; load ${uptime()}`);
const sqliteFile = path.join(RESULTS, `.search-${N}.sqlite`);
results.push(
  await run('sqlite', `sqlite:${sqliteFile}`, dataDir, async () => {
    if (!args.fresh && existsSync(sqliteFile)) {
      const db = new Sqlite(sqliteFile, { readonly: true });
      const key = db.prepare('select 1 from messages where id = ?').get(N);
      db.close();
      if (key && existsSync(`${sqliteFile}.owner.json`))
        return JSON.parse((await import('node:fs')).readFileSync(`${sqliteFile}.owner.json`, 'utf8'));
    }
    const owner = await seedSqlite(sqliteFile, dataDir);
    (await import('node:fs')).writeFileSync(`${sqliteFile}.owner.json`, JSON.stringify(owner));
    return owner;
  }),
);
const pgUrl = process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL;
if (pgUrl) {
  const url = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}schema=bench_search`;
  const ownerFile = path.join(RESULTS, `.search-${N}.postgres.owner.json`);
  results.push(
    await run('postgres', url, dataDir, async () => {
      const fs = await import('node:fs');
      if (!args.fresh && fs.existsSync(ownerFile)) {
        const client = new pg.Client({ connectionString: pgUrl });
        await client.connect();
        const ok = await client.query('select 1 from bench_search.messages where id = $1', [N]).then(
          (r) => r.rowCount === 1,
          () => false,
        );
        await client.end();
        if (ok) return JSON.parse(fs.readFileSync(ownerFile, 'utf8'));
      }
      const owner = await seedPostgres(url, dataDir);
      fs.writeFileSync(ownerFile, JSON.stringify(owner));
      return owner;
    }),
  );
}

console.log(`\nload after: ${uptime()}  (${os.cpus().length} CPUs, ${os.cpus()[0]?.model ?? ''})\n`);
for (const r of results) {
  console.log(`### ${r.dialect}: ${N} messages (seed ${r.seedSeconds.toFixed(0)} s, reused if 0)\n`);
  console.log('| scenario | hits (page) | p50 ms | p99 ms | max ms | page 2 p99 ms | LIKE scan p50 ms | ratio |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const row of r.rows)
    console.log(
      `| ${row.name} | ${row.count} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.max)} | ${row.page2p99 !== undefined ? ms(row.page2p99) : '–'} | ${row.baseline !== undefined ? ms(row.baseline) : '–'} | ${row.baseline !== undefined ? `${(row.baseline / row.p50).toFixed(0)}×` : '–'} |`,
    );
  const all = r.rows.map((x) => x.p99);
  console.log(`\nworst p99: ${ms(Math.max(...all))} ms (target < 100 ms)\n`);
}
process.exit(0);
