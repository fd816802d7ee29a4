import { preparedRows } from '../../platform/db/prepared.js';
import type { Db } from '../database.js';
import { threadFromRow, type Thread } from '../threads/thread.repository.js';

/**
 * The newest threads of an inbox with this normalized subject key (index `threads_subject`): the
 * candidates of the subject fallback of inbound threading, which then checks their participants.
 */
export async function findRecentThreadsBySubject(db: Db, inboxId: string, subjectKey: string, limit: number): Promise<Thread[]> {
  const rows = await preparedRows(db, 'inbound.threads-by-subject', [inboxId, subjectKey, limit], () =>
    db.selectFrom('threads').selectAll().where('inbox_id', '=', inboxId).where('normalized_subject', '=', subjectKey).orderBy('timestamp', 'desc').limit(limit),
  );
  return rows.map(threadFromRow);
}

/** The inboxes among `inboxIds` that already turned the report `messageId` into bounces. */
export async function findDeliveryReports(db: Db, inboxIds: readonly string[], messageId: string): Promise<Set<string>> {
  if (!inboxIds.length) return new Set();
  const rows = await db.selectFrom('delivery_reports').select('inbox_id').where('inbox_id', 'in', [...inboxIds]).where('message_id', '=', messageId).execute();
  return new Set(rows.map((r) => r.inbox_id));
}

export async function insertDeliveryReports(db: Db, inboxIds: readonly string[], messageId: string, createdAt: string): Promise<void> {
  if (!inboxIds.length) return;
  await db
    .insertInto('delivery_reports')
    .values(inboxIds.map((inboxId) => ({ inbox_id: inboxId, message_id: messageId, created_at: createdAt })))
    .execute();
}
