import type { LabelsService } from '../mailstore/labels.service.js';
import type { RemovalService } from '../mailstore/removal.service.js';
import { type Inbox, normalizeInboxId } from '../core/inbox.js';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { dialectOf } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import { type KeyOwner, requireLabelPermissions, requirePermission } from '../core/scope.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { ValidationError } from '../../platform/errors/app-error.js';
import { parseLimit, parseListFilter, type ListFilterQuery } from '../lists/list-query.js';
import { findScopedInbox, requireScopedInbox } from '../inboxes/inbox-scope.js';
import { listThreadMessages, listThreadMessagesPage } from '../mailstore/message.repository.js';
import { type Message, validateLabels } from '../core/message.js';
import { ThreadNotFoundError } from '../core/thread.errors.js';
import { findThread, findThreadsForUpdate, listThreads } from '../mailstore/thread.repository.js';
import { type Thread } from '../core/thread.js';
import { findInbox } from '../inboxes/inbox.repository.js';

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
  /** Every label change of stored messages goes through it, with its events (mailstore/labels.service.ts). */
  readonly labels: LabelsService;
  /** Every removal of stored messages goes through it (mailstore/removal.service.ts). */
  readonly removal: RemovalService;
}

/** Reads of threads, per inbox and across the organization; their labels and deletion through the mail store. */
export function createThreadService({ db, commits, clock, labels, removal }: ThreadServiceDeps) {
  const dialect = dialectOf(db);
  // Inside a transaction, pass it: on SQLite the one connection belongs to the transaction.
  async function requireInbox(owner: KeyOwner, inboxId: string, executor: Db = db, podId?: string): Promise<string> {
    return (await requireScopedInbox(executor, owner, inboxId, podId)).inboxId;
  }

  /** The inbox of a thread found in the caller's scope (it exists: the thread holds a reference to it). */
  async function inboxOf(trx: Db, owner: KeyOwner, thread: Thread): Promise<Inbox> {
    const inbox = await findInbox(trx, owner.organizationId, thread.inboxId);
    if (!inbox) throw new ThreadNotFoundError(thread.threadId);
    return inbox;
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
        return removal.removeThread(trx, await inboxOf(trx, owner, thread), thread, options);
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
        const messages = await listThreadMessages(trx, thread.threadId, { bodies: false });
        await labels.apply(
          trx,
          await inboxOf(trx, owner, thread),
          messages,
          { add, remove },
          clock.now().toISOString(),
        );
        const after = await findThread(trx, owner.organizationId, thread.threadId);
        return { threadId: thread.threadId, labels: after?.labels ?? thread.labels };
      });
    },
  };
}

export type ThreadService = ReturnType<typeof createThreadService>;
