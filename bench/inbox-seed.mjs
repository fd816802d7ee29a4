import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { sql } from 'kysely';
import { prng } from './lib/prng.mjs';

/**
 * A fresh inbox benchmark database through the real migrations and services: one organization
 * with an `am_` key, the inbox `support@inbox.localhost` ("Support Agent") and
 * `sales@inbox.localhost`, and one webhook subscribed to message.received. The support inbox then
 * gets `count` messages in conversations with about 2,000 outside correspondents over a year:
 * received and sent, replies with In-Reply-To, References and quoted history, some HTML, cc,
 * labels, attachments, each with the RFC 5322 source the service composes, the label rows and
 * the thread summaries the service keeps (its own startThread/addMessageToThread); about 2 % of the
 * threads are spam and 1.5 % are in the trash, which lists leave out by default. These rows are
 * inserted in bulk (explicit keys, in time order, as a year of single inserts would have numbered
 * them) instead of one send at a time. Deterministic (seeded PRNG). Events and finished webhook
 * jobs of that history are not seeded: nothing the benchmarks do reads them.
 */

/**
 * The service's modules, from the build under test (`dist`: the folder holding `src/`), so that
 * the seed runs the same migrations and code as the server it is measured with.
 */
let svc;
export async function loadService(dist) {
  const from = (file) => import(pathToFileURL(path.join(dist, 'src', file)).href);
  // The thread rules moved to inbox/core/thread.js (issue 26); builds from before it keep them in threads/.
  const rules = (file, before) => (existsSync(path.join(dist, 'src', file)) ? from(file) : from(before));
  const [pagination, compose, service, threads, config, configSpec, ids] = await Promise.all([
    from('platform/db/cursor.js'),
    from('inbox/mail/compose.js'),
    from('inbox/service.js'),
    rules('inbox/core/thread.js', 'inbox/threads/thread.service.js'),
    from('platform/config/config.js'),
    from('inbox/inbox.config.js'),
    from('platform/ids.js'),
  ]);
  svc = { ...pagination, ...compose, ...service, ...threads, ...config, ...configSpec, ...ids };
  return svc;
}

export const DOMAIN = 'inbox.localhost';
export const LIST_INBOX = `support@${DOMAIN}`;
export const PEER_INBOX = `sales@${DOMAIN}`;
const DAY = 86_400_000;
/** The history ends here, before any benchmark send. */
const END = Date.UTC(2026, 10, 1);

const FIRST = [
  'Anna',
  'Ben',
  'Clara',
  'David',
  'Elif',
  'Felix',
  'Greta',
  'Hannah',
  'Ivan',
  'Jonas',
  'Karin',
  'Lukas',
  'Mia',
  'Noah',
  'Olga',
  'Paul',
  'Rosa',
  'Sven',
  'Tanja',
  'Uwe',
  'Vera',
  'Wei',
  'Yusuf',
  'Zoe',
];
const LAST = [
  'Albrecht',
  'Becker',
  'Costa',
  'Dietrich',
  'Engel',
  'Fischer',
  'Garcia',
  'Hoffmann',
  'Ivanova',
  'Jansen',
  'Keller',
  'Lange',
  'Meyer',
  'Nowak',
  'Ortiz',
  'Peters',
  'Quast',
  'Richter',
  'Schmidt',
  'Tran',
  'Vogel',
  'Wagner',
  'Yilmaz',
  'Zimmermann',
];
const COMPANIES = [
  'acme-logistics.de',
  'brightwave.io',
  'nordlicht-energie.de',
  'examplecorp.com',
  'kiefer-bau.de',
  'quantum-retail.eu',
  'gmail.com',
  'outlook.com',
  'web.de',
  'posteo.de',
];
const TOPICS = [
  'order',
  'invoice',
  'delivery',
  'refund',
  'account',
  'password reset',
  'API access',
  'webhook',
  'subscription',
  'contract',
  'data export',
  'integration',
];
const SUBJECTS = [
  (r, t) => `Question about my ${t}`,
  (r) => `Order #${100000 + Math.floor(r() * 900000)} has not arrived`,
  (r) => `Invoice ${2026}-${String(1 + Math.floor(r() * 9999)).padStart(4, '0')} seems wrong`,
  (r, t) => `Problem with ${t}`,
  (r, t) => `Feature request: better ${t} handling`,
  (r, t) => `Urgent: ${t} not working since yesterday`,
  (r, t) => `Follow-up on our call about the ${t}`,
  (r, t) => `Können Sie mir beim Thema ${t} helfen?`,
];
const WORDS = (
  'the a our your we you it this that is are was were be have has had not can could would should will please thanks thank ' +
  'order invoice delivery account access key api webhook message inbox team support customer payment refund export data report ' +
  'error issue problem question request update change today yesterday tomorrow week month again still already soon also only ' +
  'send sent receive received check checked attach attached review confirm confirmed missing wrong correct new old first last ' +
  'time date number address email phone contract plan price cost service system setting settings page link download upload'
).split(' ');
const LABELS = ['billing', 'urgent', 'feature-request', 'bug', 'follow-up', 'vip'];
const FILES = [
  ['invoice.pdf', 'application/pdf'],
  ['screenshot.png', 'image/png'],
  ['server.log', 'text/plain'],
  ['contract.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  ['export.csv', 'text/csv'],
];

function generator(random) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const hex = (n) => Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join('');
  const ids = {
    uuid: () => `${hex(8)}-${hex(4)}-4${hex(3)}-${pick(['8', '9', 'a', 'b'])}${hex(3)}-${hex(12)}`,
    token: (n) => Buffer.from(hex(2 * n), 'hex').toString('base64url'),
  };
  const sentence = () => {
    const n = 6 + Math.floor(random() * 14);
    const words = Array.from({ length: n }, () => pick(WORDS));
    return `${words[0][0].toUpperCase()}${words.join(' ').slice(1)}${pick(['.', '.', '.', '?', '!'])}`;
  };
  const paragraph = () => Array.from({ length: 1 + Math.floor(random() * 4) }, sentence).join(' ');
  const people = Array.from({ length: 2000 }, () => {
    const first = pick(FIRST);
    const last = pick(LAST);
    const domain = pick(COMPANIES);
    return {
      name: `${first} ${last}`,
      first,
      address: `${first}.${last}${Math.floor(random() * 100)}@${domain}`.toLowerCase(),
      domain,
    };
  });
  return { pick, hex, ids, paragraph, people };
}

/** One thread's messages (without keys yet), oldest first. */
async function conversation(g, random, support, start, length, spam) {
  const customer = g.pick(g.people);
  const subject = g.pick(SUBJECTS)(random, g.pick(TOPICS));
  const colleague = random() < 0.1 ? g.pick(g.people.filter((p) => p.domain === customer.domain)) : undefined;
  const customLabels = random() < 0.15 ? [g.pick(LABELS)] : [];
  const out = [];
  let at = start;
  let inbound = spam || random() < 0.85;
  for (let i = 0; i < length; i++) {
    if (i > 0) {
      at += Math.min(3 * DAY, Math.round(-Math.log(1 - random()) * 6 * 3600_000)) + 60_000;
      if (random() < 0.8) inbound = !inbound;
    }
    if (at >= END) break;
    const date = new Date(at);
    const parent = out[out.length - 1];
    const them = { name: customer.name, address: customer.address };
    const from = inbound ? them : support;
    const to = inbound ? [random() < 0.3 ? support : { name: '', address: support.address }] : [them];
    const cc = colleague && random() < 0.7 ? [{ name: colleague.name, address: colleague.address }] : [];
    const greeting = inbound
      ? g.pick(['Hello,', 'Hi Support Team,', 'Dear Sir or Madam,', 'Hi,'])
      : `Hello ${customer.first},`;
    const signoff = inbound ? `Best regards,\n${customer.name}` : 'Kind regards,\nSupport Agent';
    let text = `${greeting}\n\n${Array.from({ length: 1 + Math.floor(random() * 3) }, g.paragraph).join('\n\n')}\n\n${signoff}`;
    if (parent)
      text += `\n\nOn ${new Date(parent.timestamp).toUTCString()}, ${parent.from} wrote:\n${parent.text
        .split('\n')
        .slice(0, 6)
        .map((l) => `> ${l}`)
        .join('\n')}`;
    const html =
      random() < 0.35
        ? `<div dir="ltr">${text
            .split('\n\n')
            .map(
              (p) =>
                `<p>${p.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\n/g, '<br>')}</p>`,
            )
            .join('')}</div>`
        : null;
    const attachments = [];
    if (random() < 0.06) {
      for (let n = 1 + Math.floor(random() * 2); n > 0; n--) {
        const [filename, contentType] = g.pick(FILES);
        const content = Buffer.alloc(2048 + Math.floor(random() * 30_000));
        for (let b = 0; b < content.length; b += 4)
          content.writeUInt32LE((random() * 2 ** 32) >>> 0, Math.min(b, content.length - 4));
        attachments.push({
          meta: {
            attachmentId: svc.timeOrderedUuid(date, g.ids),
            filename,
            size: content.length,
            contentType,
            contentDisposition: 'attachment',
            contentId: null,
          },
          content,
        });
      }
    }
    const messageId = inbound ? `<${g.hex(24)}@${customer.domain}>` : `<${svc.timeOrderedUuid(date, g.ids)}@${DOMAIN}>`;
    const inReplyTo = parent ? parent.messageId : null;
    const references = parent ? [...parent.references, parent.messageId].slice(-50) : [];
    const headers = !inbound && random() < 0.05 ? { 'X-Ticket-Id': `T-${g.hex(6)}` } : {};
    const messageSubject = parent ? svc.replySubject(subject) : subject;
    const raw = await svc.composeMessage({
      messageId,
      date,
      from,
      to,
      cc,
      replyTo: [],
      subject: messageSubject,
      text,
      html,
      inReplyTo,
      references,
      headers,
      attachments: attachments.map((a) => ({ ...a.meta, content: a.content })),
    });
    const unread = inbound && (at > END - 14 * DAY || random() < 0.03);
    const timestamp = date.toISOString();
    out.push({
      messageId,
      timestamp,
      from: svc.formatMailbox(from),
      replyTo: [],
      to: to.map(svc.formatMailbox),
      cc: cc.map(svc.formatMailbox),
      bcc: [],
      subject: messageSubject,
      preview: svc.previewOf(text, html),
      text,
      html,
      inReplyTo,
      references,
      headers: Object.keys(headers).length ? headers : null,
      attachments: attachments.map((a) => a.meta),
      attachmentContents: attachments.map((a) => a.content),
      labels: spam
        ? ['received', 'spam']
        : [
            ...(inbound ? ['received', ...(unread ? ['unread'] : [])] : ['sent']),
            ...(random() < 0.5 ? customLabels : []),
          ],
      size: raw.length,
      raw,
      createdAt: timestamp,
      updatedAt: timestamp,
    });
  }
  return out;
}

const jsonOrNull = (list) => (list.length ? JSON.stringify(list) : null);

/** The row insertMessages (message.repository.ts) writes for a message, with its key. */
function messageRow(id, organizationId, inboxId, threadId, m) {
  return {
    id,
    organization_id: organizationId,
    inbox_id: inboxId,
    thread_id: threadId,
    message_id: m.messageId,
    labels: JSON.stringify(m.labels),
    timestamp: m.timestamp,
    from_address: m.from,
    reply_to: jsonOrNull(m.replyTo),
    to_addresses: JSON.stringify(m.to),
    cc_addresses: jsonOrNull(m.cc),
    bcc_addresses: jsonOrNull(m.bcc),
    subject: m.subject,
    preview: m.preview,
    text_body: m.text,
    html_body: m.html,
    in_reply_to: m.inReplyTo,
    references_ids: jsonOrNull(m.references),
    headers: m.headers ? JSON.stringify(m.headers) : null,
    attachments: jsonOrNull(m.attachments),
    size: m.size,
    raw: m.raw,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
  };
}

/** The row insertThreads (thread.repository.ts) writes for a thread summary, with its key. */
function threadRow(id, t) {
  return {
    id,
    thread_id: t.threadId,
    organization_id: t.organizationId,
    inbox_id: t.inboxId,
    subject: t.subject,
    normalized_subject: t.normalizedSubject,
    senders: JSON.stringify(t.senders),
    recipients: JSON.stringify(t.recipients),
    labels: JSON.stringify(t.labels),
    message_count: t.messageCount,
    size: t.size,
    preview: t.preview,
    last_message_id: t.lastMessageId,
    timestamp: t.timestamp,
    received_timestamp: t.receivedTimestamp,
    sent_timestamp: t.sentTimestamp,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
}

async function insertChunked(trx, table, rows, size) {
  for (let i = 0; i < rows.length; i += size)
    await trx
      .insertInto(table)
      .values(rows.slice(i, i + size))
      .execute();
}

export function inboxConfig(url, dataDir) {
  return svc.loadConfig(svc.inboxConfigSpec, {
    LOG_LEVEL: 'warn',
    INBOX_DATABASE_URL: url,
    DATA_DIR: dataDir,
    INBOX_DOMAINS: DOMAIN,
    INBOX_ROLES: 'api',
  });
}

/**
 * Creates the database at `url` from scratch. Returns the key, the inboxes and the page token
 * of the page that starts at message `deepOffset` (newest first), made by the service's own
 * encodeCursor from the last message of the page before it, as the service's list does.
 */
export async function seedInbox({ url, sqliteFile, dataDir, count, deepOffset, limit = 50, log = () => {} }) {
  if (sqliteFile) for (const suffix of ['', '-wal', '-shm']) rmSync(sqliteFile + suffix, { force: true });
  const config = inboxConfig(url, dataDir);
  const database = await svc.openInboxDatabase(config);
  try {
    const { db } = database;
    const postgres = database.dialect === 'postgres';
    if (postgres) {
      const schema = new URL(url).searchParams.get('schema');
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
      await sql`create schema ${sql.id(schema)}`.execute(db);
    }
    await svc.migrateInbox(database);
    const { services } = svc.createInboxServices(config, db, { log: { warn() {}, error() {} } });
    const key = await services.apiKeys.createKey({ name: 'bench' });
    const owner = { apiKeyId: key.apiKeyId, organizationId: key.organizationId };
    const support = (await services.inboxes.create(owner, { username: 'support', displayName: 'Support Agent' })).inbox;
    await services.inboxes.create(owner, { username: 'sales', displayName: 'Sales Team' });
    await services.webhooks.create(owner, {
      url: 'https://hooks.example.org/agentmail',
      eventTypes: ['message.received'],
    });

    const random = prng(20261121);
    const g = generator(random);
    const me = { name: 'Support Agent', address: support.inboxId };
    const threads = [];
    let total = 0;
    while (total < count) {
      const r = random();
      // About 2 % of threads are one inbound message labelled spam (it failed DMARC), and about
      // 1.5 % of the others were deleted into the trash (every message labelled trash).
      const spam = random() < 0.02;
      const length = spam
        ? 1
        : Math.min(
            count - total,
            r < 0.4 ? 1 : r < 0.65 ? 2 : r < 0.8 ? 3 : r < 0.9 ? 4 : 5 + Math.floor(random() * 8),
          );
      const start = END - 365 * DAY + Math.floor(random() * 364 * DAY);
      const messages = await conversation(g, random, me, start, length, spam);
      if (!messages.length) continue;
      if (!spam && random() < 0.015) {
        const trashedAt = new Date(
          Math.min(END - 1000, Date.parse(messages[messages.length - 1].timestamp) + DAY),
        ).toISOString();
        for (const m of messages) Object.assign(m, { labels: [...m.labels, 'trash'], updatedAt: trashedAt });
      }
      const first = messages[0];
      const threadId = svc.timeOrderedUuid(new Date(first.timestamp), g.ids);
      let summary = svc.startThread(
        { threadId, organizationId: owner.organizationId, inboxId: support.inboxId },
        first,
        svc.normalizeSubject(first.subject),
      );
      for (const next of messages.slice(1)) summary = svc.addMessageToThread(summary, next);
      threads.push({ summary, messages });
      total += messages.length;
    }
    log(`  generated ${total} messages in ${threads.length} threads`);

    threads.sort((a, b) =>
      a.summary.createdAt < b.summary.createdAt ? -1 : a.summary.createdAt > b.summary.createdAt ? 1 : 0,
    );
    const all = threads.flatMap((t) => t.messages.map((m) => ({ m, threadId: t.summary.threadId })));
    all.sort((a, b) => (a.m.timestamp < b.m.timestamp ? -1 : a.m.timestamp > b.m.timestamp ? 1 : 0));
    const messages = all.map(({ m, threadId }, i) =>
      messageRow(i + 1, owner.organizationId, support.inboxId, threadId, m),
    );
    const labels = all.flatMap(({ m }, i) => m.labels.map((label) => ({ message_pk: i + 1, label })));
    const attachments = all.flatMap(({ m }, i) =>
      m.attachments.map((a, j) => ({
        message_pk: i + 1,
        attachment_id: a.attachmentId,
        filename: a.filename,
        content_type: a.contentType,
        content_disposition: a.contentDisposition,
        content_id: a.contentId,
        size: a.size,
        content: m.attachmentContents[j],
      })),
    );
    await db.transaction().execute(async (trx) => {
      await insertChunked(
        trx,
        'threads',
        threads.map((t, i) => threadRow(i + 1, t.summary)),
        1000,
      );
      await insertChunked(trx, 'messages', messages, 400);
      await insertChunked(trx, 'message_labels', labels, 5000);
      await insertChunked(
        trx,
        'attachments',
        attachments.map((a, i) => ({ id: i + 1, ...a })),
        100,
      );
      if (postgres) {
        for (const table of ['threads', 'messages', 'attachments'])
          await sql`select setval(pg_get_serial_sequence(${table}, 'id'), (select max(id) from ${sql.table(table)}))`.execute(
            trx,
          );
      }
    });
    log(
      `  inserted ${messages.length} messages, ${threads.length} threads, ${labels.length} labels, ${attachments.length} attachments`,
    );
    // Planner statistics and the visibility map, as a settled production table would have them.
    if (postgres) await sql`vacuum analyze`.execute(db);
    else await sql`analyze`.execute(db);

    // The page token of the page starting at listed message `deepOffset`, newest first (lists leave
    // out spam, blocked and trash by default).
    const before = await db
      .selectFrom('messages')
      .select(['id', 'timestamp'])
      .where('inbox_id', '=', support.inboxId)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('message_labels')
              .select('label')
              .whereRef('message_labels.message_pk', '=', 'messages.id')
              .where('label', 'in', ['spam', 'blocked', 'trash']),
          ),
        ),
      )
      .orderBy('timestamp', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .offset(deepOffset - 1)
      .executeTakeFirstOrThrow();
    const deepToken = svc.encodeCursor({ sort: before.timestamp, tiebreak: Number(before.id), direction: 'desc' });
    return { apiKey: key.key, organizationId: owner.organizationId, deepToken, limit };
  } finally {
    await database.destroy();
  }
}

/**
 * Pages through the inbox with the service's own list (in this process) until `offset` and
 * checks that its next_page_token there is `token`.
 */
export async function checkDeepToken({ url, dataDir, apiKey, offset, limit, token }) {
  const config = inboxConfig(url, dataDir);
  const database = await svc.openInboxDatabase(config);
  try {
    const { services } = svc.createInboxServices(config, database.db, { log: { warn() {}, error() {} } });
    const owner = await services.apiKeys.authenticate(apiKey);
    let pageToken;
    for (let seen = 0; seen < offset; seen += limit) {
      const page = await services.messages.list(owner, LIST_INBOX, { limit, ...(pageToken ? { pageToken } : {}) });
      pageToken = page.nextPageToken;
    }
    if (pageToken !== token)
      throw new Error(`the service's page token after ${offset} messages is ${pageToken}, not ${token}`);
  } finally {
    await database.destroy();
  }
}

/** Removes what `seedInbox` created on PostgreSQL (the SQLite file goes with its temporary folder). */
export async function dropInboxSchema(url, dataDir) {
  const database = await svc.openInboxDatabase(inboxConfig(url, dataDir));
  try {
    await sql`drop schema if exists ${sql.id(new URL(url).searchParams.get('schema'))} cascade`.execute(database.db);
  } finally {
    await database.destroy();
  }
}
