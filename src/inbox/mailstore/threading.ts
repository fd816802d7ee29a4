import type { Db } from '../schema/database.js';
import { addressOf, normalizeSubject, subjectKey } from '../mail/compose.js';
import { findThreadsHoldingMessages } from './message.repository.js';
import { findRecentThreadsBySubject } from './thread.repository.js';
import { participantsOf } from '../core/thread.js';

/** How many same-subject threads of an inbox the subject fallback looks at. */
const SUBJECT_CANDIDATES = 20;

/** A subject with a reply or forward prefix: only such messages may join a thread by subject. */
const isReplySubject = (subject: string | null) =>
  subject !== null && normalizeSubject(subject) !== subject.trim().toLowerCase();

/** What threading reads of a message. */
export interface ThreadingFacts {
  readonly from: string;
  readonly subject: string | null;
  readonly inReplyTo: string | null;
  readonly references: readonly string[];
}

/**
 * The one threading rule of every way a message enters storage (docs/decisions/0008): per inbox,
 * 1. the thread holding a message that In-Reply-To or References name (the newest such message);
 * 2. else, for a reply- or forward-prefixed subject, the newest thread of the inbox with the same
 *    normalized subject in which the sender already took part (of the newest SUBJECT_CANDIDATES);
 * 3. else none: the copy starts a thread.
 * Returns the chosen thread id by inbox id; inboxes without one are left out.
 */
export async function chooseThreads(
  trx: Db,
  inboxIds: readonly string[],
  message: ThreadingFacts,
): Promise<Map<string, string>> {
  const chosen = new Map<string, string>();
  if (!inboxIds.length) return chosen;
  const refs = [...new Set([...(message.inReplyTo ? [message.inReplyTo] : []), ...message.references])];
  if (refs.length) {
    for (const h of await findThreadsHoldingMessages(trx, inboxIds, refs))
      if (!chosen.has(h.inboxId)) chosen.set(h.inboxId, h.threadId);
  }
  const subject = normalizeSubject(message.subject);
  const sender = addressOf(message.from).toLowerCase();
  if (!subject || !sender || !isReplySubject(message.subject)) return chosen;
  const key = subjectKey(subject) as string;
  for (const inboxId of inboxIds) {
    if (chosen.has(inboxId)) continue;
    const candidates = await findRecentThreadsBySubject(trx, inboxId, key, SUBJECT_CANDIDATES);
    const match = candidates.find((t) => participantsOf(t).some((p) => p.toLowerCase() === sender));
    if (match) chosen.set(inboxId, match.threadId);
  }
  return chosen;
}
