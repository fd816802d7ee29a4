import type { Db } from '../schema/database.js';
import {
  findThreadsForUpdate,
  updateThreadLabels,
  deleteThreadWithMessages,
  updateThread,
} from './thread.repository.js';
import { dialectOf } from '../../platform/db/dialect.js';
import { mergeThreadLabels, startThread, addMessageToThread } from '../core/thread.js';
import { findThreadMessageLabels, listThreadMessages } from './message.repository.js';

/** Thread summaries kept in step with their messages, in the caller's transaction (the thread locked). */

/** Recomputes a thread's labels from its messages' (the old order kept), with the thread locked, in the caller's transaction. */
export async function refreshThreadLabels(trx: Db, threadId: string, updatedAt: string): Promise<void> {
  const [thread] = await findThreadsForUpdate(trx, [threadId], dialectOf(trx));
  if (thread)
    await updateThreadLabels(
      trx,
      thread.threadId,
      mergeThreadLabels(thread.labels, await findThreadMessageLabels(trx, thread.threadId)),
      updatedAt,
    );
}

/**
 * Recomputes a thread's summary from the messages it has left (after a message was deleted), with
 * the thread locked, in the caller's transaction; a thread without messages is deleted.
 */
export async function rebuildThreadSummary(trx: Db, threadId: string, updatedAt: string): Promise<void> {
  const [thread] = await findThreadsForUpdate(trx, [threadId], dialectOf(trx));
  if (!thread) return;
  const messages = await listThreadMessages(trx, threadId, { bodies: false });
  const [first, ...rest] = messages;
  if (!first) {
    await deleteThreadWithMessages(trx, threadId);
    return;
  }
  let rebuilt = startThread(thread, first, null);
  for (const m of rest) rebuilt = addMessageToThread(rebuilt, m);
  const labels = mergeThreadLabels(thread.labels, [...new Set(messages.flatMap((m) => m.labels))]);
  await updateThread(trx, {
    ...rebuilt,
    subject: thread.subject,
    normalizedSubject: thread.normalizedSubject,
    labels,
    createdAt: thread.createdAt,
    updatedAt,
  });
}
