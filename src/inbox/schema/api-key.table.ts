import type { Generated } from 'kysely';

export interface OrganizationTable {
  id: string;
  name: string;
  created_at: string;
}

export interface PodTable {
  id: string;
  organization_id: string;
  name: string;
  created_at: string;
  /** Added by migration 0005. */
  client_id: string | null;
  /** Null until first changed (read as created_at). Added by migration 0005. */
  updated_at: string | null;
}

export interface ApiKeyTable {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  key_prefix: string;
  created_at: string;
  /** Scope (migration 0005): a pod key has pod_id; an inbox key has inbox_id and its pod_id. */
  pod_id: string | null;
  inbox_id: string | null;
  /** JSON of the SDK's ApiKeyPermissions (wire names); null: every permission. */
  permissions: string | null;
  updated_at: string | null;
}

/** Organizations an agent created for itself (POST /v0/agent/sign-up), limited until verified. */
export interface AgentSignupTable {
  organization_id: string;
  /** '' until a human is attached (a sign-up without human_email). */
  human_email: string;
  inbox_id: string;
  /** SHA-256 of the 6-digit code. */
  code_hash: string;
  code_expires_at: string;
  attempts: number;
  verified_at: string | null;
  created_at: string;
  /** How often POST /v0/agent/human replaced the human (migration 0015). */
  human_changes: Generated<number>;
}
