/** Allow and block list entries (migration 0009). */
export interface AccessListEntryTable {
  organization_id: string;
  /** '' for the organization, `pod:<id>`, or `inbox:<id>`. */
  scope_key: string;
  pod_id: string | null;
  inbox_id: string | null;
  direction: string;
  list_type: string;
  entry: string;
  entry_type: string;
  reason: string | null;
  created_at: string;
}
