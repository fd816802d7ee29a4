import { Type, type Static } from 'typebox';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT } from '../core/events.js';
import { MAX_FILTER_IDS } from './webhook.errors.js';
import type { Webhook, WebhookDelivery } from './webhook.repository.js';

export const WebhookIdParams = Type.Object({
  webhook_id: Type.String({ minLength: 1, maxLength: 64, description: 'The webhook id (ep_…)' }),
});

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'Receiver of the deliveries: http(s), at most 2048 characters, no credentials, a public address',
});
const EventTypes = Type.Array(Type.String({ maxLength: 64 }), {
  description: `Event types to deliver; omitted or empty: all (${EVENT_TYPES.join(', ')})`,
});
const InboxIds = (what: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 320 }), {
    description: `${what} (at most ${MAX_FILTER_IDS} per webhook)`,
  });
const PodIds = (what: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    description: `${what} (at most ${MAX_FILTER_IDS} per webhook)`,
  });
const Headers = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 4096 }), {
  description:
    'Custom HTTP headers sent with every delivery (at most 20; names are tokens, values visible ASCII; never the signature or framing headers). Write-only: reads return the names only.',
});
const ClientId = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Idempotency key: a repeated create returns the webhook created first',
});

/** Create (POST) and replace (PUT) take the same body; PUT resets what it omits to these defaults. */
export const WebhookBody = Type.Object({
  url: Url,
  event_types: Type.Optional(EventTypes),
  inbox_ids: Type.Optional(InboxIds('Only events of these inboxes; with pod_ids, events of either')),
  pod_ids: Type.Optional(PodIds('Only events of inboxes in these pods')),
  client_id: Type.Optional(ClientId),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true' })),
  headers: Type.Optional(Headers),
});

/** inboxes.webhooks.create: the inbox comes from the path. */
export const InboxWebhookBody = Type.Object(
  {
    url: Url,
    event_types: Type.Optional(EventTypes),
    client_id: Type.Optional(ClientId),
    headers: Type.Optional(Headers),
  },
  { additionalProperties: false },
);

/** pods.webhooks.create: the pod comes from the path; inbox_ids narrow it to inboxes of that pod. */
export const PodWebhookBody = Type.Object(
  {
    url: Url,
    event_types: Type.Optional(EventTypes),
    inbox_ids: Type.Optional(InboxIds('Only events of these inboxes of the pod')),
    client_id: Type.Optional(ClientId),
    headers: Type.Optional(Headers),
  },
  { additionalProperties: false },
);

/** inboxes.webhooks.update: fixed to its inbox, only event_types change. */
export const UpdateInboxWebhookBody = Type.Object(
  { event_types: Type.Optional(EventTypes) },
  { additionalProperties: false },
);

/** pods.webhooks.update: inboxes of the pod added or removed, event_types replaced. */
export const UpdatePodWebhookBody = Type.Object(
  {
    event_types: Type.Optional(EventTypes),
    add_inbox_ids: Type.Optional(InboxIds('Inboxes of the pod to add to the filter')),
    remove_inbox_ids: Type.Optional(InboxIds('Inboxes to remove from the filter')),
  },
  { additionalProperties: false },
);

export const UpdateWebhookHeadersBody = Type.Object({
  headers: Type.Optional(Headers),
  remove_headers: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
      maxItems: 100,
      description: 'Names of custom headers to remove',
    }),
  ),
});

export const WebhookHeaderNamesResponse = Type.Object({
  header_names: Type.Array(Type.String(), {
    description: 'Names of the custom delivery headers; values are never returned',
  }),
});

export const PodWebhookParams = Type.Object({ pod_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const PodWebhookIdParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  webhook_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export const InboxWebhookParams = Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320 }) });
export const InboxWebhookIdParams = Type.Object({
  inbox_id: Type.String({ minLength: 1, maxLength: 320 }),
  webhook_id: Type.String({ minLength: 1, maxLength: 64 }),
});

/** PATCH, in the SDK's shape, plus event_types (newer SDKs) and enabled (to resume after a 410). */
export const UpdateWebhookBody = Type.Object({
  add_inbox_ids: Type.Optional(InboxIds('Inboxes to add to the filter')),
  remove_inbox_ids: Type.Optional(
    InboxIds('Inboxes to remove from the filter; removing the last one widens the webhook to every inbox'),
  ),
  add_pod_ids: Type.Optional(PodIds('Pods to add to the filter')),
  remove_pod_ids: Type.Optional(PodIds('Pods to remove from the filter')),
  event_types: Type.Optional(EventTypes),
  enabled: Type.Optional(Type.Boolean()),
});

export const ListWebhooksQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
});

export const ListDeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
  event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the attempts of this event' })),
});

export const WebhookResponse = Type.Object({
  webhook_id: Type.String(),
  url: Type.String(),
  event_types: Type.Optional(Type.Array(Type.String())),
  pod_ids: Type.Optional(Type.Array(Type.String())),
  inbox_ids: Type.Optional(Type.Array(Type.String())),
  secret: Type.String({
    description: 'Signing secret (whsec_ + base64): verify deliveries with any Svix or Standard Webhooks library',
  }),
  enabled: Type.Boolean(),
  disabled_reason: Type.Optional(
    Type.String({ description: 'Why the service disabled the webhook (the receiver answered 410 Gone)' }),
  ),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  client_id: Type.Optional(Type.String()),
});

export const ListWebhooksResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  webhooks: Type.Array(WebhookResponse),
});

export const DeliveryResponse = Type.Object({
  webhook_id: Type.String(),
  event_id: Type.String({
    description: "Also the svix-id / webhook-id header of the request: the receiver's idempotency key",
  }),
  event_type: Type.Optional(Type.String()),
  attempt: Type.Integer({ description: '1 for the first attempt' }),
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('retrying'), Type.Literal('failed')], {
    description: 'delivered (2xx); retrying (another attempt is scheduled); failed (no further attempt)',
  }),
  status_code: Type.Optional(
    Type.Integer({ description: 'Status the receiver answered; absent when no response arrived' }),
  ),
  error: Type.Optional(Type.String()),
  duration_ms: Type.Integer(),
  response: Type.Optional(Type.String({ description: 'The first 1 KB of the response body' })),
  created_at: Type.String({ format: 'date-time' }),
});

export const TestEventResponse = Type.Object({
  webhook_id: Type.String(),
  event_id: Type.String({
    description: 'The test event: its deliveries are listed under this event_id (GET …/deliveries?event_id=)',
  }),
  event_type: Type.Literal(WEBHOOK_TEST_EVENT),
  created_at: Type.String({ format: 'date-time' }),
});

export function toTestEventResponse(
  webhookId: string,
  test: { eventId: string; createdAt: string },
): Static<typeof TestEventResponse> {
  return { webhook_id: webhookId, event_id: test.eventId, event_type: WEBHOOK_TEST_EVENT, created_at: test.createdAt };
}

export const ListDeliveriesResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  deliveries: Type.Array(DeliveryResponse),
});

export function toWebhookResponse(webhook: Webhook): Static<typeof WebhookResponse> {
  return {
    webhook_id: webhook.webhookId,
    url: webhook.url,
    ...(webhook.eventTypes ? { event_types: [...webhook.eventTypes] } : {}),
    ...(webhook.podIds ? { pod_ids: [...webhook.podIds] } : {}),
    ...(webhook.inboxIds ? { inbox_ids: [...webhook.inboxIds] } : {}),
    secret: webhook.secret,
    enabled: webhook.enabled,
    ...(webhook.disabledReason !== null ? { disabled_reason: webhook.disabledReason } : {}),
    created_at: webhook.createdAt,
    updated_at: webhook.updatedAt,
    ...(webhook.clientId !== null ? { client_id: webhook.clientId } : {}),
  };
}

export function toDeliveryResponse(delivery: WebhookDelivery): Static<typeof DeliveryResponse> {
  return {
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    ...(delivery.eventType !== null ? { event_type: delivery.eventType } : {}),
    attempt: delivery.attempt,
    outcome: delivery.outcome,
    ...(delivery.statusCode !== null ? { status_code: delivery.statusCode } : {}),
    ...(delivery.error !== null ? { error: delivery.error } : {}),
    duration_ms: delivery.durationMs,
    ...(delivery.responseExcerpt !== null ? { response: delivery.responseExcerpt } : {}),
    created_at: delivery.createdAt,
  };
}
