import type { Message, AttachmentMeta, ContentDisposition } from '../core/message.js';
import type { SelectQueryBuilder } from 'kysely';
import type { Dialect } from '../../platform/db/types.js';
import {
  asciiLower,
  containsAsciiCaseless,
  dialectOf,
  forUpdate,
  incrementCounter,
} from '../../platform/db/dialect.js';
import { afterKey } from '../../platform/db/keyset.js';
import { insertCompiledOnce, runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import type { Cursor } from '../../platform/db/cursor.js';
import type { ListFilter } from '../lists/list-query.js';
import type { MessageRow } from '../schema/message.table.js';
import {
  blobIdsOf,
  CHUNK_BYTES,
  claimBlobs,
  openBlob,
  readBlob,
  storedBodies,
  type MessageBlobs,
} from './message-blobs.js';
import { nextTurn } from '../../platform/turns.js';

/** A message about to be stored: no key yet, and the source and attachment bytes with it. */
export interface NewMessage extends Omit<Message, 'pk'> {
  readonly raw: Buffer;
  readonly attachmentContents: readonly Buffer[];
  /** The blobs its large bytes were written to ahead of the unit of work; those bytes are stored only there. */
  readonly blobs?: MessageBlobs;
}

const EMPTY = Buffer.alloc(0);

/** JSON columns (address lists, labels, references, attachment metadata), read and written; drafts' too. */
export const json = <T>(text: string | null, fallback: T): T => (text === null ? fallback : (JSON.parse(text) as T));
export const jsonOrNull = (list: readonly unknown[]): string | null => (list.length ? JSON.stringify(list) : null);

/** Columns of a list item: everything but the bodies and the source. */
const SUMMARY_COLUMNS = [
  'id',
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
  'in_reply_to',
  'references_ids',
  'headers',
  'attachments',
  'size',
  'created_at',
  'updated_at',
] as const;
const FULL_COLUMNS = [...SUMMARY_COLUMNS, 'text_body', 'html_body', 'text_blob', 'html_blob'] as const;
type FullRow = Pick<MessageRow, (typeof FULL_COLUMNS)[number]>;

type SummaryRow = Omit<Pick<MessageRow, (typeof SUMMARY_COLUMNS)[number]>, 'organization_id' | 'inbox_id'> &
  Partial<Pick<MessageRow, 'organization_id' | 'inbox_id' | 'text_body' | 'html_body'>>;

/** `known` supplies the columns a list leaves out (never copy a row object to add them: it is slow). */
export function messageFromRow(row: SummaryRow, known?: { organizationId: string; inboxId: string }): Message {
  return {
    pk: Number(row.id),
    organizationId: known?.organizationId ?? (row.organization_id as string),
    inboxId: known?.inboxId ?? (row.inbox_id as string),
    threadId: row.thread_id,
    messageId: row.message_id,
    labels: json<string[]>(row.labels, []),
    timestamp: row.timestamp,
    from: row.from_address,
    replyTo: json<string[]>(row.reply_to, []),
    to: json<string[]>(row.to_addresses, []),
    cc: json<string[]>(row.cc_addresses, []),
    bcc: json<string[]>(row.bcc_addresses, []),
    subject: row.subject,
    preview: row.preview,
    text: row.text_body ?? null,
    html: row.html_body ?? null,
    inReplyTo: row.in_reply_to,
    references: json<string[]>(row.references_ids, []),
    headers: json<Record<string, string> | null>(row.headers, null),
    attachments: json<AttachmentMeta[]>(row.attachments, []),
    size: Number(row.size),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A message read with FULL_COLUMNS: its bodies from its row, or from their blobs when they are large. */
async function fullMessage(db: Db, row: FullRow): Promise<Message> {
  const message = messageFromRow(row);
  if (row.text_blob === null && row.html_blob === null) return message;
  return { ...message, ...(await storedBodies(db, row)) };
}

/** `fullMessage` of each row, in order. */
async function fullMessages(db: Db, rows: readonly FullRow[]): Promise<Message[]> {
  const out: Message[] = [];
  for (const row of rows) out.push(await fullMessage(db, row));
  return out;
}

/**
 * Bind variables per statement: SQLite allows 32,766 (PostgreSQL 65,535), so a multi-row insert
 * takes at most floor(BIND_BUDGET / columns) rows and a larger one is split into such chunks.
 */
const BIND_BUDGET = 30_000;

/** `rows` in chunks that each stay within BIND_BUDGET bind variables; one chunk (the same statement as unsplit) when they fit. */
function chunksOf<T extends object>(rows: readonly T[]): (readonly T[])[] {
  const size = Math.max(1, Math.floor(BIND_BUDGET / Object.keys(rows[0] ?? {}).length));
  if (rows.length <= size) return [rows];
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

/**
 * Stores the copies of one message (one per inbox), their labels and attachments: three
 * statements whatever the number of copies, as long as each fits SQLite's bind-variable limit
 * (more rows are inserted in chunks: 1304 copies, 3750 attachment rows per statement). Returns
 * each copy's key by inbox.
 */
export async function insertMessages(db: Db, messages: readonly NewMessage[]): Promise<Map<string, number>> {
  if (!messages.length) return new Map();
  const values = messages.map((m) => ({
    organization_id: m.organizationId,
    inbox_id: m.inboxId,
    thread_id: m.threadId,
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
    text_body: m.blobs?.text != null ? null : m.text,
    html_body: m.blobs?.html != null ? null : m.html,
    in_reply_to: m.inReplyTo,
    references_ids: jsonOrNull(m.references),
    headers: m.headers && Object.keys(m.headers).length ? JSON.stringify(m.headers) : null,
    attachments: jsonOrNull(m.attachments),
    size: m.size,
    raw: m.blobs?.source != null ? null : m.raw,
    source_blob: m.blobs?.source ?? null,
    text_blob: m.blobs?.text ?? null,
    html_blob: m.blobs?.html ?? null,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
  }));
  const rows: { id: number | string | bigint; inbox_id: string }[] = [];
  // Copies with large bodies one statement each, a turn of the event loop apart: a statement
  // holds the event loop for as long as it writes (SQLite) or serializes (pg) its values.
  const large = messages.some((m) => (m.text?.length ?? 0) + (m.html?.length ?? 0) >= CHUNK_BYTES);
  for (const chunk of large ? values.map((v) => [v]) : chunksOf(values)) {
    if (large) await nextTurn();
    rows.push(
      ...(await insertCompiledOnce(db, 'messages.insert', chunk, () =>
        db.insertInto('messages').values(chunk).returning(['id', 'inbox_id']),
      )),
    );
  }
  // RETURNING order is not promised; the inbox names the copy.
  const pks = new Map(rows.map((r) => [r.inbox_id, Number(r.id)]));
  const labels = messages.flatMap((m) =>
    m.labels.map((label) => ({ message_pk: pks.get(m.inboxId) as number, label })),
  );
  if (labels.length)
    for (const chunk of chunksOf(labels))
      await insertCompiledOnce(db, 'message_labels.insert', chunk, () => db.insertInto('message_labels').values(chunk));
  const attachments = messages.flatMap((m) =>
    m.attachments.map((a, i) => ({
      message_pk: pks.get(m.inboxId) as number,
      attachment_id: a.attachmentId,
      filename: a.filename,
      content_type: a.contentType,
      content_disposition: a.contentDisposition,
      content_id: a.contentId,
      size: a.size,
      content: m.blobs?.attachments[i] != null ? EMPTY : (m.attachmentContents[i] as Buffer),
      content_blob: m.blobs?.attachments[i] ?? null,
    })),
  );
  if (attachments.length)
    for (const chunk of chunksOf(attachments))
      await insertCompiledOnce(db, 'attachments.insert', chunk, () => db.insertInto('attachments').values(chunk));
  // The copies of one delivery name the same blobs.
  await claimBlobs(db, [...new Set(messages.flatMap((m) => blobIdsOf(m.blobs)))]);
  return pks;
}

/**
 * A message of an inbox by Message-ID, locked with `lock`. With `bodies: false` its text and HTML
 * are left out (null), and a large body's blob is not read: for changes that keep the bodies as
 * they are (a delete, a download link), so that a unit of work never reads megabytes it drops.
 */
export async function findMessage(
  db: Db,
  organizationId: string,
  inboxId: string,
  messageId: string,
  options: { lock?: Dialect; bodies?: boolean } = {},
): Promise<Message | undefined> {
  const named = <O>(q: SelectQueryBuilder<InboxDatabase, 'messages', O>) => {
    const found = q
      .where('inbox_id', '=', inboxId)
      .where('message_id', '=', messageId)
      .where('organization_id', '=', organizationId);
    return options.lock ? forUpdate(found, options.lock) : found;
  };
  if (options.bodies === false) {
    const row = await named(db.selectFrom('messages').select(SUMMARY_COLUMNS)).executeTakeFirst();
    return row && messageFromRow(row);
  }
  const row = await named(db.selectFrom('messages').select(FULL_COLUMNS)).executeTakeFirst();
  return row ? fullMessage(db, row) : undefined;
}

function withLabels<O>(
  q: SelectQueryBuilder<InboxDatabase, 'messages', O>,
  labels: readonly string[],
): SelectQueryBuilder<InboxDatabase, 'messages', O> {
  let out = q;
  for (const label of labels) {
    out = out.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('message_labels')
          .select('message_labels.label')
          .whereRef('message_labels.message_pk', '=', 'messages.id')
          .where('message_labels.label', '=', label),
      ),
    );
  }
  return out;
}

// A list knows its inbox and organization: better-sqlite3 builds a row object property by
// property, and past about twenty columns that costs more than the rest of the request.
const LIST_COLUMNS = SUMMARY_COLUMNS.filter((c) => c !== 'organization_id' && c !== 'inbox_id');

/** One page (limit + 1 rows) of an inbox's messages by (timestamp, id): an index range, never OFFSET. */
export async function listMessages(
  db: Db,
  scope: { organizationId: string; inboxId: string },
  filter: ListFilter,
  page: { limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<Message[]> {
  const cursor = page.after;
  // Compiled once per shape of filter: every list of an inbox runs it.
  const contains = messageContains(filter);
  const key = `messages.list:${filter.before ? 'b' : ''}${filter.after ? 'a' : ''}:${filter.labels.length}:${filter.hidden.length}:${contains.map((c) => c.columns.join('+')).join(',')}:${cursor ? 'k' : ''}:${page.direction}`;
  const parameters = [
    scope.inboxId,
    ...(filter.before ? [filter.before] : []),
    ...(filter.after ? [filter.after] : []),
    ...filter.labels,
    ...filter.hidden,
    ...contains.flatMap((c) => c.columns.map(() => c.needle)),
    ...(cursor ? [cursor.sort, cursor.sort, cursor.sort, cursor.tiebreak] : []),
    page.limit + 1,
  ];
  const rows = await runCompiledOnce(db, key, parameters, () => {
    let q = db.selectFrom('messages').select(LIST_COLUMNS).where('inbox_id', '=', scope.inboxId);
    if (filter.before) q = q.where('timestamp', '<', filter.before);
    if (filter.after) q = q.where('timestamp', '>', filter.after);
    q = withLabels(q, filter.labels);
    if (filter.hidden.length)
      q = q.where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('message_labels')
              .select('message_labels.label')
              .whereRef('message_labels.message_pk', '=', 'messages.id')
              .where('message_labels.label', 'in', filter.hidden),
          ),
        ),
      );
    const dialect = dialectOf(db);
    for (const c of contains)
      q = q.where((eb) => eb.or(c.columns.map((column) => containsAsciiCaseless(eb, dialect, column, c.needle))));
    if (cursor) q = q.where((eb) => afterKey(eb, 'timestamp', 'id', cursor, page.direction));
    return q
      .orderBy('timestamp', page.direction)
      .orderBy('id', page.direction)
      .limit(page.limit + 1);
  });
  return rows.map((row) => messageFromRow(row, scope));
}

/**
 * The 0.5 substring filters of message lists: each value must occur in its field. Address lists
 * are JSON text, so a value is looked for in its JSON-escaped form (what the column holds).
 */
function messageContains(filter: ListFilter): { columns: string[]; needle: string }[] {
  const out: { columns: string[]; needle: string }[] = [];
  const escaped = (v: string) => asciiLower(JSON.stringify(v).slice(1, -1));
  for (const v of filter.contains.from ?? []) out.push({ columns: ['from_address'], needle: asciiLower(v) });
  for (const v of filter.contains.to ?? [])
    out.push({ columns: ['to_addresses', 'cc_addresses', 'bcc_addresses'], needle: escaped(v) });
  for (const v of filter.contains.subject ?? []) out.push({ columns: ['subject'], needle: asciiLower(v) });
  return out;
}

/**
 * Every message of a thread, oldest first, with bodies; with `bodies: false` without them (null,
 * no blob read), for what changes a thread's labels or summary and leaves the bodies alone.
 */
export async function listThreadMessages(
  db: Db,
  threadId: string,
  options: { bodies?: boolean } = {},
): Promise<Message[]> {
  const ofThread = <O>(q: SelectQueryBuilder<InboxDatabase, 'messages', O>) =>
    q.where('thread_id', '=', threadId).orderBy('timestamp', 'asc').orderBy('id', 'asc');
  if (options.bodies === false)
    return (await ofThread(db.selectFrom('messages').select(SUMMARY_COLUMNS)).execute()).map((row) =>
      messageFromRow(row),
    );
  return fullMessages(db, await ofThread(db.selectFrom('messages').select(FULL_COLUMNS)).execute());
}

/**
 * For threading: which thread of each of `inboxIds` holds a message with one of `messageIds`
 * (the new message's In-Reply-To and References). Newest match first.
 */
export async function findThreadsHoldingMessages(
  db: Db,
  inboxIds: readonly string[],
  messageIds: readonly string[],
): Promise<{ inboxId: string; threadId: string }[]> {
  if (!inboxIds.length || !messageIds.length) return [];
  // Compiled once per count of inboxes and ids: every send with references and every inbound message (twice) runs it.
  const rows = await runCompiledOnce(
    db,
    `messages.threads-holding:${inboxIds.length}:${messageIds.length}`,
    [...inboxIds, ...messageIds],
    () =>
      db
        .selectFrom('messages')
        .select(['inbox_id', 'thread_id'])
        .where('inbox_id', 'in', inboxIds)
        .where('message_id', 'in', messageIds)
        .orderBy('timestamp', 'desc')
        .orderBy('id', 'desc'),
  );
  return rows.map((r) => ({ inboxId: r.inbox_id, threadId: r.thread_id }));
}

/** Replaces a message's labels (the JSON column and the label rows) in the caller's transaction. */
export async function updateMessageLabels(
  db: Db,
  pk: number,
  labels: readonly string[],
  added: readonly string[],
  removed: readonly string[],
  updatedAt: string,
): Promise<void> {
  await db
    .updateTable('messages')
    .set({ labels: JSON.stringify(labels), updated_at: updatedAt })
    .where('id', '=', pk)
    .execute();
  if (removed.length)
    await db.deleteFrom('message_labels').where('message_pk', '=', pk).where('label', 'in', removed).execute();
  if (added.length)
    await db
      .insertInto('message_labels')
      .values(added.map((label) => ({ message_pk: pk, label })))
      .execute();
}

/** The union of the labels of a thread's messages. */
export async function findThreadMessageLabels(db: Db, threadId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('message_labels')
    .innerJoin('messages', 'messages.id', 'message_labels.message_pk')
    .select('message_labels.label')
    .distinct()
    .where('messages.thread_id', '=', threadId)
    .execute();
  return rows.map((r) => r.label);
}

/** An attachment of a message of a thread (in an organization, optionally in one inbox). */
export async function findThreadAttachment(
  db: Db,
  organizationId: string,
  threadId: string,
  attachmentId: string,
  inboxId?: string,
): Promise<{ messagePk: number; inboxId: string; attachment: AttachmentMeta } | undefined> {
  let q = db
    .selectFrom('messages')
    .innerJoin('attachments', 'attachments.message_pk', 'messages.id')
    .select([
      'messages.id',
      'messages.inbox_id',
      'attachments.attachment_id',
      'attachments.filename',
      'attachments.size',
      'attachments.content_type',
      'attachments.content_disposition',
      'attachments.content_id',
    ])
    .where('messages.thread_id', '=', threadId)
    .where('messages.organization_id', '=', organizationId)
    .where('attachments.attachment_id', '=', attachmentId);
  if (inboxId !== undefined) q = q.where('messages.inbox_id', '=', inboxId);
  const row = await q.executeTakeFirst();
  if (!row) return undefined;
  return {
    messagePk: Number(row.id),
    inboxId: row.inbox_id,
    attachment: {
      attachmentId: row.attachment_id,
      filename: row.filename,
      size: Number(row.size),
      contentType: row.content_type,
      contentDisposition: row.content_disposition as ContentDisposition | null,
      contentId: row.content_id,
    },
  };
}

export async function findAttachmentContent(
  db: Db,
  messagePk: number,
  attachmentId: string,
): Promise<{ filename: string | null; contentType: string | null; content: Buffer } | undefined> {
  const row = await db
    .selectFrom('attachments')
    .select(['filename', 'content_type', 'content', 'content_blob'])
    .where('message_pk', '=', messagePk)
    .where('attachment_id', '=', attachmentId)
    .executeTakeFirst();
  if (!row) return undefined;
  const content = row.content_blob !== null ? await readBlob(db, Number(row.content_blob)) : Buffer.from(row.content);
  return content ? { filename: row.filename, contentType: row.content_type, content } : undefined;
}

/** The stored RFC 5322 source of a message (from its blob when it was stored so), or undefined when none was kept. */
export async function findRawSource(db: Db, messagePk: number): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('messages')
    .select(['raw', 'source_blob'])
    .where('id', '=', messagePk)
    .executeTakeFirst();
  return row ? sourceOf(db, row) : undefined;
}

/**
 * The sources kept in the messages' own row (small ones; those in blobs are left out), by key, in
 * one statement: what a header sync of a whole folder reads.
 */
export async function findRowSources(db: Db, messagePks: readonly number[]): Promise<Map<number, Buffer>> {
  if (!messagePks.length) return new Map();
  const rows = await db
    .selectFrom('messages')
    .select(['id', 'raw'])
    .where('id', 'in', [...messagePks])
    .where('source_blob', 'is', null)
    .execute();
  return new Map(rows.flatMap((r) => (r.raw ? [[Number(r.id), Buffer.from(r.raw)] as const] : [])));
}

/**
 * The stored source of a message as its size and its bytes in pieces (IMAP streams it), or
 * undefined when none was kept: a small source in one piece, a blob's piece by piece.
 */
export async function openRawSource(
  db: Db,
  messagePk: number,
): Promise<{ size: number; pieces: AsyncIterable<Buffer> } | undefined> {
  const row = await db
    .selectFrom('messages')
    .select(['raw', 'source_blob'])
    .where('id', '=', messagePk)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.source_blob !== null) return openBlob(db, Number(row.source_blob));
  if (!row.raw) return undefined;
  const raw = Buffer.from(row.raw);
  return {
    size: raw.length,
    pieces: (async function* () {
      yield raw;
    })(),
  };
}

/** The source of a message whose `raw` and `source_blob` columns were read already. */
export async function sourceOf(
  db: Db,
  row: { raw: Uint8Array | null; source_blob: number | string | null },
): Promise<Buffer | undefined> {
  if (row.source_blob !== null) return readBlob(db, Number(row.source_blob));
  return row.raw ? Buffer.from(row.raw) : undefined;
}

/** Counts one sent message for the organization's UTC day; returns the day's count so far. */
export async function incrementSendCount(db: Db, organizationId: string, day: string): Promise<number> {
  return incrementCounter(db, 'send_counters', { organization_id: organizationId, day }, 'count');
}

// The download-link signing key lives in service_secrets, created once by whichever process needs it first.

export async function findServiceSecret(db: Db, name: string): Promise<string | undefined> {
  return (await db.selectFrom('service_secrets').select('value').where('name', '=', name).executeTakeFirst())?.value;
}

/** Stores the secret unless another process stored one first; the stored value wins either way. */
export async function insertServiceSecretIfAbsent(db: Db, name: string, value: string): Promise<void> {
  await db
    .insertInto('service_secrets')
    .values({ name, value })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/**
 * Messages by key (search results, batch reads, IMAP), without bodies; in no particular order
 * unless locked with `lock` (then by key, so that writers lock alike).
 */
export async function findMessagesByPks(
  db: Db,
  pks: readonly number[],
  options: { lock?: Dialect } = {},
): Promise<Message[]> {
  if (!pks.length) return [];
  let q = db
    .selectFrom('messages')
    .select(SUMMARY_COLUMNS)
    .where('id', 'in', [...pks]);
  if (options.lock) q = forUpdate(q.orderBy('id'), options.lock);
  const rows = await q.execute();
  return rows.map((row) => messageFromRow(row));
}

/** Messages of an inbox by Message-ID (batch reads and updates), without bodies, locked with `lock`. */
export async function findMessagesByIds(
  db: Db,
  organizationId: string,
  inboxId: string,
  messageIds: readonly string[],
  options: { lock?: Dialect } = {},
): Promise<Message[]> {
  if (!messageIds.length) return [];
  let q = db
    .selectFrom('messages')
    .select(SUMMARY_COLUMNS)
    .where('inbox_id', '=', inboxId)
    .where('organization_id', '=', organizationId)
    .where('message_id', 'in', [...messageIds])
    .orderBy('id');
  if (options.lock) q = forUpdate(q, options.lock);
  return (await q.execute()).map((row) => messageFromRow(row));
}

/** Deletes one message (its labels and attachments cascade; the search index follows). */
export async function deleteMessageRow(db: Db, pk: number): Promise<void> {
  await db.deleteFrom('messages').where('id', '=', pk).execute();
}

/** A page of a thread's messages, newest first by (timestamp, id), with bodies: limit + 1 rows. */
export async function listThreadMessagesPage(
  db: Db,
  threadId: string,
  limit: number,
  after?: Cursor,
): Promise<Message[]> {
  let q = db.selectFrom('messages').select(FULL_COLUMNS).where('thread_id', '=', threadId);
  if (after) q = q.where((eb) => afterKey(eb, 'timestamp', 'id', after, 'desc'));
  const rows = await q
    .orderBy('timestamp', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return fullMessages(db, rows);
}
