import type { Generated, Selectable } from 'kysely';

export interface WebhookTable {
  webhook_id: string;
  organization_id: string;
  url: string;
  secret: string;
  /** 0/1 in SQLite, boolean in PostgreSQL: read through `Boolean()`. */
  enabled: boolean | number;
  event_types: string | null;
  inbox_ids: string | null;
  pod_ids: string | null;
  client_id: string | null;
  disabled_reason: string | null;
  /** The scope of the key that created it (migration 0005): only keys of that scope see it. */
  pod_id: string | null;
  inbox_id: string | null;
  /** Added by migration 0010: custom delivery headers (JSON object; values write-only). */
  headers: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveryTable {
  id: Generated<number>;
  webhook_id: string;
  event_id: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_excerpt: string | null;
  /** Added by migration 0003. */
  outcome: 'delivered' | 'retrying' | 'failed';
  created_at: string;
}

export type WebhookRow = Selectable<WebhookTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
