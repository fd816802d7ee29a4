import type { Generated, Selectable } from 'kysely';

/** Address lists, labels, references, headers and attachment metadata are JSON text. */
export interface MessageTable {
  id: Generated<number>;
  organization_id: string;
  inbox_id: string;
  thread_id: string;
  message_id: string;
  labels: string;
  timestamp: string;
  from_address: string;
  reply_to: string | null;
  to_addresses: string;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  subject: string | null;
  preview: string | null;
  text_body: string | null;
  html_body: string | null;
  in_reply_to: string | null;
  references_ids: string | null;
  headers: string | null;
  attachments: string | null;
  size: number;
  raw: Buffer | null;
  /** The blob holding the source when `raw` is NULL (message-blobs.ts). */
  source_blob: number | null;
  /** The blob holding the text body when it is large (`text_body` NULL then; message-blobs.ts). */
  text_blob: number | null;
  /** The blob holding the HTML body when it is large (`html_body` NULL then). */
  html_blob: number | null;
  created_at: string;
  updated_at: string;
}

export interface MessageLabelTable {
  message_pk: number;
  label: string;
}

export interface AttachmentTable {
  id: Generated<number>;
  message_pk: number;
  attachment_id: string;
  filename: string | null;
  content_type: string | null;
  content_disposition: string | null;
  content_id: string | null;
  size: number;
  content: Buffer;
  /** The blob holding the bytes when `content` is empty (message-blobs.ts). */
  content_blob: number | null;
}

/** Large bytes, named by the copies of one message (`message-blobs.ts`): `state` is BLOB_UNCLAIMED, BLOB_CLAIMED or BLOB_DOOMED. */
export interface BlobTable {
  id: Generated<number>;
  state: number;
  /** Bytes in all its pieces: a read that finds fewer (a blob swept meanwhile) finds nothing. */
  size: number;
  created_at: string;
}

/** A blob's bytes in pieces of at most CHUNK_BYTES, `seq` counting from 0. */
export interface BlobChunkTable {
  blob_id: number;
  seq: number;
  bytes: Buffer;
}

export interface SendCounterTable {
  organization_id: string;
  day: string;
  count: number;
}

export type MessageRow = Selectable<MessageTable>;
