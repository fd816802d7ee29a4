import type { Thread } from '../core/thread.js';
import type { Dialect } from '../../platform/db/types.js';
import { asciiLower, containsAsciiCaseless, dialectOf, forUpdate } from '../../platform/db/dialect.js';
import { afterKey } from '../../platform/db/keyset.js';
import { insertCompiledOnce, runCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db } from '../schema/database.js';
import type { Cursor } from '../../platform/db/cursor.js';
import type { ListFilter } from '../lists/list-query.js';
import type { ThreadRow } from '../schema/thread.table.js';

export function threadFromRow(row: ThreadRow): Thread {
  return {
    threadId: row.thread_id,
    organizationId: row.organization_id,
    inboxId: row.inbox_id,
    subject: row.subject,
    normalizedSubject: row.normalized_subject,
    senders: JSON.parse(row.senders) as string[],
    recipients: JSON.parse(row.recipients) as string[],
    labels: JSON.parse(row.labels) as string[],
    messageCount: Number(row.message_count),
    size: Number(row.size),
    preview: row.preview,
    lastMessageId: row.last_message_id,
    timestamp: row.timestamp,
    receivedTimestamp: row.received_timestamp,
    sentTimestamp: row.sent_timestamp,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toRow(t: Thread) {
  return {
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

/** One INSERT, compiled once per number of threads (every send starts one or more). */
export async function insertThreads(db: Db, threads: readonly Thread[]): Promise<void> {
  if (!threads.length) return;
  const rows = threads.map(toRow);
  await insertCompiledOnce(db, 'threads.insert', rows, () => db.insertInto('threads').values(rows));
}

/** Writes back a thread's summary after a message joined it or changed. */
export async function updateThread(db: Db, thread: Thread): Promise<void> {
  const { thread_id: threadId, organization_id: _o, inbox_id: _i, created_at: _c, ...changes } = toRow(thread);
  // Compiled once: every reply and every threaded inbound message runs it.
  await runCompiledOnce(db, 'threads.update', [...Object.values(changes), threadId], () =>
    db.updateTable('threads').set(changes).where('thread_id', '=', threadId),
  );
}

export async function updateThreadLabels(
  db: Db,
  threadId: string,
  labels: readonly string[],
  updatedAt: string,
): Promise<void> {
  await db
    .updateTable('threads')
    .set({ labels: JSON.stringify(labels), updated_at: updatedAt })
    .where('thread_id', '=', threadId)
    .execute();
}

/**
 * Threads about to change in this transaction, locked against concurrent writers in one fixed
 * order (by id): two transactions that lock the same threads never wait for each other crosswise.
 * PostgreSQL locks the rows in the order the query returns them, hence ORDER BY and sorted ids.
 */
export async function findThreadsForUpdate(db: Db, threadIds: readonly string[], dialect: Dialect): Promise<Thread[]> {
  if (!threadIds.length) return [];
  const ids = [...new Set(threadIds)].sort();
  const rows = await runCompiledOnce(db, `threads.for-update:${dialect}:${ids.length}`, ids, () =>
    forUpdate(db.selectFrom('threads').selectAll().where('thread_id', 'in', ids).orderBy('thread_id'), dialect),
  );
  return rows.map(threadFromRow);
}

/**
 * The newest threads of an inbox with this normalized subject key (index `threads_subject`): the
 * candidates of the subject fallback of threading (mailstore/threading.ts), which then checks their participants.
 */
export async function findRecentThreadsBySubject(
  db: Db,
  inboxId: string,
  subjectKey: string,
  limit: number,
): Promise<Thread[]> {
  const rows = await runCompiledOnce(db, 'threads.by-subject', [inboxId, subjectKey, limit], () =>
    db
      .selectFrom('threads')
      .selectAll()
      .where('inbox_id', '=', inboxId)
      .where('normalized_subject', '=', subjectKey)
      .orderBy('timestamp', 'desc')
      .limit(limit),
  );
  return rows.map(threadFromRow);
}

export async function findThread(
  db: Db,
  organizationId: string,
  threadId: string,
  inboxId?: string,
): Promise<Thread | undefined> {
  let q = db
    .selectFrom('threads')
    .selectAll()
    .where('thread_id', '=', threadId)
    .where('organization_id', '=', organizationId);
  if (inboxId !== undefined) q = q.where('inbox_id', '=', inboxId);
  const row = await q.executeTakeFirst();
  return row ? threadFromRow(row) : undefined;
}

/** Deletes a thread and its messages (their labels and attachments cascade). */
export async function deleteThreadWithMessages(db: Db, threadId: string): Promise<void> {
  await db.deleteFrom('messages').where('thread_id', '=', threadId).execute();
  await db.deleteFrom('threads').where('thread_id', '=', threadId).execute();
}

/**
 * One page (limit + 1 rows) of an inbox's or an organization's threads by (timestamp, id), an
 * index range in both cases. A label filter asks, per label, whether a message of the thread has it.
 */
export async function listThreads(
  db: Db,
  scope: { readonly inboxId: string } | { readonly organizationId: string; readonly podId?: string },
  filter: ListFilter,
  page: { limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<(Thread & { pk: number })[]> {
  let q = db.selectFrom('threads').selectAll();
  q =
    'inboxId' in scope
      ? q.where('inbox_id', '=', scope.inboxId)
      : q.where('organization_id', '=', scope.organizationId);
  if ('podId' in scope && scope.podId !== undefined) {
    const podId = scope.podId;
    q = q.where('inbox_id', 'in', (eb) =>
      eb.selectFrom('inboxes').select('inboxes.inbox_id').where('inboxes.pod_id', '=', podId),
    );
  }
  if (filter.before) q = q.where('timestamp', '<', filter.before);
  if (filter.after) q = q.where('timestamp', '>', filter.after);
  for (const label of filter.labels) {
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('messages')
          .innerJoin('message_labels', 'message_labels.message_pk', 'messages.id')
          .select('messages.id')
          .whereRef('messages.thread_id', '=', 'threads.thread_id')
          .where('message_labels.label', '=', label),
      ),
    );
  }
  if (filter.hidden.length) {
    // A thread is listed while one of its messages is not hidden (a spam reply does not hide the thread).
    const hidden = filter.hidden;
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('messages')
          .select('messages.id')
          .whereRef('messages.thread_id', '=', 'threads.thread_id')
          .where((m) =>
            m.not(
              m.exists(
                m
                  .selectFrom('message_labels')
                  .select('message_labels.label')
                  .whereRef('message_labels.message_pk', '=', 'messages.id')
                  .where('message_labels.label', 'in', hidden),
              ),
            ),
          ),
      ),
    );
  }
  // The 0.5 substring filters; senders and recipients are JSON text (values looked for JSON-escaped).
  const dialect = dialectOf(db);
  const escaped = (v: string) => asciiLower(JSON.stringify(v).slice(1, -1));
  for (const v of filter.contains.senders ?? [])
    q = q.where((eb) => containsAsciiCaseless(eb, dialect, 'senders', escaped(v)));
  for (const v of filter.contains.recipients ?? [])
    q = q.where((eb) => containsAsciiCaseless(eb, dialect, 'recipients', escaped(v)));
  for (const v of filter.contains.subject ?? [])
    q = q.where((eb) => containsAsciiCaseless(eb, dialect, 'subject', asciiLower(v)));
  const cursor = page.after;
  if (cursor) q = q.where((eb) => afterKey(eb, 'timestamp', 'id', cursor, page.direction));
  const rows = await q
    .orderBy('timestamp', page.direction)
    .orderBy('id', page.direction)
    .limit(page.limit + 1)
    .execute();
  return rows.map((r) => ({ ...threadFromRow(r), pk: Number(r.id) }));
}

/** Threads by id (search results), in no particular order. */
export async function findThreadsByIds(db: Db, threadIds: readonly string[]): Promise<Thread[]> {
  if (!threadIds.length) return [];
  const rows = await db
    .selectFrom('threads')
    .selectAll()
    .where('thread_id', 'in', [...threadIds])
    .execute();
  return rows.map(threadFromRow);
}
