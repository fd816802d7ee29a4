import type { Generated } from 'kysely';

/** The next UID of an inbox's folder (IMAP, decision 0045); no row: 1. */
export interface FolderCounterTable {
  inbox_id: string;
  folder: string;
  uid_next: number;
  /** Grows with every write that takes UIDs or changes labels in the folder (migration 0019). */
  modseq: Generated<number>;
}

/** A stored message in a folder of its inbox, under its UID there. */
export interface FolderMessageTable {
  inbox_id: string;
  folder: string;
  uid: number;
  message_pk: number;
  /** The folder's modseq of the last write of this row (migration 0019). */
  modseq: Generated<number>;
}
