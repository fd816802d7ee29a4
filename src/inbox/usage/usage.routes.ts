import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  InboxParams,
  MetricsEventsQuery,
  MetricsRatesQuery,
  MetricsUsageQuery,
  PodParams,
  QueryMetricsResponse,
  QueryRatesResponse,
  QueryUsageResponse,
} from './usage.schemas.js';
import type { MetricsAddress, MetricsQuery, UsageService } from './usage.service.js';

function queryOf(
  q: { start?: string; end?: string; period?: number; limit?: number; descending?: boolean },
  types: string | undefined,
): MetricsQuery {
  return {
    ...(types !== undefined ? { types: [types] } : {}),
    ...(q.start !== undefined ? { start: q.start } : {}),
    ...(q.end !== undefined ? { end: q.end } : {}),
    ...(q.period !== undefined ? { period: q.period } : {}),
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.descending !== undefined ? { descending: q.descending } : {}),
  };
}

/**
 * metrics.queryEvents / queryUsage / queryRates at the organization, pod and inbox levels
 * (permission metricsRead): answered from the counts in usage_counts, never from the Prometheus
 * registry.
 */
export function usageRoutes(app: InboxApp, usage: UsageService): void {
  const tags = ['metrics'];
  const levels = [
    {
      prefix: '/v0',
      params: undefined,
      of: (): MetricsAddress => ({ level: 'organization' }),
      what: 'the organization',
    },
    {
      prefix: '/v0/pods/:pod_id',
      params: PodParams,
      of: (p: Record<string, string>): MetricsAddress => ({ level: 'pod', podId: p.pod_id as string }),
      what: 'a pod',
    },
    {
      prefix: '/v0/inboxes/:inbox_id',
      params: InboxParams,
      of: (p: Record<string, string>): MetricsAddress => ({ level: 'inbox', inboxId: p.inbox_id as string }),
      what: 'an inbox',
    },
  ];
  for (const level of levels) {
    // `…/metrics` is agentmail 0.4.9's name (metrics.query) for what 0.5 calls `…/metrics/events`.
    for (const path of [`${level.prefix}/metrics/events`, `${level.prefix}/metrics`]) {
      app.get(path, {
        schema: {
          tags,
          summary: `Counts of events of ${level.what} per period${path.endsWith('/events') ? '' : ' (agentmail 0.4.9 path)'}`,
          ...(level.params ? { params: level.params } : {}),
          querystring: MetricsEventsQuery,
          response: { 200: QueryMetricsResponse, ...errorResponses },
        },
        handler: async (request) =>
          usage.queryEvents(
            ownerOf(request),
            level.of(request.params as Record<string, string>),
            queryOf(request.query, request.query.event_types),
          ),
      });
    }
    app.get(`${level.prefix}/metrics/usage`, {
      schema: {
        tags,
        summary: `Cumulative usage of ${level.what} per period`,
        ...(level.params ? { params: level.params } : {}),
        querystring: MetricsUsageQuery,
        response: { 200: QueryUsageResponse, ...errorResponses },
      },
      handler: async (request) =>
        usage.queryUsage(
          ownerOf(request),
          level.of(request.params as Record<string, string>),
          queryOf(request.query, request.query.usage_types),
        ),
    });
    app.get(`${level.prefix}/metrics/rates`, {
      schema: {
        tags,
        summary: `Rolling bounce and complaint rates of ${level.what}`,
        ...(level.params ? { params: level.params } : {}),
        querystring: MetricsRatesQuery,
        response: { 200: QueryRatesResponse, ...errorResponses },
      },
      handler: async (request) =>
        usage.queryRates(ownerOf(request), level.of(request.params as Record<string, string>), {
          ...queryOf(request.query, request.query.rate_types),
          ...(request.query.window !== undefined ? { window: request.query.window } : {}),
        }),
    });
  }
}
