import { foldersOf, type Folder } from '../core/folders.js';
import type { Db } from '../schema/database.js';
import { insertFolderMessages, deleteFolderMessage, stampFolderMessages, takeUids } from './folder.repository.js';

/**
 * Tells the processes with mail clients of these inboxes that their folders changed, in the
 * writer's transaction (service.ts: a NOTIFY on PostgreSQL, heard by every instance after the
 * commit and never for a rollback; on SQLite once the transaction has ended).
 */
export type FoldersChanged = (trx: Db, inboxIds: readonly string[]) => Promise<void>;

/** A stored message as the folders need it. */
export interface FolderMember {
  readonly pk: number;
  readonly inboxId: string;
}

/**
 * The folders of mail clients as a projection of labels, kept by the mail store in the
 * transaction of every change (decision 0045): a message entering a folder gets the folder's
 * next UID there; one leaving it loses its row (clients see EXPUNGE); a message deleted for good
 * loses its rows by the foreign key. UIDs are taken per (inbox, folder) in sorted order, so that
 * concurrent writers lock the counters alike.
 */
export function createFolderProjection({ changed }: { changed?: FoldersChanged } = {}) {
  /**
   * One write per (inbox, folder) touched, in sorted order so that concurrent writers lock the
   * counters alike: the folder's next modseq (migration 0019), UIDs for the messages entering it
   * (rows written at that modseq), and that modseq stamped on the rows of messages that stay in
   * it with other labels (their flags changed).
   */
  async function write(
    trx: Db,
    entries: readonly { member: FolderMember; folder: Folder; stays?: boolean }[],
  ): Promise<void> {
    const groups = new Map<string, { inboxId: string; folder: Folder; entering: number[]; staying: number[] }>();
    for (const { member, folder, stays } of entries) {
      const key = `${member.inboxId}\u0000${folder}`;
      const group = groups.get(key) ?? { inboxId: member.inboxId, folder, entering: [], staying: [] };
      (stays ? group.staying : group.entering).push(member.pk);
      groups.set(key, group);
    }
    const rows: { inboxId: string; folder: Folder; uid: number; messagePk: number; modseq: number }[] = [];
    for (const key of [...groups.keys()].sort()) {
      const { inboxId, folder, entering, staying } = groups.get(key) as NonNullable<ReturnType<typeof groups.get>>;
      entering.sort((a, b) => a - b);
      const { first, modseq } = await takeUids(trx, inboxId, folder, entering.length);
      entering.forEach((messagePk, i) => rows.push({ inboxId, folder, uid: first + i, messagePk, modseq }));
      if (staying.length) await stampFolderMessages(trx, folder, staying, modseq);
    }
    await insertFolderMessages(trx, rows);
  }

  return {
    /** New messages (delivery): each enters the folders of its labels. */
    async stored(trx: Db, messages: readonly (FolderMember & { labels: readonly string[] })[]): Promise<void> {
      // The signal first: it is heard only after the commit either way, and a delivery takes its
      // UIDs last (delivery.service.ts), so nothing else should run while it holds the counters.
      await changed?.(trx, [...new Set(messages.map((m) => m.inboxId))]);
      await write(
        trx,
        messages.flatMap((m) => foldersOf(m.labels).map((folder) => ({ member: m, folder }))),
      );
    },

    /**
     * Labels changed (labels service): a message leaves the folders its old labels chose and the
     * new ones do not, and enters those only the new ones choose, under a new UID there; in the
     * folders it stays in, its row is stamped with the folder's next modseq (its flags changed).
     */
    async relabelled(
      trx: Db,
      changes: readonly (FolderMember & { before: readonly string[]; after: readonly string[] })[],
    ): Promise<void> {
      const entries: { member: FolderMember; folder: Folder; stays: boolean }[] = [];
      for (const c of changes) {
        const before = foldersOf(c.before);
        const after = foldersOf(c.after);
        for (const folder of before) if (!after.includes(folder)) await deleteFolderMessage(trx, c.pk, folder);
        for (const folder of after) entries.push({ member: c, folder, stays: before.includes(folder) });
      }
      await write(trx, entries);
      // Flags follow labels: every change is news to a client, folder or not.
      if (changes.length) await changed?.(trx, [...new Set(changes.map((c) => c.inboxId))]);
    },

    /**
     * A draft stored or changed (drafts/draft.service.ts): its next UID in the inbox's Drafts,
     * taken from the folder's counter as a message's are; a changed draft is a new message to a
     * mail client (the old UID is gone, clients see EXPUNGE and EXISTS).
     */
    async draftSaved(trx: Db, inboxId: string): Promise<number> {
      const { first } = await takeUids(trx, inboxId, 'Drafts', 1);
      await changed?.(trx, [inboxId]);
      return first;
    },

    /** Messages deleted for good (their rows went with them), or drafts removed: only the news. */
    async removed(trx: Db, inboxIds: readonly string[]): Promise<void> {
      if (inboxIds.length) await changed?.(trx, [...new Set(inboxIds)]);
    },
  };
}

export type FolderProjection = ReturnType<typeof createFolderProjection>;
