import type { Selectable } from 'kysely';

export interface InboxTable {
  inbox_id: string;
  organization_id: string;
  pod_id: string;
  username: string;
  domain: string;
  display_name: string | null;
  client_id: string | null;
  created_at: string;
  updated_at: string;
}

export type InboxRow = Selectable<InboxTable>;
