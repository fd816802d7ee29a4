import type { Generated, Selectable } from 'kysely';

/** Arrays (senders, recipients, labels) are JSON text, the same in both dialects. */
export interface ThreadTable {
  id: Generated<number>;
  thread_id: string;
  organization_id: string;
  inbox_id: string;
  subject: string | null;
  normalized_subject: string | null;
  senders: string;
  recipients: string;
  labels: string;
  message_count: number;
  size: number;
  preview: string | null;
  last_message_id: string;
  timestamp: string;
  received_timestamp: string | null;
  sent_timestamp: string | null;
  created_at: string;
  updated_at: string;
}

export type ThreadRow = Selectable<ThreadTable>;
