import type { Kysely } from 'kysely';
import type { KeyOwner } from '../api-keys/api-key.repository.js';
import type { InboxDatabase } from '../database.js';
import { decodeCursor, page, parseLimit, parseListFilter } from '../http/pagination.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import { normalizeInboxId } from '../inboxes/inbox.service.js';
import { addressOf } from '../mail/compose.js';
import { listThreadMessages, type Message } from '../messages/message.repository.js';
import { ThreadNotFoundError } from './thread.errors.js';
import { findThread, listThreads, type Thread } from './thread.repository.js';

/** What a thread summary needs to know of a message. */
export type ThreadMessage = Pick<Message, 'messageId' | 'timestamp' | 'from' | 'to' | 'cc' | 'bcc' | 'labels' | 'size' | 'preview' | 'subject' | 'createdAt'>;

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

const later = (a: string | null, b: string): string => (a !== null && a > b ? a : b);

/** The summary of a thread whose first message is `m`. */
export function startThread(ids: { threadId: string; organizationId: string; inboxId: string }, m: ThreadMessage, normalizedSubject: string | null): Thread {
  return {
    threadId: ids.threadId,
    organizationId: ids.organizationId,
    inboxId: ids.inboxId,
    subject: m.subject,
    normalizedSubject,
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

export interface ThreadListQuery {
  readonly limit?: number;
  readonly pageToken?: string;
  readonly labels?: string | readonly string[];
  readonly before?: string;
  readonly after?: string;
  readonly ascending?: boolean;
}

export interface ThreadServiceDeps {
  readonly db: Kysely<InboxDatabase>;
}

/** Reads of threads, per inbox and across the organization; threads change only with messages. */
export function createThreadService({ db }: ThreadServiceDeps) {
  async function requireInbox(owner: KeyOwner, inboxId: string): Promise<string> {
    const id = normalizeInboxId(inboxId);
    if (!(await findInbox(db, owner.organizationId, id))) throw new InboxNotFoundError(inboxId);
    return id;
  }

  return {
    /** Newest first (or oldest with `ascending`); `inboxId` limits the list to one inbox. */
    async list(owner: KeyOwner, query: ThreadListQuery, inboxId?: string) {
      const limit = parseLimit(query.limit);
      const filter = parseListFilter(query);
      const cursor = query.pageToken ? decodeCursor(query.pageToken) : undefined;
      const direction = cursor?.direction ?? (query.ascending ? 'asc' : 'desc');
      const scope = inboxId !== undefined ? { inboxId: await requireInbox(owner, inboxId) } : { organizationId: owner.organizationId };
      const rows = await listThreads(db, scope, filter, { limit, direction, ...(cursor ? { after: cursor } : {}) });
      return { limit, ...page(rows, limit, (t) => ({ sort: t.timestamp, tiebreak: t.pk }), direction) };
    },

    /** A thread with its messages, oldest first. */
    async get(owner: KeyOwner, threadId: string, inboxId?: string): Promise<{ thread: Thread; messages: Message[] }> {
      const thread = await findThread(db, owner.organizationId, threadId, inboxId === undefined ? undefined : normalizeInboxId(inboxId));
      if (!thread) {
        if (inboxId !== undefined) await requireInbox(owner, inboxId);
        throw new ThreadNotFoundError(threadId);
      }
      return { thread, messages: await listThreadMessages(db, thread.threadId) };
    },
  };
}

export type ThreadService = ReturnType<typeof createThreadService>;
