import type { Generated, Selectable } from 'kysely';

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
  created_at: string;
  updated_at: string;
}

export interface DraftLabelTable {
  draft_pk: number;
  label: string;
}

export interface DraftAttachmentTable {
  id: Generated<number>;
  draft_pk: number;
  attachment_id: string;
  filename: string | null;
  content_type: string | null;
  content_disposition: string | null;
  content_id: string | null;
  size: number;
  content: Buffer;
}

export type DraftRow = Selectable<DraftTable>;
