/**
 * The statements the inbox server issues per benchmark request, in its order. Written by hand from
 * api-key.repository.ts, inbox.repository.ts, access-list.repository.ts, message.repository.ts,
 * thread.repository.ts, event.repository.ts, jobs.ts, usage.repository.ts, search.repository.ts
 * and dialect.ts (incrementCounter); the limit
 * (inbox-baseline.mjs) runs exactly these, and bench/inbox-check.mjs compares them with what the
 * built server really runs, and with what the running limit ran.
 */

const list = (names) => names.map((n) => `"${n}"`).join(', ');
const rows = (n, width) =>
  Array.from({ length: n }, () => `(${Array.from({ length: width }, () => '?').join(', ')})`).join(', ');

/** A list item's columns: a list knows its inbox and organization, and leaves out the bodies and the source. */
export const LIST_COLUMNS = [
  'id',
  'thread_id',
  'message_id',
  'labels',
  'timestamp',
  'from_address',
  'reply_to',
  'to_addresses',
  'cc_addresses',
  'bcc_addresses',
  'subject',
  'preview',
  'in_reply_to',
  'references_ids',
  'headers',
  'attachments',
  'size',
  'created_at',
  'updated_at',
];
export const THREAD_COLUMNS = [
  'thread_id',
  'organization_id',
  'inbox_id',
  'subject',
  'normalized_subject',
  'senders',
  'recipients',
  'labels',
  'message_count',
  'size',
  'preview',
  'last_message_id',
  'timestamp',
  'received_timestamp',
  'sent_timestamp',
  'created_at',
  'updated_at',
];
export const MESSAGE_COLUMNS = [
  'organization_id',
  'inbox_id',
  'thread_id',
  'message_id',
  'labels',
  'timestamp',
  'from_address',
  'reply_to',
  'to_addresses',
  'cc_addresses',
  'bcc_addresses',
  'subject',
  'preview',
  'text_body',
  'html_body',
  'in_reply_to',
  'references_ids',
  'headers',
  'attachments',
  'size',
  'raw',
  'source_blob',
  'text_blob',
  'html_blob',
  'created_at',
  'updated_at',
];
export const EVENT_COLUMNS = [
  'event_id',
  'organization_id',
  'event_type',
  'inbox_id',
  'pod_id',
  'payload',
  'created_at',
];
export const USAGE_COLUMNS = ['organization_id', 'pod_id', 'inbox_id', 'metric', 'bucket', 'shard', 'value'];
export const JOB_COLUMNS = [
  'queue',
  'payload',
  'status',
  'run_at',
  'attempts',
  'locked_until',
  'last_error',
  'created_at',
  'updated_at',
];

/** Labels a list leaves out unless include_spam, include_blocked or include_trash ask for them (http/pagination.ts). */
export const HIDDEN_LABELS = ['spam', 'blocked', 'trash'];
const NOT_HIDDEN = `not exists (select "message_labels"."label" from "message_labels" where "message_labels"."message_pk" = "messages"."id" and "message_labels"."label" in (${HIDDEN_LABELS.map(() => '?').join(', ')}))`;

/** Statements in SQLite's `?` form; those of n rows (or n ids) are functions of n. */
export const SQL = {
  // api-key.repository.ts findKeyOwnerByHash: the key's scope (pod, inbox), its permissions, and the
  // human an unverified agent sign-up may send to (docs/decisions/0018).
  auth: 'select "api_keys"."id", "api_keys"."organization_id", "api_keys"."pod_id", "api_keys"."inbox_id", "api_keys"."permissions", "agent_signups"."human_email" from "api_keys" left join "agent_signups" on "agent_signups"."organization_id" = "api_keys"."organization_id" and "agent_signups"."verified_at" is null where "api_keys"."key_hash" = ?',
  inbox: 'select * from "inboxes" where "inbox_id" = ? and "organization_id" = ?',
  // Newest first, without what is hidden by default (spam, blocked, trash: HIDDEN_LABELS); after a
  // page_token with the keyset condition of platform/db/keyset.ts (and its redundant bound).
  page: `select ${list(LIST_COLUMNS)} from "messages" where "inbox_id" = ? and ${NOT_HIDDEN} order by "timestamp" desc, "id" desc limit ?`,
  pageAfter: `select ${list(LIST_COLUMNS)} from "messages" where "inbox_id" = ? and ${NOT_HIDDEN} and ("timestamp" <= ? and ("timestamp" < ? or ("timestamp" = ? and "id" < ?))) order by "timestamp" desc, "id" desc limit ?`,
  begin: 'begin',
  commit: 'commit',
  rollback: 'rollback',
  savepoint: (name) => `savepoint "${name}"`,
  release: (name) => `release "${name}"`,
  rollbackTo: (name) => `rollback to "${name}"`,
  inboxes: (n) => `select * from "inboxes" where "inbox_id" in (${Array.from({ length: n }, () => '?').join(', ')})`,
  insertThreads: (n) => `insert into "threads" (${list(THREAD_COLUMNS)}) values ${rows(n, THREAD_COLUMNS.length)}`,
  insertMessages: (n) =>
    `insert into "messages" (${list(MESSAGE_COLUMNS)}) values ${rows(n, MESSAGE_COLUMNS.length)} returning "id", "inbox_id"`,
  insertLabels: (n) => `insert into "message_labels" ("message_pk", "label") values ${rows(n, 2)}`,
  takeUids: `insert into folder_counters (inbox_id, folder, uid_next, modseq)
    values (?, ?, ?, 1)
    on conflict (inbox_id, folder) do update
      set uid_next = folder_counters.uid_next + ?, modseq = folder_counters.modseq + 1
    returning uid_next, modseq`,
  insertFolderMessages: (n) =>
    `insert into "folder_messages" ("inbox_id", "folder", "uid", "message_pk", "modseq") values ${rows(n, 5)}`,
  insertEvents: (n) => `insert into "events" (${list(EVENT_COLUMNS)}) values ${rows(n, EVENT_COLUMNS.length)}`,
  // access-list.repository.ts listsPresent: per probed (list level, direction) whether it has an
  // allow list (a0 …), per probed direction whether the organization blocks anything there (b0 …).
  lists: (arg) => {
    const [pairs, directions] = arg.split('x').map(Number);
    const exists = (where) => `exists (select 1 as "one" from "access_list_entries" where ${where})`;
    const allow = Array.from(
      { length: pairs },
      (_, i) =>
        `${exists('"organization_id" = ? and "scope_key" = ? and "direction" = ? and "list_type" = ?')} as "a${i}"`,
    );
    const block = Array.from(
      { length: directions },
      (_, i) => `${exists('"organization_id" = ? and "direction" = ? and "list_type" = ?')} as "b${i}"`,
    );
    return `select ${[...allow, ...block].join(', ')}`;
  },
  // The webhook's own scope (pod_id, inbox_id) narrows what it receives (event.service.ts webhookMatches).
  webhooks:
    'select "webhook_id", "event_types", "inbox_ids", "pod_ids", "enabled", "pod_id", "inbox_id" from "webhooks" where "organization_id" = ?',
  insertJobs: (n) => `insert into "jobs" (${list(JOB_COLUMNS)}) values ${rows(n, JOB_COLUMNS.length)}`,
  // usage.repository.ts addUsage: the unit's usage deltas and event counts, one shard, rows in key order.
  addUsage: (n) =>
    `insert into "usage_counts" (${list(USAGE_COLUMNS)}) values ${rows(n, USAGE_COLUMNS.length)} on conflict ("organization_id", "pod_id", "inbox_id", "metric", "bucket", "shard") do update set "value" = "usage_counts"."value" + "excluded"."value"`,
  // search.repository.ts stillStored: before a batch's deferred search documents (group-commit.ts
  // afterUnits), which copies a later unit of the batch has not deleted.
  stillStored: (n) => `select "id" from "messages" where "id" in (${Array.from({ length: n }, () => '?').join(', ')})`,
  // search.repository.ts indexMessages (FTS5 on SQLite): each copy's document, then its words added
  // to its thread's document (read first; replaced when there was one).
  searchMessage: 'insert into message_search (rowid, scope, subject, addresses, body) values (?, ?, ?, ?, ?)',
  searchThreadFind: 'select rowid, subject, addresses, body from thread_search where thread_search match ?',
  searchThreadDelete: 'delete from thread_search where rowid = ?',
  searchThread:
    'insert into thread_search (rowid, scope, subject, addresses, body, thread_id) values (?, ?, ?, ?, ?, ?)',
  // dialect.ts incrementCounter, whitespace included.
  countSend: `insert into "send_counters" ("organization_id", "day", "count")
    values (?, ?, ?)
    on conflict ("organization_id", "day") do update set "count" = "send_counters"."count" + ?
    returning "count" as value`,
};

/**
 * Statements whose PostgreSQL text is not SQLite's with numbered parameters: the search index
 * (search.repository.ts: tsvector columns built with array_to_tsvector from the same words, the
 * thread's document kept as words and upserted). Whitespace as in the source's `sql` templates.
 */
const vector = 'array_to_tsvector(?::text[])';
export const POSTGRES_SQL = {
  searchMessage: `insert into message_search (message_pk, organization_id, pod_id, inbox_id, subject, addresses, document)
        values (?, ?, ?, ?, ${vector}, ${vector}, ${vector})`,
  searchThreadFind: 'select rank_pk, subject_words, address_words, body_words from thread_search where thread_id = ?',
  searchThread: `insert into thread_search (thread_id, rank_pk, organization_id, pod_id, inbox_id, subject_words, address_words, body_words, subject, addresses, document)
      values (?, ?, ?, ?, ?, ?, ?, ?, ${vector}, ${vector}, ${vector})
      on conflict (thread_id) do update set rank_pk = excluded.rank_pk, subject_words = excluded.subject_words, address_words = excluded.address_words, body_words = excluded.body_words,
        subject = excluded.subject, addresses = excluded.addresses, document = excluded.document`,
};

/** `?` → `$1, $2, …` for PostgreSQL (no statement here has a literal question mark). */
export function numbered(text) {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

/** A statement's text in the dialect; `name` may carry its argument after a colon: `insertLabels:3`. */
export function statement(dialect, name) {
  const [key, arg] = name.split(':');
  const entry = (dialect === 'postgres' ? POSTGRES_SQL[key] : undefined) ?? SQL[key];
  if (entry === undefined) throw new Error(`no statement ${key}`);
  const text = typeof entry === 'function' ? entry(/^\d+$/.test(arg) ? Number(arg) : arg) : entry;
  return dialect === 'postgres' ? numbered(text) : text;
}

/**
 * Per scenario: the statements of one request. A send from one inbox to one other local inbox of
 * its organization, whose organization has one webhook subscribed to message.received: the
 * sending inbox read before the unit of work (its name and domain go into the source, composed
 * before the unit starts), then in the unit two inboxes looked up, the allow/block lists probed (3
 * levels of the sender for sending, 3 of the recipient for receiving), two threads started, two
 * copies, three labels (sent; received, unread), three events (sent, received, delivered), one
 * webhook job, nine usage counts in one upsert, a UID in Sent and one in INBOX for mail clients
 * (two counters, two folder rows: the IMAP projection, decision 0045), the day's send counter (the
 * rows other sends write too, last: they stay locked until the commit on PostgreSQL); and two
 * message and two thread search documents (`sendSearch`: at the end of a SQLite batch, before the
 * usage counts on PostgreSQL, see `sendBatch`).
 */
export const PLAN = {
  listFirst: ['auth', 'inbox', 'page'],
  listDeep: ['auth', 'inbox', 'pageAfter'],
  sendUnit: [
    'inboxes:2',
    'lists:6x2',
    'insertThreads:2',
    'insertMessages:2',
    'insertLabels:3',
    'insertEvents:3',
    'webhooks',
    'insertJobs:1',
    'addUsage:9',
    'takeUids',
    'takeUids',
    'insertFolderMessages:2',
    'countSend',
  ],
  sendSearch: [
    'searchMessage',
    'searchMessage',
    'searchThreadFind',
    'searchThread',
    'searchThreadFind',
    'searchThread',
  ],
};

/**
 * The statements of sends that shared a group commit. SQLite: alone, a unit runs bare inside
 * begin … commit, its search documents last; with others, each runs inside its own savepoint, and
 * after the last one the search documents of each, once its copies are found still stored.
 * PostgreSQL (one send per transaction): the search documents where the unit asks for them,
 * before the usage counts, the folders' UIDs and the day's send counter. `units` = sends in the batch.
 */
export function sendBatch(units, dialect = 'sqlite') {
  if (dialect === 'postgres') {
    const unit = [...PLAN.sendUnit];
    unit.splice(unit.indexOf('addUsage:9'), 0, ...PLAN.sendSearch);
    return Array.from({ length: units }, () => ['begin', ...unit, 'commit']).flat();
  }
  if (units === 1) return ['begin', ...PLAN.sendUnit, ...PLAN.sendSearch, 'commit'];
  const out = ['begin'];
  for (let i = 0; i < units; i++) out.push(`savepoint:unit_${i}`, ...PLAN.sendUnit, `release:unit_${i}`);
  for (let i = 0; i < units; i++) out.push('stillStored:2', ...PLAN.sendSearch);
  out.push('commit');
  return out;
}
