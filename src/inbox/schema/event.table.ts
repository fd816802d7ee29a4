export interface EventTable {
  event_id: string;
  organization_id: string;
  event_type: string;
  inbox_id: string | null;
  pod_id: string | null;
  payload: string;
  created_at: string;
}
