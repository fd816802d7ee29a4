/** The next UID of an inbox's folder (IMAP, decision 0045); no row: 1. */
export interface FolderCounterTable {
  inbox_id: string;
  folder: string;
  uid_next: number;
}

/** A stored message in a folder of its inbox, under its UID there. */
export interface FolderMessageTable {
  inbox_id: string;
  folder: string;
  uid: number;
  message_pk: number;
}
