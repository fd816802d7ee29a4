import type { Message } from './message.js';
import { addressOf, subjectKey } from '../mail/compose.js';

/**
 * Threads as the service knows them, and the pure rules of their summaries: started by a message, grown by each
 * that joins, their participants and labels. No SQL, no I/O.
 */

/** A conversation in one inbox; its fields summarise its messages and are kept on every insert. */
export interface Thread {
  readonly threadId: string;
  readonly organizationId: string;
  readonly inboxId: string;
  /** The first message's subject. */
  readonly subject: string | null;
  readonly normalizedSubject: string | null;
  /** `from` of its messages, first appearance first, one entry per address. */
  readonly senders: readonly string[];
  /** to, cc and bcc of its messages, one entry per address. */
  readonly recipients: readonly string[];
  /** The union of its messages' labels. */
  readonly labels: readonly string[];
  readonly messageCount: number;
  readonly size: number;
  readonly preview: string | null;
  readonly lastMessageId: string;
  /** Time of the newest message. */
  readonly timestamp: string;
  readonly receivedTimestamp: string | null;
  readonly sentTimestamp: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** What a thread summary needs to know of a message. */
export type ThreadMessage = Pick<
  Message,
  'messageId' | 'timestamp' | 'from' | 'to' | 'cc' | 'bcc' | 'labels' | 'size' | 'preview' | 'subject' | 'createdAt'
>;

/** `list` plus the entries of `more` whose address it does not hold yet (case-insensitive). */
function unionByAddress(list: readonly string[], more: readonly string[]): string[] {
  const out = [...list];
  const seen = new Set(list.map((e) => addressOf(e).toLowerCase()));
  for (const entry of more) {
    const key = addressOf(entry).toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(entry);
  }
  return out;
}

/** Bare addresses of senders and recipients, each once (compared case-insensitively). */
export function participantsOf(thread: Thread): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const entry of [...thread.senders, ...thread.recipients]) {
    const address = addressOf(entry);
    if (seen.has(address.toLowerCase())) continue;
    seen.add(address.toLowerCase());
    out.push(address);
  }
  return out;
}

const later = (a: string | null, b: string): string => (a !== null && a > b ? a : b);

/** The summary of a thread whose first message is `m`. */
export function startThread(
  ids: { threadId: string; organizationId: string; inboxId: string },
  m: ThreadMessage,
  normalizedSubject: string | null,
): Thread {
  return {
    threadId: ids.threadId,
    organizationId: ids.organizationId,
    inboxId: ids.inboxId,
    subject: m.subject,
    normalizedSubject: subjectKey(normalizedSubject),
    senders: unionByAddress([], [m.from]),
    recipients: unionByAddress([], [...m.to, ...m.cc, ...m.bcc]),
    labels: [...new Set(m.labels)],
    messageCount: 1,
    size: m.size,
    preview: m.preview,
    lastMessageId: m.messageId,
    timestamp: m.timestamp,
    receivedTimestamp: m.labels.includes('received') ? m.timestamp : null,
    sentTimestamp: m.labels.includes('sent') ? m.timestamp : null,
    createdAt: m.createdAt,
    updatedAt: m.createdAt,
  };
}

/** The summary after `m` joined the thread (every field written out: this runs on every send). */
export function addMessageToThread(t: Thread, m: ThreadMessage): Thread {
  const newest = m.timestamp >= t.timestamp;
  return {
    threadId: t.threadId,
    organizationId: t.organizationId,
    inboxId: t.inboxId,
    subject: t.subject,
    normalizedSubject: t.normalizedSubject,
    senders: unionByAddress(t.senders, [m.from]),
    recipients: unionByAddress(t.recipients, [...m.to, ...m.cc, ...m.bcc]),
    labels: [...new Set([...t.labels, ...m.labels])],
    messageCount: t.messageCount + 1,
    size: t.size + m.size,
    preview: newest ? m.preview : t.preview,
    lastMessageId: newest ? m.messageId : t.lastMessageId,
    timestamp: newest ? m.timestamp : t.timestamp,
    receivedTimestamp: m.labels.includes('received') ? later(t.receivedTimestamp, m.timestamp) : t.receivedTimestamp,
    sentTimestamp: m.labels.includes('sent') ? later(t.sentTimestamp, m.timestamp) : t.sentTimestamp,
    createdAt: t.createdAt,
    updatedAt: m.createdAt,
  };
}

/** Thread labels after message labels changed: the old order kept, new labels appended. */
export function mergeThreadLabels(current: readonly string[], union: readonly string[]): string[] {
  const present = new Set(union);
  return [...current.filter((l) => present.has(l)), ...union.filter((l) => !current.includes(l)).sort()];
}

export const TRASH_LABEL = 'trash';
