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
}

export interface ApiKeyTable {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  key_prefix: string;
  created_at: string;
}
