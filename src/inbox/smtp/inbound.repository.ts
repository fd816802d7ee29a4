import type { Db } from '../database.js';
import { threadFromRow, type Thread } from '../threads/thread.repository.js';

/**
 * The newest threads of an inbox with this normalized subject (index `threads_subject`): the
 * candidates of the subject fallback of inbound threading, which then checks their participants.
 */
export async function findRecentThreadsBySubject(db: Db, inboxId: string, normalizedSubject: string, limit: number): Promise<Thread[]> {
  const rows = await db.selectFrom('threads').selectAll().where('inbox_id', '=', inboxId).where('normalized_subject', '=', normalizedSubject).orderBy('timestamp', 'desc').limit(limit).execute();
  return rows.map(threadFromRow);
}
