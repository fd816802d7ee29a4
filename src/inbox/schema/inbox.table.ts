import type { Selectable } from 'kysely';

export interface InboxTable {
  inbox_id: string;
  organization_id: string;
  pod_id: string;
  username: string;
  domain: string;
  display_name: string | null;
  client_id: string | null;
  /** JSON object of string, number and boolean values (SDK 0.5 `metadata`). */
  metadata: string | null;
  /** 'paused' (sends refused, mail still received), or NULL: active (migration 0014). */
  status: string | null;
  /** Words of the address and display name, each preceded by a space (inbox search). */
  search_words: string | null;
  created_at: string;
  updated_at: string;
}

export type InboxRow = Selectable<InboxTable>;
