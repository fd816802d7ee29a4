import { sql } from 'kysely';
import { insertCompiledOnce } from '../../platform/db/compiled-once.js';
import type { Db } from '../schema/database.js';

/** Shards per (scope, metric, second): concurrent units of work pick one at random and rarely share a row. */
export const USAGE_SHARDS = 8;

export interface UsageDelta {
  readonly organizationId: string;
  readonly podId: string;
  readonly inboxId: string;
  readonly metric: string;
  /** Unix seconds. */
  readonly bucket: number;
  readonly value: number;
}

/**
 * Adds the deltas in one statement, on one shard chosen per call, rows in key order: two units
 * of work lock their common rows in the same order (no deadlock), and concurrent sends of one
 * inbox wait for each other only when they pick the same shard in the same second.
 */
export async function addUsage(db: Db, deltas: readonly UsageDelta[], shard: number): Promise<void> {
  if (!deltas.length) return;
  const sums = new Map<string, UsageDelta & { value: number }>();
  for (const d of deltas) {
    const key = [d.organizationId, d.podId, d.inboxId, d.metric, d.bucket].join('\u0000');
    const current = sums.get(key);
    sums.set(key, current ? { ...current, value: current.value + d.value } : { ...d });
  }
  const rows = [...sums.entries()]
    .filter(([, d]) => d.value !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, d]) => ({
      organization_id: d.organizationId,
      pod_id: d.podId,
      inbox_id: d.inboxId,
      metric: d.metric,
      bucket: d.bucket,
      shard,
      value: d.value,
    }));
  if (!rows.length) return;
  await insertCompiledOnce(db, 'usage_counts.add', rows, () =>
    db
      .insertInto('usage_counts')
      .values(rows)
      .onConflict((oc) =>
        oc
          .columns(['organization_id', 'pod_id', 'inbox_id', 'metric', 'bucket', 'shard'])
          .doUpdateSet((eb) => ({ value: eb(eb.ref('usage_counts.value'), '+', eb.ref('excluded.value')) })),
      ),
  );
}

export interface UsageScope {
  readonly organizationId: string;
  readonly podId?: string;
  readonly inboxId?: string;
}

function scoped(db: Db, scope: UsageScope, metrics: readonly string[]) {
  let q = db
    .selectFrom('usage_counts')
    .where('organization_id', '=', scope.organizationId)
    .where('metric', 'in', metrics);
  if (scope.podId !== undefined) q = q.where('pod_id', '=', scope.podId);
  if (scope.inboxId !== undefined) q = q.where('inbox_id', '=', scope.inboxId);
  return q;
}

/**
 * Sums per metric and period bucket (index `(bucket - start) / period`) for `start <= bucket < end`,
 * grouped in SQL. Pod- and organization-level facts (inbox_id '') count at their level only.
 */
export async function sumByPeriod(
  db: Db,
  scope: UsageScope,
  metrics: readonly string[],
  range: { start: number; end: number; period: number },
): Promise<{ metric: string; index: number; value: number }[]> {
  if (!metrics.length) return [];
  // Literals (whole numbers the service checked): the SELECT and GROUP BY expressions must be the
  // same text for PostgreSQL, and SQLite would bind them as REAL and divide without truncating.
  if (![range.start, range.period].every(Number.isSafeInteger))
    throw new Error('start and period must be whole seconds');
  const index = sql<number | string>`cast((bucket - ${sql.lit(range.start)}) / ${sql.lit(range.period)} as integer)`;
  const rows = await scoped(db, scope, metrics)
    .select(['metric', index.as('idx'), sql<number | string>`sum(value)`.as('total')])
    .where('bucket', '>=', range.start)
    .where('bucket', '<', range.end)
    .groupBy(['metric', index])
    .execute();
  return rows.map((r) => ({ metric: r.metric, index: Number(r.idx), value: Number(r.total) }));
}

/** Sums per metric of everything before `before` (the starting values of cumulative series). */
export async function sumBefore(
  db: Db,
  scope: UsageScope,
  metrics: readonly string[],
  before: number,
): Promise<Map<string, number>> {
  if (!metrics.length) return new Map();
  const rows = await scoped(db, scope, metrics)
    .select(['metric', sql<number | string>`sum(value)`.as('total')])
    .where('bucket', '<', before)
    .groupBy('metric')
    .execute();
  return new Map(rows.map((r) => [r.metric, Number(r.total)]));
}
