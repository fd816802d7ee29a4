import type { Generated, Selectable } from 'kysely';
import type { AttachmentTable } from './message.table.js';

/** Address lists, labels, references and attachment metadata are JSON text, as on messages. */
export interface DraftTable {
  id: Generated<number>;
  draft_id: string;
  organization_id: string;
  pod_id: string;
  inbox_id: string;
  client_id: string | null;
  labels: string;
  reply_to: string | null;
  to_addresses: string | null;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  subject: string | null;
  preview: string | null;
  text_body: string | null;
  html_body: string | null;
  attachments: string | null;
  in_reply_to: string | null;
  forward_of: string | null;
  references_ids: string | null;
  send_at: string | null;
  send_status: string | null;
  send_job_id: number | string | null;
  revision: number;
  /** The draft's UID in the Drafts folder of mail clients (decision 0045); new at every revision. */
  imap_uid: number | string | null;
  created_at: string;
  updated_at: string;
}

export interface DraftLabelTable {
  draft_pk: number;
  label: string;
}

/** A draft's attachments: the columns of a message's, owned by the draft. */
export interface DraftAttachmentTable extends Omit<AttachmentTable, 'message_pk'> {
  draft_pk: number;
}

export type DraftRow = Selectable<DraftTable>;
