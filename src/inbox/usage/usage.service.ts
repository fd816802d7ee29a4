import { COUNTED_USAGE, usageMetric, type UsageType } from './usage-counts.js';
import { USAGE_TYPES, METRIC_EVENT_TYPES } from '../core/events.js';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { ValidationError } from '../../platform/errors/app-error.js';
import { type KeyOwner, requireInScope, requirePermission } from '../core/scope.js';
import { podInScope } from '../pods/pod-scope.js';
import type { InboxDatabase } from '../schema/database.js';
import { requireScopedInbox } from '../inboxes/inbox-scope.js';
import { sumBefore, sumByPeriod, type UsageScope } from './usage.repository.js';
import { OrganizationMetricsNotFoundError } from './usage.errors.js';

export interface MetricsQuery {
  readonly types?: readonly string[];
  readonly start?: string;
  readonly end?: string;
  readonly period?: number;
  readonly limit?: number;
  readonly descending?: boolean;
}

/** Which scope a metrics call names. */
export type MetricsAddress =
  | { readonly level: 'organization' }
  | { readonly level: 'pod'; readonly podId: string }
  | { readonly level: 'inbox'; readonly inboxId: string };

const DEFAULT_PERIOD = 3600;
const DEFAULT_BUCKETS = 24;
/** Buckets one answer may span: a longer range needs a longer period. */
export const MAX_BUCKETS = 1000;

function parseTime(field: 'start' | 'end', value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = new Date(value).getTime();
  if (Number.isNaN(t)) throw new ValidationError(`${field} must be an ISO-8601 date-time.`, field, 'INVALID_DATE');
  return Math.floor(t / 1000);
}

/** Parses the SDK's start, end, period, limit and types (comma-separated or a JSON array). */
function parseTypes(
  field: string,
  raw: readonly string[] | undefined,
  allowed: readonly string[],
): string[] | undefined {
  if (raw === undefined) return undefined;
  const types = raw.flatMap((v) => {
    const value = v.trim();
    if (value.startsWith('[')) {
      try {
        const parsed = JSON.parse(value) as unknown;
        if (Array.isArray(parsed) && parsed.every((p) => typeof p === 'string')) return parsed as string[];
      } catch {
        // reported below
      }
      throw new ValidationError(`${field} must be a JSON array of strings.`, field, 'INVALID_TYPES');
    }
    return value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  });
  const unknown = types.find((t) => !allowed.includes(t));
  if (unknown !== undefined)
    throw new ValidationError(
      `${field}: ${JSON.stringify(unknown.slice(0, 64))} is not one of ${allowed.join(', ')}.`,
      field,
      'INVALID_TYPES',
    );
  return [...new Set(types)];
}

function parseRange(query: MetricsQuery, now: Date) {
  const period = query.period ?? DEFAULT_PERIOD;
  if (!Number.isInteger(period) || period < 1 || period > 86400)
    throw new ValidationError(
      'period must be a whole number of seconds between 1 and 86400.',
      'period',
      'INVALID_PERIOD',
    );
  if (query.limit !== undefined && (!Number.isInteger(query.limit) || query.limit < 1))
    throw new ValidationError('limit must be a positive integer.', 'limit', 'INVALID_LIMIT');
  const end = parseTime('end', query.end) ?? Math.ceil(now.getTime() / 1000);
  const start = parseTime('start', query.start) ?? end - period * DEFAULT_BUCKETS;
  if (start >= end) throw new ValidationError('start must be before end.', 'start', 'INVALID_RANGE');
  const buckets = Math.ceil((end - start) / period);
  if (buckets > MAX_BUCKETS)
    throw new ValidationError(
      `start to end spans ${buckets} periods of ${period} s; at most ${MAX_BUCKETS}: choose a longer period or a shorter range.`,
      'period',
      'TOO_MANY_BUCKETS',
    );
  return {
    start,
    end,
    period,
    buckets,
    limit: Math.min(query.limit ?? MAX_BUCKETS, MAX_BUCKETS),
    descending: query.descending === true,
  };
}

const iso = (s: number) => new Date(s * 1000).toISOString();

export function createUsageService({ db, clock }: { db: Kysely<InboxDatabase>; clock: Clock }) {
  async function scopeOf(
    owner: KeyOwner,
    address: MetricsAddress,
  ): Promise<{ scope: UsageScope; level: 'organization' | 'pod' | 'inbox' }> {
    requirePermission(owner, 'metricsRead');
    if (address.level === 'organization') {
      requireInScope(
        owner,
        { organizationId: owner.organizationId, podId: null, inboxId: null },
        () => new OrganizationMetricsNotFoundError(),
      );
      return { scope: { organizationId: owner.organizationId }, level: 'organization' };
    }
    if (address.level === 'pod') {
      const { podId } = await podInScope(db, owner, address.podId.trim());
      return { scope: { organizationId: owner.organizationId, podId }, level: 'pod' };
    }
    const inbox = await requireScopedInbox(db, owner, address.inboxId);
    return {
      scope: { organizationId: owner.organizationId, podId: inbox.podId, inboxId: inbox.inboxId },
      level: 'inbox',
    };
  }

  function order<T>(points: T[], range: { descending: boolean; limit: number }): T[] {
    return (range.descending ? points.reverse() : points).slice(0, range.limit);
  }

  return {
    /** Counts of events per period, per event type (every bucket of the range, zeros included). */
    async queryEvents(
      owner: KeyOwner,
      address: MetricsAddress,
      query: MetricsQuery,
    ): Promise<Record<string, { timestamp: string; count: number }[]>> {
      const types = parseTypes('event_types', query.types, METRIC_EVENT_TYPES) ?? [...METRIC_EVENT_TYPES];
      const range = parseRange(query, clock.now());
      const { scope } = await scopeOf(owner, address);
      const sums = await sumByPeriod(db, scope, types, range);
      const result: Record<string, { timestamp: string; count: number }[]> = {};
      for (const type of types) {
        const counts = new Array<number>(range.buckets).fill(0);
        for (const s of sums)
          if (s.metric === type && s.index >= 0 && s.index < range.buckets)
            counts[s.index] = (counts[s.index] ?? 0) + s.value;
        result[type] = order(
          counts.map((count, i) => ({ timestamp: iso(range.start + i * range.period), count })),
          range,
        );
      }
      return result;
    },

    /** Cumulative usage per period: the value at the end of each bucket (capped at `end`). */
    async queryUsage(
      owner: KeyOwner,
      address: MetricsAddress,
      query: MetricsQuery,
    ): Promise<Record<string, { timestamp: string; value: number }[]>> {
      const requested = parseTypes('usage_types', query.types, USAGE_TYPES);
      const range = parseRange(query, clock.now());
      const { scope, level } = await scopeOf(owner, address);
      const counted = COUNTED_USAGE[level];
      const missing = requested?.find((t) => !counted.includes(t as UsageType));
      if (missing !== undefined)
        throw new ValidationError(
          `usage_types: ${missing} is not counted for ${level === 'organization' ? 'an organization' : `a ${level}`}; available: ${counted.join(', ')}.`,
          'usage_types',
          'USAGE_TYPE_NOT_AVAILABLE',
        );
      const types = (requested ?? counted) as UsageType[];
      const metrics = types.map(usageMetric);
      const [before, sums] = await Promise.all([
        sumBefore(db, scope, metrics, range.start),
        sumByPeriod(db, scope, metrics, range),
      ]);
      const result: Record<string, { timestamp: string; value: number }[]> = {};
      for (const type of types) {
        const metric = usageMetric(type);
        const deltas = new Array<number>(range.buckets).fill(0);
        for (const s of sums)
          if (s.metric === metric && s.index >= 0 && s.index < range.buckets)
            deltas[s.index] = (deltas[s.index] ?? 0) + s.value;
        let value = before.get(metric) ?? 0;
        result[type] = order(
          deltas.map((d, i) => {
            value += d;
            return { timestamp: iso(Math.min(range.start + (i + 1) * range.period, range.end)), value };
          }),
          range,
        );
      }
      return result;
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
