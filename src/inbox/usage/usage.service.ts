import { COUNTED_USAGE, usageMetric, type UsageType } from './usage-counts.js';
import { USAGE_TYPES, METRIC_EVENT_TYPES, RATE_EVENT_TYPES } from '../core/events.js';
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

/** A query's `period`: whole seconds from `min` to a day. */
function parsePeriod(query: MetricsQuery, min: number): number {
  const period = query.period ?? DEFAULT_PERIOD;
  if (!Number.isInteger(period) || period < min || period > 86400)
    throw new ValidationError(
      `period must be a whole number of seconds between ${min} and 86400.`,
      'period',
      'INVALID_PERIOD',
    );
  return period;
}

/**
 * A query's `start` to `end` (end defaults to now, start to `defaultSpan` seconds before end),
 * its `limit` and order; `count` = `periods(start, end)`, how many periods the answer spans, at
 * most MAX_BUCKETS (`spans` words the refusal).
 */
function parseSpan(
  query: MetricsQuery,
  now: Date,
  defaultSpan: number,
  periods: (start: number, end: number) => number,
  spans: (count: number) => string,
) {
  if (query.limit !== undefined && (!Number.isInteger(query.limit) || query.limit < 1))
    throw new ValidationError('limit must be a positive integer.', 'limit', 'INVALID_LIMIT');
  const end = parseTime('end', query.end) ?? Math.ceil(now.getTime() / 1000);
  const start = parseTime('start', query.start) ?? end - defaultSpan;
  if (start >= end) throw new ValidationError('start must be before end.', 'start', 'INVALID_RANGE');
  const count = periods(start, end);
  if (count > MAX_BUCKETS) throw new ValidationError(spans(count), 'period', 'TOO_MANY_BUCKETS');
  return {
    start,
    end,
    count,
    limit: Math.min(query.limit ?? MAX_BUCKETS, MAX_BUCKETS),
    descending: query.descending === true,
  };
}

function parseRange(query: MetricsQuery, now: Date) {
  const period = parsePeriod(query, 1);
  const span = parseSpan(
    query,
    now,
    period * DEFAULT_BUCKETS,
    (start, end) => Math.ceil((end - start) / period),
    (n) =>
      `start to end spans ${n} periods of ${period} s; at most ${MAX_BUCKETS}: choose a longer period or a shorter range.`,
  );
  return { ...span, period, buckets: span.count };
}

const iso = (s: number) => new Date(s * 1000).toISOString();

/** metrics.queryRates: AgentMail's RateType, each the ratio of one event type to message.sent. */
export const RATE_TYPES = ['bounce', 'complaint'] as const;
export type RateType = (typeof RATE_TYPES)[number];
const SENT = RATE_EVENT_TYPES.sent;
const RATE_EVENTS: Readonly<Record<RateType, string>> = RATE_EVENT_TYPES;
const MIN_RATE_PERIOD = 60;
const DEFAULT_WINDOW = 86400;
const MAX_WINDOW = 30 * 86400;

export interface RatesQuery extends MetricsQuery {
  readonly window?: number;
}

/**
 * A rates query's grid (AgentMail's rules): points every `period` (60 s to a day, default an
 * hour) from `start` to `end` (default the last day), each over the `window` before it (a whole
 * multiple of the period, at most 30 days, default a day); the range and the window together at
 * most MAX_BUCKETS periods.
 */
function parseRatesRange(query: RatesQuery, now: Date) {
  const period = parsePeriod(query, MIN_RATE_PERIOD);
  const window = query.window ?? DEFAULT_WINDOW;
  if (!Number.isInteger(window) || window < period || window > MAX_WINDOW || window % period !== 0)
    throw new ValidationError(
      `window must be a whole multiple of period (${period} s), at most ${MAX_WINDOW} s (30 days).`,
      'window',
      'INVALID_WINDOW',
    );
  const points = (start: number, end: number) => Math.ceil((end - start) / period);
  const span = parseSpan(
    query,
    now,
    DEFAULT_BUCKETS * DEFAULT_PERIOD,
    (start, end) => points(start, end) + window / period,
    (n) =>
      `start to end plus the window spans ${n} periods of ${period} s; at most ${MAX_BUCKETS}: choose a longer period, a shorter range or a shorter window.`,
  );
  return { ...span, period, window, points: points(span.start, span.end) };
}

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

    /**
     * Rolling bounce and complaint rates: at each point of the grid, the message.bounced (or
     * message.complained) events of the window before it divided by its message.sent events, with
     * that count; null where nothing was sent. Windows follow the period grid (the last point,
     * capped at `end`, covers its whole last period). Counted per event, as queryEvents counts:
     * a message to several recipients is one send.
     */
    async queryRates(
      owner: KeyOwner,
      address: MetricsAddress,
      query: RatesQuery,
    ): Promise<Record<string, { timestamp: string; rate: number | null; sent: number }[]>> {
      const types = (parseTypes('rate_types', query.types, RATE_TYPES) ?? [...RATE_TYPES]) as RateType[];
      const range = parseRatesRange(query, clock.now());
      const { scope } = await scopeOf(owner, address);
      const lead = range.window / range.period;
      const base = range.start - range.window;
      const metrics = [SENT, ...types.map((t) => RATE_EVENTS[t])];
      const sums = await sumByPeriod(db, scope, metrics, { start: base, end: range.end, period: range.period });
      const series = new Map(metrics.map((m) => [m, new Array<number>(range.points + lead).fill(0)]));
      for (const s of sums) {
        const counts = series.get(s.metric);
        if (counts && s.index >= 0 && s.index < counts.length) counts[s.index] = (counts[s.index] ?? 0) + s.value;
      }
      /** The sum of `metric` over the window that ends with point `i`: periods i+1 … i+lead. */
      const windowed = (metric: string, i: number) =>
        (series.get(metric) as number[]).slice(i + 1, i + 1 + lead).reduce((a, b) => a + b, 0);
      const result: Record<string, { timestamp: string; rate: number | null; sent: number }[]> = {};
      for (const type of types) {
        const points = Array.from({ length: range.points }, (_, i) => {
          const sent = windowed(SENT, i);
          const events = windowed(RATE_EVENTS[type], i);
          return {
            timestamp: iso(Math.min(range.start + (i + 1) * range.period, range.end)),
            rate: sent > 0 ? events / sent : null,
            sent,
          };
        });
        result[type] = order(points, range);
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
