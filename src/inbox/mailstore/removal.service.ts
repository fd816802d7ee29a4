import type { Clock } from '../../platform/clock.js';
import type { InboxRef } from '../core/inbox.js';
import type { Message } from '../core/message.js';
import { TRASH_LABEL, type Thread } from '../core/thread.js';
import type { Db } from '../schema/database.js';
import { threadDeleted } from '../usage/usage-counts.js';
import type { LabelsService } from './labels.service.js';
import type { FolderProjection } from './folders.js';
import { deleteMessageRow, listThreadMessages } from './message.repository.js';
import { deleteThreadWithMessages } from './thread.repository.js';
import { rebuildThreadSummary } from './thread-summary.js';

/** What else must follow a thread whose messages changed by a removal, in the same transaction (search: its document). */
export type ThreadChangedHook = (trx: Db, threadId: string) => Promise<void>;

/**
 * The one way stored mail leaves an inbox: a message deleted for good (messages.delete), a thread
 * moved to the trash or deleted for good (threads.delete), and any door to come (IMAP EXPUNGE).
 * In the caller's transaction, with what it removes locked by the caller.
 */
export function createRemovalService(deps: {
  clock: Clock;
  labels: LabelsService;
  threadChanged: readonly ThreadChangedHook[];
  /** The folders of mail clients: told of what left (its rows go by the foreign key). */
  folders?: FolderProjection;
}) {
  const { clock, labels } = deps;
  return {
    /** Deletes a message for good; its thread is rebuilt from the others (or goes with the last one). */
    async deleteMessage(trx: Db, message: Message): Promise<void> {
      await deleteMessageRow(trx, message.pk);
      await rebuildThreadSummary(trx, message.threadId, clock.now().toISOString());
      for (const hook of deps.threadChanged) await hook(trx, message.threadId);
      await deps.folders?.removed(trx, [message.inboxId]);
    },

    /**
     * Deletes a thread as AgentMail does: the first time it goes to the trash (every message gets
     * the label `trash` through the labels service, with its events, and lists leave it out unless
     * `include_trash`); a thread already in the trash, or any thread with `permanent`, is removed
     * with its messages and attachments, and leaves the inbox's usage.
     */
    async removeThread(
      trx: Db,
      inbox: InboxRef,
      thread: Thread,
      options: { permanent?: boolean },
    ): Promise<'trashed' | 'deleted'> {
      const messages = await listThreadMessages(trx, thread.threadId, { bodies: false });
      const untrashed = messages.filter((m) => !m.labels.includes(TRASH_LABEL));
      if (options.permanent || untrashed.length === 0) {
        await deleteThreadWithMessages(trx, thread.threadId);
        await threadDeleted(trx, inbox, messages, clock.now());
        await deps.folders?.removed(trx, [inbox.inboxId]);
        return 'deleted';
      }
      await labels.apply(trx, inbox, untrashed, { add: [TRASH_LABEL], remove: [] }, clock.now().toISOString());
      return 'trashed';
    },
  };
}

export type RemovalService = ReturnType<typeof createRemovalService>;
