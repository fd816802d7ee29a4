import { createHash, randomInt, randomUUID } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import { URLSearchParams } from 'node:url';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { HIDDEN_LABELS, statement } from './inbox-sql.mjs';

/**
 * The limit for the inbox server's benchmark scenarios: a minimal node:http program that runs the
 * same statements (inbox-sql.mjs) on the same database with the same settings (SQLite: WAL,
 * synchronous = FULL, the same pragmas, sends committed in groups with a savepoint per send;
 * PostgreSQL: a pool of 10, one transaction per send), and answers with the same bytes (reads)
 * or the same status, headers and JSON keys (sends), writing the same rows. It knows only the
 * benchmark requests: listing an inbox's messages newest first, and sending a plain-text message
 * (ASCII, short lines, no cc, bcc, reply-to, headers or attachments) to local inboxes. It
 * validates almost nothing.
 *
 * Env: BASELINE_DATABASE_URL (`sqlite:/file.db` or `postgres://…?schema=name`), PORT, HOST,
 * INBOX_DOMAINS, INBOX_RATE_LIMIT_PER_MINUTE, INBOX_SEND_LIMIT_PER_DAY, INBOX_DATABASE_POOL_SIZE
 * (as the server reads them); BENCH_SQL_LOG=1 records the statements run, served at GET /__sql.
 */

const env = process.env;
const DOMAINS = (env.INBOX_DOMAINS ?? 'inbox.localhost').split(',').map((d) => d.trim().toLowerCase());
const RATE_LIMIT = Number(env.INBOX_RATE_LIMIT_PER_MINUTE ?? 1000);
const SEND_LIMIT = Number(env.INBOX_SEND_LIMIT_PER_DAY ?? 10_000);
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;
const MAX_BATCH = 200;
const MAX_WAIT_MS = 4;
/** usage.repository.ts USAGE_SHARDS: a unit adds its counts on one shard picked at random. */
const USAGE_SHARDS = 8;
/** The longest text the limit indexes: far below the search document's budget, which it does not implement. */
const MAX_TEXT = 8192;
const sqlLog = env.BENCH_SQL_LOG === '1' ? [] : undefined;

// ---------------------------------------------------------------------------------------------
// Database: q(name, params) resolves to rows; unit(work) runs work(q) in a transaction.

function openSqlite(file) {
  const db = new Sqlite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // database.ts SQLITE_CACHE_KIB.
  db.pragma('cache_size = -32768');
  // database.ts SQLITE_TEMP_STORE.
  db.pragma('temp_store = MEMORY');
  const statements = new Map();
  const q = (name, params = []) => {
    let stmt = statements.get(name);
    if (!stmt) {
      const text = statement('sqlite', name);
      sqlLog?.push(text);
      stmt = db.prepare(text);
      statements.set(name, stmt);
    } else if (sqlLog) sqlLog.push(statement('sqlite', name));
    if (stmt.reader) return stmt.all(params);
    stmt.run(params);
    return [];
  };

  // Group commit, as the server's platform/db/group-commit.ts: sends share one transaction (one
  // fsync), each inside its own savepoint, and what they defer (afterUnits) runs after the last;
  // a batch starts once a turn of the event loop passes without a new send, at most MAX_WAIT_MS
  // after the first.
  const queue = [];
  let draining = false;
  async function runBatch() {
    q('begin');
    const batch = queue.splice(0, MAX_BATCH);
    const outcomes = [];
    // Writes a unit defers (group-commit.ts afterUnits) run after every unit of the batch.
    const deferred = [];
    if (batch.length === 1) {
      try {
        const own = [];
        outcomes.push({ ok: true, value: await batch[0].work(q, (write) => own.push(write)) });
        for (const write of own) await write(false);
      } catch (error) {
        q('rollback');
        batch[0].reject(error);
        return;
      }
    } else {
      for (const [i, item] of batch.entries()) {
        const name = `unit_${i}`;
        q(`savepoint:${name}`);
        const own = [];
        try {
          const value = await item.work(q, (write) => own.push(write));
          q(`release:${name}`);
          outcomes.push({ ok: true, value });
          deferred.push(...own);
        } catch (error) {
          q(`rollbackTo:${name}`);
          q(`release:${name}`);
          outcomes.push({ ok: false, error });
        }
      }
      // The benchmark's deferred writes do not fail; the server's fallback (each unit again alone) is left out.
      for (const write of deferred) await write(true);
    }
    q('commit');
    batch.forEach((item, i) => (outcomes[i].ok ? item.resolve(outcomes[i].value) : item.reject(outcomes[i].error)));
  }
  async function drain() {
    try {
      while (queue.length) await runBatch();
    } finally {
      draining = false;
    }
  }
  const unit = (work) =>
    new Promise((resolve, reject) => {
      queue.push({ work, resolve, reject });
      if (draining) return;
      draining = true;
      const first = performance.now();
      let seen = queue.length;
      const start = () => {
        if (queue.length > seen && queue.length < MAX_BATCH && performance.now() - first < MAX_WAIT_MS) {
          seen = queue.length;
          setImmediate(start);
        } else {
          void drain();
        }
      };
      setImmediate(start);
    });
  return { q, unit };
}

function openPostgres(rawUrl) {
  const url = new URL(rawUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: Number(env.INBOX_DATABASE_POOL_SIZE ?? 10),
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  });
  const texts = new Map();
  const on =
    (client) =>
    async (name, params = []) => {
      let text = texts.get(name);
      if (text === undefined) texts.set(name, (text = statement('postgres', name)));
      sqlLog?.push(text);
      return (await client.query(text, params)).rows;
    };
  // PostgreSQL commits concurrent transactions in parallel: one transaction per send.
  const unit = async (work) => {
    const client = await pool.connect();
    const q = on(client);
    try {
      await q('begin');
      // No batch to defer to (group-commit.ts afterUnits): deferred writes run at once.
      const value = await work(q, (write) => write(false));
      await q('commit');
      return value;
    } catch (err) {
      await client.query('rollback');
      throw err;
    } finally {
      client.release();
    }
  };
  return { q: on(pool), unit };
}

// ---------------------------------------------------------------------------------------------
// What the server computes besides SQL, cut down to the benchmark requests.

/** A version 7 UUID (platform/ids.ts timeOrderedUuid). */
function uuid7(now) {
  const ms = now.getTime().toString(16).padStart(12, '0').slice(-12);
  const v4 = randomUUID().replace(/-/g, '');
  const r = v4.slice(0, 12) + v4.slice(13, 16) + v4.slice(17);
  const variant = ((parseInt(r[3], 16) & 0x3) | 0x8).toString(16);
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}

/** `Name <addr>` or `addr` → { name, address }. */
function mailbox(entry) {
  const m = /^\s*(?:([^<>"]*?)\s*<([^<>\s]+@[^<>\s]+)>|([^<>\s]+@[^<>\s]+))\s*$/.exec(entry);
  if (!m) return undefined;
  return m[3] ? { name: '', address: m[3] } : { name: m[1], address: m[2] };
}
const formatted = (m) => (m.name ? `${m.name} <${m.address}>` : m.address);
const bare = (entry) => /<([^<>]*)>\s*$/.exec(entry)?.[1].trim() ?? entry.trim();

function normalizeSubject(subject) {
  let s = subject.trim();
  for (;;) {
    const next = s.replace(/^(re|fwd?|aw|wg|sv|vs)\s*(\[\d+\])?\s*:\s*/i, '');
    if (next === s) return s.toLowerCase();
    s = next;
  }
}

/** The RFC 5322 source nodemailer writes for a short ASCII plain-text message (7bit). */
function source({ messageId, date, from, to, subject, text }) {
  const head = `From: ${from}\r\nTo: ${to.join(', ')}\r\nSubject: ${subject}\r\nMessage-ID: ${messageId}\r\nDate: ${date.toUTCString().replace('GMT', '+0000')}\r\n`;
  return Buffer.from(
    `${head}Content-Transfer-Encoding: 7bit\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}${text.endsWith('\n') ? '' : '\r\n'}`,
  );
}
/** What `source` can write as nodemailer would: ASCII, lines of at most 76 characters, no quoting needed. */
const plain = (s) => /^[\x20-\x7e\n]*$/.test(s) && s.split('\n').every((l) => l.length <= 76);

function threadItem(t) {
  const participants = [];
  const seen = new Set();
  for (const e of [...t.senders, ...t.recipients]) {
    const a = bare(e);
    if (seen.has(a.toLowerCase())) continue;
    seen.add(a.toLowerCase());
    participants.push(a);
  }
  return {
    inbox_id: t.inbox_id,
    thread_id: t.thread_id,
    labels: t.labels,
    timestamp: t.timestamp,
    ...(t.received_timestamp !== null ? { received_timestamp: t.received_timestamp } : {}),
    ...(t.sent_timestamp !== null ? { sent_timestamp: t.sent_timestamp } : {}),
    senders: t.senders,
    recipients: t.recipients,
    participants,
    ...(t.subject !== null ? { subject: t.subject } : {}),
    ...(t.preview !== null ? { preview: t.preview } : {}),
    last_message_id: t.last_message_id,
    last_message_at: t.timestamp,
    message_count: 1,
    size: t.size,
    updated_at: t.updated_at,
    created_at: t.created_at,
  };
}

/** search-text.ts `words` for the ASCII texts the limit sends: lower-cased runs of letters and digits, cut to 32. */
const wordsOf = (text) => (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).map((w) => w.slice(0, 32));
const distinct = (list) => [...new Set(list)];
/** A message's search document (search-text.ts messageDocument): distinct words per field. */
function searchDocument(subject, addresses, text) {
  return {
    subject: distinct(wordsOf(subject)),
    addresses: distinct(addresses.flatMap(wordsOf)),
    body: distinct(wordsOf(text)),
  };
}
const sha = (s) => createHash('sha256').update(s).digest('hex');
const scopeWords = (inbox) =>
  `o${sha(inbox.organization_id).slice(0, 24)} p${sha(inbox.pod_id).slice(0, 24)} i${sha(inbox.inbox_id).slice(0, 24)}`;
const threadWord = (threadId) => `t${threadId.toLowerCase().replace(/[^a-z0-9]/g, '')}`;
const everyWord = (doc) => [...doc.subject, ...doc.addresses, ...doc.body];
const join = (words) => words.join(' ');

/** Parameters of a copy's search document: FTS5 columns of words (SQLite) or word arrays for array_to_tsvector (PostgreSQL). */
function searchMessageParamsFor(dialect) {
  if (dialect === 'postgres')
    return (pk, inbox, doc) => [
      pk,
      inbox.organization_id,
      inbox.pod_id,
      inbox.inbox_id,
      doc.subject,
      doc.addresses,
      everyWord(doc),
    ];
  return (pk, inbox, doc) => [pk, scopeWords(inbox), join(doc.subject), join(doc.addresses), join(doc.body)];
}
/** Parameters of a new thread's search document, ranked by its message's key. */
function searchThreadParamsFor(dialect) {
  if (dialect === 'postgres') {
    return (threadId, rank, inbox, doc) => [
      threadId,
      rank,
      inbox.organization_id,
      inbox.pod_id,
      inbox.inbox_id,
      join(doc.subject),
      join(doc.addresses),
      join(doc.body),
      doc.subject,
      doc.addresses,
      everyWord(doc),
    ];
  }
  return (threadId, rank, inbox, doc) => [
    rank,
    `${scopeWords(inbox)} ${threadWord(threadId)}`,
    join(doc.subject),
    join(doc.addresses),
    join(doc.body),
    threadId,
  ];
}

/** Fixed one-minute windows per key, as the server's memory rate limiter. */
const windows = new Map();
function hit(key) {
  const t = Date.now();
  const start = t - (t % 60_000);
  let w = windows.get(key);
  if (!w || w.start !== start) windows.set(key, (w = { start, count: 0 }));
  w.count++;
  return {
    allowed: w.count <= RATE_LIMIT,
    remaining: Math.max(0, RATE_LIMIT - w.count),
    reset: Math.ceil((start + 60_000 - t) / 1000),
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP

function reply(res, status, body, rate) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const headers = { 'x-request-id': randomUUID() };
  if (rate) {
    headers['ratelimit-limit'] = String(RATE_LIMIT);
    headers['ratelimit-remaining'] = String(rate.remaining);
    headers['ratelimit-reset'] = String(rate.reset);
  }
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = Buffer.byteLength(text);
  res.writeHead(status, headers);
  res.end(text);
}

const fail = (res, status, type, message, rate) =>
  reply(res, status, { error: { type, message, details: { code: type.toUpperCase() } } }, rate);

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

class HttpError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

const json = (text, fallback) => (text === null ? fallback : JSON.parse(text));

/**
 * A list item in the order the server's serializer writes it (fast-json-stringify: the required
 * properties first, then the optional ones, each group in schema order).
 */
function listItem(row, inboxId) {
  const item = {
    inbox_id: inboxId,
    thread_id: row.thread_id,
    message_id: row.message_id,
    labels: JSON.parse(row.labels),
    timestamp: row.timestamp,
    from: row.from_address,
    to: JSON.parse(row.to_addresses),
    size: Number(row.size),
    updated_at: row.updated_at,
    created_at: row.created_at,
  };
  const cc = json(row.cc_addresses, []);
  if (cc.length) item.cc = cc;
  const bcc = json(row.bcc_addresses, []);
  if (bcc.length) item.bcc = bcc;
  if (row.subject !== null) item.subject = row.subject;
  if (row.preview !== null) item.preview = row.preview;
  const attachments = json(row.attachments, []);
  if (attachments.length) {
    item.attachments = attachments.map((a) => {
      const out = { attachment_id: a.attachmentId, size: a.size };
      if (a.filename !== null) out.filename = a.filename;
      if (a.contentType !== null) out.content_type = a.contentType;
      if (a.contentDisposition !== null) out.content_disposition = a.contentDisposition;
      if (a.contentId !== null) out.content_id = a.contentId;
      return out;
    });
  }
  if (row.in_reply_to !== null) item.in_reply_to = row.in_reply_to;
  const references = json(row.references_ids, []);
  if (references.length) item.references = references;
  const headers = json(row.headers, null);
  if (headers && Object.keys(headers).length) item.headers = headers;
  return item;
}

function createHandler(db, dialect) {
  const { q, unit } = db;
  const searchMessageParams = searchMessageParamsFor(dialect);
  const searchThreadParams = searchThreadParamsFor(dialect);

  // The key, its scope and permissions, and the human an unverified sign-up may mail (api-key.repository.ts).
  const owner = async (req) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m) return undefined;
    const [row] = await q('auth', [createHash('sha256').update(m[1], 'utf8').digest('hex')]);
    if (!row) return undefined;
    return { ...row, permissions: row.permissions === null ? undefined : JSON.parse(row.permissions) };
  };
  /**
   * scope.ts `holds` for the two permissions the benchmark needs: a key without a permission set
   * holds all; an unverified organization's narrowing (UNVERIFIED_DENIED) spares both.
   */
  const holds = (who, wire) => who.permissions === undefined || who.permissions[wire] === true;
  /** scope.ts `inScope`: a pod key reaches its pod's inboxes, an inbox key its inbox. */
  const reaches = (who, inbox) =>
    inbox.organization_id === who.organization_id &&
    (who.pod_id === null || inbox.pod_id === who.pod_id) &&
    (who.inbox_id === null || inbox.inbox_id === who.inbox_id);

  async function list(req, res, inboxId, query) {
    const who = await owner(req);
    if (!who) return fail(res, 401, 'authentication_error', 'Invalid API key.');
    const rate = hit(who.id);
    if (!holds(who, 'message_read'))
      throw new HttpError(501, 'not_implemented', 'The limit answers keys that may read messages only.');
    const params = new URLSearchParams(query);
    const limit = Math.min(Number(params.get('limit') ?? DEFAULT_LIMIT), MAX_LIMIT);
    const token = params.get('page_token');
    const cursor = token ? JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) : undefined;
    if (cursor && cursor[2] !== 'desc')
      throw new HttpError(501, 'not_implemented', 'The limit lists newest first only.');
    const [inbox] = await q('inbox', [inboxId, who.organization_id]);
    if (!inbox || !reaches(who, inbox)) return fail(res, 404, 'not_found', `Inbox ${inboxId} not found.`, rate);
    const rows = cursor
      ? await q('pageAfter', [inboxId, ...HIDDEN_LABELS, cursor[0], cursor[0], cursor[0], cursor[1], limit + 1])
      : await q('page', [inboxId, ...HIDDEN_LABELS, limit + 1]);
    const items = rows.slice(0, limit);
    const body = { count: items.length, limit, messages: items.map((row) => listItem(row, inboxId)) };
    const last = items[items.length - 1];
    if (rows.length > limit && last)
      body.next_page_token = Buffer.from(JSON.stringify([last.timestamp, Number(last.id), 'desc'])).toString(
        'base64url',
      );
    reply(res, 200, body, rate);
  }

  async function send(req, res, senderId) {
    const who = await owner(req);
    if (!who) return fail(res, 401, 'authentication_error', 'Invalid API key.');
    const rate = hit(who.id);
    if (!holds(who, 'message_send'))
      throw new HttpError(501, 'not_implemented', 'The limit answers keys that may send only.');
    const input = JSON.parse(await readBody(req));
    const to = (typeof input.to === 'string' ? input.to.split(',') : (input.to ?? [])).map(mailbox);
    const subject = input.subject ?? '';
    const text = input.text ?? '';
    if (
      !to.length ||
      to.some((m) => !m || !DOMAINS.includes(m.address.slice(m.address.lastIndexOf('@') + 1).toLowerCase()))
    )
      throw new HttpError(501, 'not_implemented', 'The limit sends to local inboxes only.');
    if (
      input.cc ||
      input.bcc ||
      input.reply_to ||
      input.html ||
      input.headers ||
      input.attachments?.length ||
      input.labels?.length ||
      !plain(subject) ||
      subject.length > 60 ||
      !plain(text) ||
      text.length > MAX_TEXT
    ) {
      throw new HttpError(501, 'not_implemented', 'The limit sends short plain-text ASCII messages only.');
    }
    const preview = text.replace(/\s+/g, ' ').trim() || null;
    // As the server (decision 0008): the sending inbox is read and the source composed before the unit of work.
    const [from0] = await q('inbox', [senderId, who.organization_id]);
    if (!from0 || !reaches(who, from0)) return fail(res, 404, 'not_found', `Inbox ${senderId} not found.`, rate);
    // An unverified agent sign-up mails only the human it named (decision 0018).
    if (who.human_email !== null && to.some((m) => m.address.toLowerCase() !== who.human_email))
      throw new HttpError(501, 'not_implemented', 'The limit does not refuse messages.');
    const now = new Date();
    const timestamp = now.toISOString();
    const messageId = `<${uuid7(now)}@${from0.domain}>`;
    const from = formatted({ name: from0.display_name ?? '', address: from0.inbox_id });
    const toList = to.map(formatted);
    const raw = source({ messageId, date: now, from, to: toList, subject, text });
    const sent = await unit(async (q, afterUnits) => {
      const addresses = [...new Set([senderId, ...to.map((m) => m.address.toLowerCase())])];
      const found = await q(`inboxes:${addresses.length}`, addresses);
      const sender = found.find((i) => i.inbox_id === senderId);
      if (!sender || sender.organization_id !== who.organization_id)
        throw new HttpError(404, 'not_found', `Inbox ${senderId} not found.`);
      const others = [];
      const bounced = [];
      for (const m of to) {
        const inbox = found.find((i) => i.inbox_id === m.address.toLowerCase());
        if (!inbox) bounced.push(m.address);
        else if (inbox.inbox_id !== senderId && !others.includes(inbox)) others.push(inbox);
      }
      if (to.some((m) => m.address.toLowerCase() === senderId))
        throw new HttpError(501, 'not_implemented', 'The limit does not send to the sending inbox.');

      // Allow and block lists (access-list.service.ts screen): whether any list applies, probed at
      // the sender's levels for sending and at the recipients' for receiving. The limit delivers
      // only where none does.
      const levels = (inbox) => ['', `pod:${inbox.pod_id}`, `inbox:${inbox.inbox_id}`];
      const probes = [
        ...levels(sender).map((key) => [key, 'send']),
        ...[...new Set(others.flatMap(levels))].map((key) => [key, 'receive']),
      ];
      const directions = [...new Set(probes.map(([, d]) => d))];
      const org = sender.organization_id;
      const [present] = await q(`lists:${probes.length}x${directions.length}`, [
        ...probes.flatMap(([key, d]) => [org, key, d, 'allow']),
        ...directions.flatMap((d) => [org, d, 'block']),
      ]);
      if (Object.values(present).some((v) => v === true || v === 1))
        throw new HttpError(501, 'not_implemented', 'The limit does not screen with allow or block lists.');

      const normalized = normalizeSubject(subject);
      const copies = [sender, ...others].map((inbox, i) => {
        const labels = i === 0 ? ['sent'] : ['received', 'unread'];
        const threadId = uuid7(now);
        const thread = {
          thread_id: threadId,
          organization_id: inbox.organization_id,
          inbox_id: inbox.inbox_id,
          subject,
          normalized_subject: normalized,
          senders: [from],
          recipients: toList,
          labels,
          size: raw.length,
          preview,
          last_message_id: messageId,
          timestamp,
          received_timestamp: i === 0 ? null : timestamp,
          sent_timestamp: i === 0 ? timestamp : null,
          created_at: timestamp,
          updated_at: timestamp,
        };
        return { inbox, labels, thread };
      });
      const threadValues = copies.flatMap(({ thread: t }) => [
        t.thread_id,
        t.organization_id,
        t.inbox_id,
        t.subject,
        t.normalized_subject,
        JSON.stringify(t.senders),
        JSON.stringify(t.recipients),
        JSON.stringify(t.labels),
        1,
        t.size,
        t.preview,
        t.last_message_id,
        t.timestamp,
        t.received_timestamp,
        t.sent_timestamp,
        t.created_at,
        t.updated_at,
      ]);
      await q(`insertThreads:${copies.length}`, threadValues);
      const toJson = JSON.stringify(toList);
      const messageValues = copies.flatMap(({ inbox, labels, thread }) => [
        inbox.organization_id,
        inbox.inbox_id,
        thread.thread_id,
        messageId,
        JSON.stringify(labels),
        timestamp,
        from,
        null,
        toJson,
        null,
        null,
        subject,
        preview,
        text,
        null,
        null,
        null,
        null,
        null,
        raw.length,
        raw,
        // source_blob, text_blob, html_blob: a small message keeps its bytes in its row.
        null,
        null,
        null,
        timestamp,
        timestamp,
      ]);
      const pks = new Map(
        (await q(`insertMessages:${copies.length}`, messageValues)).map((r) => [r.inbox_id, Number(r.id)]),
      );
      const labelValues = copies.flatMap(({ inbox, labels }) =>
        labels.flatMap((label) => [pks.get(inbox.inbox_id), label]),
      );
      await q(`insertLabels:${labelValues.length / 2}`, labelValues);

      const eventTime = new Date();
      const createdAt = eventTime.toISOString();
      const ref = {
        inbox_id: sender.inbox_id,
        thread_id: copies[0].thread.thread_id,
        message_id: messageId,
        timestamp,
      };
      const events = [
        { inbox: sender, type: 'message.sent', body: { send: { ...ref, recipients: to.map((m) => m.address) } } },
      ];
      for (const { inbox, labels, thread } of copies.slice(1)) {
        const message = {
          inbox_id: inbox.inbox_id,
          thread_id: thread.thread_id,
          message_id: messageId,
          labels,
          timestamp,
          from,
          to: toList,
          subject,
          ...(preview !== null ? { preview } : {}),
          size: raw.length,
          updated_at: timestamp,
          created_at: timestamp,
          text,
          extracted_text: text,
        };
        events.push({ inbox, type: 'message.received', body: { message, thread: threadItem(thread) } });
      }
      const delivered = to.filter((m) => !bounced.includes(m.address)).map((m) => m.address);
      if (delivered.length)
        events.push({
          inbox: sender,
          type: 'message.delivered',
          body: { delivery: { ...ref, recipients: delivered } },
        });
      if (bounced.length) {
        events.push({
          inbox: sender,
          type: 'message.bounced',
          body: {
            bounce: {
              ...ref,
              type: 'Permanent',
              sub_type: 'NoEmail',
              recipients: bounced.map((address) => ({ address, status: 'bounced' })),
            },
          },
        });
      }
      for (const e of events) {
        e.id = `evt_${uuid7(eventTime).replace(/-/g, '')}`;
        e.payload = JSON.stringify({ type: 'event', event_type: e.type, event_id: e.id, ...e.body });
      }
      await q(
        `insertEvents:${events.length}`,
        events.flatMap((e) => [
          e.id,
          e.inbox.organization_id,
          e.type,
          e.inbox.inbox_id,
          e.inbox.pod_id,
          e.payload,
          createdAt,
        ]),
      );
      const hooks = (await q('webhooks', [sender.organization_id])).filter((h) => Boolean(h.enabled));
      const matches = (h, e) => {
        if (
          (h.pod_id !== null && h.pod_id !== e.inbox.pod_id) ||
          (h.inbox_id !== null && h.inbox_id !== e.inbox.inbox_id)
        )
          return false;
        const types = json(h.event_types, null);
        if (types?.length && !types.includes(e.type)) return false;
        const inboxes = json(h.inbox_ids, null);
        const pods = json(h.pod_ids, null);
        if (!inboxes?.length && !pods?.length) return true;
        return Boolean(inboxes?.includes(e.inbox.inbox_id) || pods?.includes(e.inbox.pod_id));
      };
      const jobs = events.flatMap((e) =>
        hooks.filter((h) => matches(h, e)).map((h) => JSON.stringify({ webhook_id: h.webhook_id, event_id: e.id })),
      );
      if (jobs.length) {
        const at = new Date().toISOString();
        await q(
          `insertJobs:${jobs.length}`,
          jobs.flatMap((payload) => ['webhook.deliver', payload, 'pending', at, 0, null, null, at, at]),
        );
      }
      // Usage counts (usage.service.ts): per copy its message and bytes, per thread started one, per
      // event one of its type; summed per key, on one random shard, rows in key order.
      const bucket = Math.floor(Date.now() / 1000); // the unit's own clock reading, as deliver() takes it
      const deltas = new Map();
      const count = (inbox, metric, value) => {
        const key = [inbox.organization_id, inbox.pod_id, inbox.inbox_id, metric, bucket].join('\u0000');
        const d = deltas.get(key);
        if (d) d[6] += value;
        else deltas.set(key, [inbox.organization_id, inbox.pod_id, inbox.inbox_id, metric, bucket, 0, value]);
      };
      for (const { inbox } of copies) {
        count(inbox, 'usage.message_count', 1);
        count(inbox, 'usage.storage_bytes', raw.length);
        count(inbox, 'usage.thread_count', 1);
      }
      for (const e of events) count(e.inbox, e.type, 1);
      const shard = randomInt(USAGE_SHARDS);
      const usage = [...deltas.entries()]
        .filter(([, d]) => d[6] !== 0)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, d]) => ((d[5] = shard), d));

      // The search index (search.repository.ts indexMessages), at the end of a SQLite batch (at
      // once on PostgreSQL): each copy's document, then each thread's (new threads: nothing to
      // merge with); after other units, only the copies still stored.
      const doc = searchDocument(subject, [from, ...toList], text);
      await afterUnits(async (afterOthers) => {
        let live = copies;
        if (afterOthers) {
          const kept = new Set(
            (
              await q(
                `stillStored:${copies.length}`,
                copies.map(({ inbox }) => pks.get(inbox.inbox_id)),
              )
            ).map((r) => Number(r.id)),
          );
          live = copies.filter(({ inbox }) => kept.has(pks.get(inbox.inbox_id)));
        }
        for (const { inbox } of live)
          await q('searchMessage', searchMessageParams(pks.get(inbox.inbox_id), inbox, doc));
        for (const { inbox, thread } of live) {
          const found = await q('searchThreadFind', [
            dialect === 'postgres' ? thread.thread_id : `{scope}: "${threadWord(thread.thread_id)}"`,
          ]);
          if (found.length) throw new Error(`thread ${thread.thread_id} has a search document already`);
          await q('searchThread', searchThreadParams(thread.thread_id, pks.get(inbox.inbox_id), inbox, doc));
        }
      });

      // The usage counts after the search documents, as the service writes them (on PostgreSQL the
      // rows other sends write too come last: they stay locked until the commit).
      await q(`addUsage:${usage.length}`, usage.flat());

      // Each copy's folder for mail clients (the IMAP projection, decision 0045): a UID from the
      // folder's counter, in the service's order (by inbox and folder), then the rows; next to last,
      // as the service takes them (the counter's row stays locked until the commit on PostgreSQL).
      const folders = copies
        .map(({ inbox, labels }) => ({ inbox, folder: labels.includes('sent') ? 'Sent' : 'INBOX' }))
        .sort((a, b) => (`${a.inbox.inbox_id}\u0000${a.folder}` < `${b.inbox.inbox_id}\u0000${b.folder}` ? -1 : 1));
      const folderRows = [];
      for (const { inbox, folder } of folders) {
        const [{ uid_next, modseq }] = await q('takeUids', [inbox.inbox_id, folder, 2, 1]);
        folderRows.push(inbox.inbox_id, folder, Number(uid_next) - 1, pks.get(inbox.inbox_id), Number(modseq));
      }
      await q(`insertFolderMessages:${folderRows.length / 5}`, folderRows);

      const [{ value }] = await q('countSend', [who.organization_id, timestamp.slice(0, 10), 1, 1]);
      if (Number(value) > SEND_LIMIT) throw new HttpError(429, 'rate_limit_exceeded', 'Daily send limit reached.');
      return { message_id: messageId, thread_id: copies[0].thread.thread_id };
    });
    reply(res, 200, sent, rate);
  }

  return (req, res) => {
    if (sqlLog && req.url === '/__sql') {
      reply(res, 200, sqlLog.splice(0));
      return;
    }
    const m = /^\/v0\/inboxes\/([^/?]+)\/messages(\/send)?(?:\?(.*))?$/.exec(req.url);
    let done;
    if (m && req.method === 'GET' && !m[2])
      done = list(req, res, decodeURIComponent(m[1]).trim().toLowerCase(), m[3] ?? '');
    else if (m && req.method === 'POST' && m[2] && !m[3])
      done = send(req, res, decodeURIComponent(m[1]).trim().toLowerCase());
    else return fail(res, 404, 'not_found', 'No such route.');
    done.catch((err) => {
      if (!(err instanceof HttpError)) console.error(err);
      if (!res.headersSent) fail(res, err.status ?? 500, err.type ?? 'internal_error', err.message);
    });
  };
}

const url = env.BASELINE_DATABASE_URL ?? '';
const dialect = /^postgres(ql)?:\/\//.test(url) ? 'postgres' : 'sqlite';
const db = dialect === 'postgres' ? openPostgres(url) : openSqlite(url.replace(/^sqlite:/, ''));
const server = http.createServer(createHandler(db, dialect));
server.keepAliveTimeout = 72_000; // as the inbox server's Fastify setting, so Keep-Alive headers match
server.listen(Number(env.PORT ?? 3901), env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  process.stdout.write(`Inbox baseline: http://${address}:${port}/v0 (${dialect})\n`);
});
process.once('SIGTERM', () => process.exit(0));
