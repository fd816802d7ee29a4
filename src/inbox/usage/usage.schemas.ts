import { Type } from 'typebox';
import { MAX_BUCKETS, RATE_TYPES } from './usage.service.js';
import { USAGE_TYPES, METRIC_EVENT_TYPES } from '../core/events.js';

const common = {
  start: Type.Optional(Type.String({ maxLength: 64, description: 'ISO-8601 start (default: end − 24 periods)' })),
  end: Type.Optional(Type.String({ maxLength: 64, description: 'ISO-8601 end (default: now)' })),
  period: Type.Optional(Type.Integer({ description: 'Seconds per bucket, 1 to 86400 (default 3600)' })),
  limit: Type.Optional(Type.Integer({ description: `Buckets to return (at most ${MAX_BUCKETS})` })),
  descending: Type.Optional(Type.Boolean({ description: 'Newest bucket first' })),
};

export const MetricsEventsQuery = Type.Object({
  event_types: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: `JSON array (as the SDK sends it) or comma-separated list of ${METRIC_EVENT_TYPES.join(', ')}; default all`,
    }),
  ),
  ...common,
});

export const MetricsUsageQuery = Type.Object({
  usage_types: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: `JSON array or comma-separated list of ${USAGE_TYPES.join(', ')}; default every type counted for the scope`,
    }),
  ),
  ...common,
});

export const MetricsRatesQuery = Type.Object({
  rate_types: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: `JSON array or comma-separated list of ${RATE_TYPES.join(', ')}; default both`,
    }),
  ),
  ...common,
  period: Type.Optional(Type.Integer({ description: 'Seconds between points, 60 to 86400 (default 3600)' })),
  window: Type.Optional(
    Type.Integer({
      description:
        'Seconds each point looks back: a whole multiple of period, at most 2592000 (30 days); default 86400',
    }),
  ),
  start: Type.Optional(Type.String({ maxLength: 64, description: 'ISO-8601 start (default: end − 1 day)' })),
});

export const PodParams = Type.Object({ pod_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const InboxParams = Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320 }) });

export const QueryMetricsResponse = Type.Record(
  Type.String(),
  Type.Array(Type.Object({ timestamp: Type.String({ format: 'date-time' }), count: Type.Integer() })),
);
export const QueryUsageResponse = Type.Record(
  Type.String(),
  Type.Array(Type.Object({ timestamp: Type.String({ format: 'date-time' }), value: Type.Number() })),
);
export const QueryRatesResponse = Type.Record(
  Type.String(),
  Type.Array(
    Type.Object({
      timestamp: Type.String({ format: 'date-time', description: 'End of the window the point covers' }),
      rate: Type.Union([Type.Number(), Type.Null()], {
        description: 'Bounced (or complained) messages over messages sent in the window; null when none was sent',
      }),
      sent: Type.Integer({ description: 'Messages sent in the window' }),
    }),
  ),
);
