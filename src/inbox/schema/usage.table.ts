/** Sums per (organization, pod, inbox, metric, second, shard) (migration 0010; usage.repository.ts). */
export interface UsageCountTable {
  organization_id: string;
  /** '' for organization-level facts. */
  pod_id: string;
  /** '' for pod- and organization-level facts. */
  inbox_id: string;
  metric: string;
  /** Unix seconds. */
  bucket: number | string;
  shard: number;
  /** bigint: PostgreSQL returns it as text; read through Number(). */
  value: number | string;
}
