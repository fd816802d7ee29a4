import { applyLabels, type Message } from '../core/message.js';
import type { InboxRef } from '../core/inbox.js';
import type { Db } from '../schema/database.js';
import { updateMessageLabels } from './message.repository.js';
import { refreshThreadLabels } from './thread-summary.js';
import type { FolderProjection } from './folders.js';

/** What labels do to stored messages: add these, remove those (a label in both is the caller's to settle). */
export interface LabelChange {
  readonly add: readonly string[];
  readonly remove: readonly string[];
}

/** Stores label.added / label.removed events of one inbox in the caller's transaction (events/event.service.ts). */
export type RecordLabelChanges = (
  trx: Db,
  inbox: InboxRef,
  changes: readonly { messageId: string; added: readonly string[]; removed: readonly string[] }[],
) => Promise<void>;

/**
 * The one way the labels of stored messages change: messages.update and messages.batchUpdate, a
 * thread's labels (threads.update), a thread moved to the trash, and any door to come (IMAP flags).
 * In the caller's transaction, with the messages locked by the caller: each changed message's row
 * and label index, then the labels of every thread touched (the union of its messages', in thread
 * order so that concurrent changes lock threads alike), then one label.added / label.removed event
 * per label and message (inboxes.events.list), written in one statement; and the folders of mail
 * clients (`folders`: a message that changes folder gets a new UID there, decision 0045).
 */
export function createLabelsService({
  recordLabelChanges,
  folders,
}: {
  recordLabelChanges: RecordLabelChanges;
  folders?: FolderProjection;
}) {
  return {
    /**
     * Applies `change` to `messages` (all of `inbox`); returns each message's labels after it,
     * by message id, changed or not. Nothing is written for messages the change leaves alone.
     */
    async apply(
      trx: Db,
      inbox: InboxRef,
      messages: readonly Message[],
      change: LabelChange,
      updatedAt: string,
    ): Promise<Map<string, string[]>> {
      const after = new Map<string, string[]>();
      const threads = new Set<string>();
      const events: { messageId: string; added: string[]; removed: string[] }[] = [];
      const moved: { pk: number; inboxId: string; before: readonly string[]; after: readonly string[] }[] = [];
      for (const m of messages) {
        const next = applyLabels(m.labels, change.add, change.remove);
        after.set(m.messageId, next.labels);
        if (!next.added.length && !next.removed.length) continue;
        await updateMessageLabels(trx, m.pk, next.labels, next.added, next.removed, updatedAt);
        threads.add(m.threadId);
        events.push({ messageId: m.messageId, added: next.added, removed: next.removed });
        moved.push({ pk: m.pk, inboxId: m.inboxId, before: m.labels, after: next.labels });
      }
      for (const threadId of [...threads].sort()) await refreshThreadLabels(trx, threadId, updatedAt);
      if (events.length) await recordLabelChanges(trx, inbox, events);
      if (moved.length) await folders?.relabelled(trx, moved);
      return after;
    },
  };
}

export type LabelsService = ReturnType<typeof createLabelsService>;
