import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { dialectOf } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import type { KeyOwner } from '../api-keys/api-key.repository.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { ValidationError } from '../../platform/errors/app-error.js';
import { parseLimit, parseListFilter, type ListFilterQuery } from '../lists/list-query.js';
import { requireLabelPermissions, requirePermission } from '../core/scope.js';
import { findScopedInbox, normalizeInboxId, requireScopedInbox } from '../inboxes/inbox.service.js';
import { addressOf, subjectKey } from '../mail/compose.js';
import {
  findThreadMessageLabels,
  listThreadMessages,
  listThreadMessagesPage,
  updateMessageLabels,
  type Message,
} from '../mailstore/message.repository.js';
import { applyLabels } from '../messages/message.service.js';
import { validateLabels } from '../outgoing/outgoing.js';
import { ThreadNotFoundError } from '../core/thread.errors.js';
import {
  deleteThreadWithMessages,
  findThread,
  findThreadsForUpdate,
  listThreads,
  updateThread,
  updateThreadLabels,
  type Thread,
} from '../mailstore/thread.repository.js';
import { threadDeleted } from '../usage/usage.service.js';
import { findInbox } from '../inboxes/inbox.repository.js';

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
  const messages = await listThreadMessages(trx, threadId);
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

export interface ThreadListQuery extends ListFilterQuery {
  readonly limit?: number;
  readonly pageToken?: string;
  readonly ascending?: boolean;
}

export interface ThreadServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  /** The database's commit batcher, shared with every other writer. */
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
}

export const TRASH_LABEL = 'trash';

/** Reads of threads, per inbox and across the organization, and their deletion. */
export function createThreadService({ db, commits, clock }: ThreadServiceDeps) {
  const dialect = dialectOf(db);
  // Inside a transaction, pass it: on SQLite the one connection belongs to the transaction.
  async function requireInbox(owner: KeyOwner, inboxId: string, executor: Db = db, podId?: string): Promise<string> {
    return (await requireScopedInbox(executor, owner, inboxId, podId)).inboxId;
  }

  /** Whether a thread found by id lies within the key's scope (and the route's pod). */
  async function reachable(executor: Db, owner: KeyOwner, thread: Thread, podId?: string): Promise<boolean> {
    if (owner.podId === undefined && owner.inboxId === undefined && podId === undefined) return true;
    return (await findScopedInbox(executor, owner, thread.inboxId, podId)) !== undefined;
  }

  return {
    /** Newest first (or oldest with `ascending`); `inboxId` limits the list to one inbox. */
    async list(owner: KeyOwner, query: ThreadListQuery, inboxId?: string, podId?: string) {
      requirePermission(owner, 'messageRead');
      requireLabelPermissions(owner, query);
      const limit = parseLimit(query.limit);
      const filter = parseListFilter(query);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'integer') : undefined;
      const direction = cursor?.direction ?? (query.ascending ? 'asc' : 'desc');
      const pod = owner.podId ?? podId;
      const scope =
        inboxId !== undefined
          ? { inboxId: await requireInbox(owner, inboxId, db, podId) }
          : owner.inboxId !== undefined
            ? { inboxId: owner.inboxId }
            : { organizationId: owner.organizationId, ...(pod !== undefined ? { podId: pod } : {}) };
      if (podId !== undefined && owner.podId !== undefined && podId !== owner.podId)
        return { limit, items: [], nextPageToken: undefined };
      const rows = await listThreads(db, scope, filter, { limit, direction, ...(cursor ? { after: cursor } : {}) });
      return { limit, ...page(rows, limit, (t) => ({ sort: t.timestamp, tiebreak: t.pk }), direction) };
    },

    /**
     * Deletes a thread as AgentMail does: the first time it goes to the trash (every message gets
     * the label `trash`, and lists leave it out unless `include_trash`); a thread already in the
     * trash, or any thread with `permanent`, is removed with its messages and attachments.
     */
    async delete(
      owner: KeyOwner,
      threadId: string,
      options: { inboxId?: string; permanent?: boolean; podId?: string },
    ): Promise<'trashed' | 'deleted'> {
      requirePermission(owner, 'messageDelete');
      return commits.run(async (trx) => {
        const inboxId = options.inboxId === undefined ? undefined : normalizeInboxId(options.inboxId);
        const found = await findThread(trx, owner.organizationId, threadId, inboxId);
        if (!found || !(await reachable(trx, owner, found, options.podId))) {
          if (options.inboxId !== undefined) await requireInbox(owner, options.inboxId, trx);
          throw new ThreadNotFoundError(threadId);
        }
        const [thread] = await findThreadsForUpdate(trx, [found.threadId], dialect);
        if (!thread) throw new ThreadNotFoundError(threadId);
        const messages = await listThreadMessages(trx, thread.threadId);
        const untrashed = messages.filter((m) => !m.labels.includes(TRASH_LABEL));
        if (options.permanent || untrashed.length === 0) {
          await deleteThreadWithMessages(trx, thread.threadId);
          const inbox = await findInbox(trx, owner.organizationId, thread.inboxId);
          if (inbox) await threadDeleted(trx, inbox, messages, clock.now());
          return 'deleted';
        }
        const updatedAt = clock.now().toISOString();
        for (const m of untrashed)
          await updateMessageLabels(trx, m.pk, [...m.labels, TRASH_LABEL], [TRASH_LABEL], [], updatedAt);
        await refreshThreadLabels(trx, thread.threadId, updatedAt);
        return 'trashed';
      });
    },

    /**
     * A thread with its messages, oldest first: all of them, or with `limit` (SDK 0.5.25+) a page
     * of the newest ones, the next page token leading to older ones.
     */
    async get(
      owner: KeyOwner,
      threadId: string,
      inboxId?: string,
      podId?: string,
      paging: { limit?: number; pageToken?: string } = {},
    ): Promise<{ thread: Thread; messages: Message[]; limit?: number; nextPageToken?: string }> {
      requirePermission(owner, 'messageRead');
      const cursor = paging.pageToken ? decodeCursor(paging.pageToken, 'integer') : undefined;
      if (cursor && cursor.direction !== 'desc')
        throw new ValidationError('page_token is not a token this API issued.', 'page_token', 'INVALID_PAGE_TOKEN');
      const limit = paging.limit !== undefined || cursor ? parseLimit(paging.limit) : undefined;
      const thread = await findThread(
        db,
        owner.organizationId,
        threadId,
        inboxId === undefined ? undefined : normalizeInboxId(inboxId),
      );
      if (!thread || !(await reachable(db, owner, thread, podId))) {
        if (inboxId !== undefined) await requireInbox(owner, inboxId);
        throw new ThreadNotFoundError(threadId);
      }
      if (limit === undefined) return { thread, messages: await listThreadMessages(db, thread.threadId) };
      const rows = await listThreadMessagesPage(db, thread.threadId, limit, cursor);
      const result = page(rows, limit, (m) => ({ sort: m.timestamp, tiebreak: m.pk }), 'desc');
      return {
        thread,
        messages: result.items.reverse(),
        limit,
        ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}),
      };
    },

    /**
     * Adds and removes labels on every message of a thread (remove wins over add for a label in
     * both, as the SDK documents); the thread's labels follow. Returns the thread's labels.
     */
    async update(
      owner: KeyOwner,
      threadId: string,
      change: { inboxId?: string; podId?: string; addLabels?: readonly string[]; removeLabels?: readonly string[] },
    ): Promise<{ threadId: string; labels: readonly string[] }> {
      requirePermission(owner, 'messageUpdate');
      const remove = validateLabels('remove_labels', change.removeLabels);
      const add = validateLabels('add_labels', change.addLabels).filter((l) => !remove.includes(l));
      return commits.run(async (trx) => {
        const found = await findThread(
          trx,
          owner.organizationId,
          threadId,
          change.inboxId === undefined ? undefined : normalizeInboxId(change.inboxId),
        );
        // Out of the key's scope (or the route's pod): as if it did not exist.
        if (!found || !(await reachable(trx, owner, found, change.podId))) {
          if (change.inboxId !== undefined) await requireInbox(owner, change.inboxId, trx);
          throw new ThreadNotFoundError(threadId);
        }
        const [thread] = await findThreadsForUpdate(trx, [found.threadId], dialect);
        if (!thread) throw new ThreadNotFoundError(threadId);
        const updatedAt = clock.now().toISOString();
        let changed = false;
        for (const m of await listThreadMessages(trx, thread.threadId)) {
          const next = applyLabels(m.labels, add, remove);
          if (!next.added.length && !next.removed.length) continue;
          await updateMessageLabels(trx, m.pk, next.labels, next.added, next.removed, updatedAt);
          changed = true;
        }
        if (changed) await refreshThreadLabels(trx, thread.threadId, updatedAt);
        const after = await findThread(trx, owner.organizationId, thread.threadId);
        return { threadId: thread.threadId, labels: after?.labels ?? thread.labels };
      });
    },
  };
}

export type ThreadService = ReturnType<typeof createThreadService>;
