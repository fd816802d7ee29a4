/**
 * The statements the inbox server issues per benchmark request, in its order. Written by hand from
 * api-key.repository.ts, inbox.repository.ts, message.repository.ts, thread.repository.ts,
 * event.repository.ts, jobs.ts and dialect.ts (incrementCounter); the limit
 * (inbox-baseline.mjs) runs exactly these, and bench/inbox-check.mjs compares them with what the
 * built server really runs, and with what the running limit ran.
 */

const list = (names) => names.map((n) => `"${n}"`).join(', ');
const rows = (n, width) => Array.from({ length: n }, () => `(${Array.from({ length: width }, () => '?').join(', ')})`).join(', ');

/** A list item's columns: a list knows its inbox and organization, and leaves out the bodies and the source. */
export const LIST_COLUMNS = ['id', 'thread_id', 'message_id', 'labels', 'timestamp', 'from_address', 'reply_to', 'to_addresses', 'cc_addresses', 'bcc_addresses', 'subject', 'preview', 'in_reply_to', 'references_ids', 'headers', 'attachments', 'size', 'created_at', 'updated_at'];
export const THREAD_COLUMNS = ['thread_id', 'organization_id', 'inbox_id', 'subject', 'normalized_subject', 'senders', 'recipients', 'labels', 'message_count', 'size', 'preview', 'last_message_id', 'timestamp', 'received_timestamp', 'sent_timestamp', 'created_at', 'updated_at'];
export const MESSAGE_COLUMNS = ['organization_id', 'inbox_id', 'thread_id', 'message_id', 'labels', 'timestamp', 'from_address', 'reply_to', 'to_addresses', 'cc_addresses', 'bcc_addresses', 'subject', 'preview', 'text_body', 'html_body', 'in_reply_to', 'references_ids', 'headers', 'attachments', 'size', 'raw', 'created_at', 'updated_at'];
export const EVENT_COLUMNS = ['event_id', 'organization_id', 'event_type', 'inbox_id', 'pod_id', 'payload', 'created_at'];
export const JOB_COLUMNS = ['queue', 'payload', 'status', 'run_at', 'attempts', 'locked_until', 'last_error', 'created_at', 'updated_at'];

/** Labels a list leaves out unless include_spam, include_blocked or include_trash ask for them (http/pagination.ts). */
export const HIDDEN_LABELS = ['spam', 'blocked', 'trash'];
const NOT_HIDDEN = `not exists (select "message_labels"."label" from "message_labels" where "message_labels"."message_pk" = "messages"."id" and "message_labels"."label" in (${HIDDEN_LABELS.map(() => '?').join(', ')}))`;

/** Statements in SQLite's `?` form; those of n rows (or n ids) are functions of n. */
export const SQL = {
  auth: 'select "id", "organization_id" from "api_keys" where "key_hash" = ?',
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
  insertMessages: (n) => `insert into "messages" (${list(MESSAGE_COLUMNS)}) values ${rows(n, MESSAGE_COLUMNS.length)} returning "id", "inbox_id"`,
  insertLabels: (n) => `insert into "message_labels" ("message_pk", "label") values ${rows(n, 2)}`,
  insertEvents: (n) => `insert into "events" (${list(EVENT_COLUMNS)}) values ${rows(n, EVENT_COLUMNS.length)}`,
  webhooks: 'select "webhook_id", "event_types", "inbox_ids", "pod_ids", "enabled" from "webhooks" where "organization_id" = ?',
  insertJobs: (n) => `insert into "jobs" (${list(JOB_COLUMNS)}) values ${rows(n, JOB_COLUMNS.length)}`,
  // dialect.ts incrementCounter, whitespace included.
  countSend: `insert into "send_counters" ("organization_id", "day", "count")
    values (?, ?, ?)
    on conflict ("organization_id", "day") do update set "count" = "send_counters"."count" + ?
    returning "count" as value`,
};

/** `?` → `$1, $2, …` for PostgreSQL (no statement here has a literal question mark). */
export function numbered(text) {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

/** A statement's text in the dialect; `name` may carry its argument after a colon: `insertLabels:3`. */
export function statement(dialect, name) {
  const [key, arg] = name.split(':');
  const entry = SQL[key];
  if (entry === undefined) throw new Error(`no statement ${key}`);
  const text = typeof entry === 'function' ? entry(/^\d+$/.test(arg) ? Number(arg) : arg) : entry;
  return dialect === 'postgres' ? numbered(text) : text;
}

/**
 * Per scenario: the statements of one request. A send from one inbox to one other local inbox of
 * its organization, whose organization has one webhook subscribed to message.received: the
 * sending inbox read before the unit of work (its name and domain go into the source, composed
 * before the unit starts), then in the unit two inboxes looked up, two threads started, two copies, three labels (sent; received, unread), three
 * events (sent, received, delivered), one webhook job, the day's send counter.
 */
export const PLAN = {
  listFirst: ['auth', 'inbox', 'page'],
  listDeep: ['auth', 'inbox', 'pageAfter'],
  sendUnit: ['inboxes:2', 'insertThreads:2', 'insertMessages:2', 'insertLabels:3', 'insertEvents:3', 'webhooks', 'insertJobs:1', 'countSend'],
};

/**
 * The statements of sends that shared a group commit (SQLite): alone, a unit runs bare inside
 * begin … commit; with others, each runs inside its own savepoint. `units` = sends in the batch.
 */
export function sendBatch(units) {
  if (units === 1) return ['begin', ...PLAN.sendUnit, 'commit'];
  const out = ['begin'];
  for (let i = 0; i < units; i++) out.push(`savepoint:unit_${i}`, ...PLAN.sendUnit, `release:unit_${i}`);
  out.push('commit');
  return out;
}
