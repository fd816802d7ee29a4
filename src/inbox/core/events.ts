/**
 * The one catalogue of event types: every event this service writes is named here (ESLint keeps
 * event type literals out of other folders); their payloads are built in `message-events.ts`.
 */

/**
 * The SDK's EventType values (agentmail 0.5.27 `events.EventType`): what a WebSocket subscription
 * may name. Its `metrics.MetricEventType` is the same list without message.opened. This service
 * emits the `EVENT_TYPES` below among them.
 */
export const SDK_EVENT_TYPES = [
  'message.received',
  'message.received.spam',
  'message.received.blocked',
  'message.received.unauthenticated',
  'message.sent',
  'message.delivered',
  'message.bounced',
  'message.complained',
  'message.rejected',
  'message.opened',
  'domain.verified',
] as const;

/** The events that put mail into an inbox's lists: every kind of received mail, and sent mail (the console's live updates). */
export const MAIL_LISTED_EVENT_TYPES: readonly string[] = SDK_EVENT_TYPES.filter(
  (t) => t.startsWith('message.received') || t === 'message.sent',
);

/** What the console draws per day: sends, receipts, bounces and complaints. */
export const CHARTED_EVENT_TYPES: readonly string[] = [
  'message.sent',
  'message.received',
  'message.bounced',
  'message.complained',
];

/** The event catalogue (AgentMail's EventType values this service emits). */
export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.delivered',
  'message.bounced',
  'message.complained',
  'message.rejected',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * A test event (decision 0049): sent on request to one webhook through the ordinary delivery path
 * (signed, retried, logged), whatever its event type filter; never fanned out, sent to no
 * WebSocket, listed nowhere and not counted.
 */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

/** A copy withheld by the recipient's block lists: counted in the metrics under this SDK type, never emitted. */
export const RECEIVED_BLOCKED = 'message.received.blocked' satisfies (typeof SDK_EVENT_TYPES)[number];

/**
 * Label changes of stored messages (mailstore/labels.service.ts): listed by inboxes.events.list
 * (the SDK's "IMAP UID projection"), sent to no webhook, not counted.
 */
export const LABEL_EVENT_TYPES = ['label.added', 'label.removed'] as const;
export type LabelEventType = (typeof LABEL_EVENT_TYPES)[number];
export const [LABEL_ADDED, LABEL_REMOVED] = LABEL_EVENT_TYPES;

export interface EmitInput {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly podId: string;
  readonly eventType: EventType;
  /** Event-specific keys, e.g. `{ message, thread }` or `{ send: {...} }`. */
  readonly body: Readonly<Record<string, unknown>>;
}

/**
 * Filters: no event_types = all; no inbox_ids and no pod_ids = every inbox; else either matches.
 * A webhook of a pod or inbox scope (made with a scoped key) hears nothing outside that scope.
 */
export function webhookMatches(
  filter: {
    eventTypes: readonly string[] | null;
    inboxIds: readonly string[] | null;
    podIds: readonly string[] | null;
    scopePodId?: string | null;
    scopeInboxId?: string | null;
  },
  eventType: string,
  inboxId: string,
  podId: string,
): boolean {
  if (filter.scopePodId != null && filter.scopePodId !== podId) return false;
  if (filter.scopeInboxId != null && filter.scopeInboxId !== inboxId) return false;
  if (filter.eventTypes?.length && !filter.eventTypes.includes(eventType)) return false;
  const byInbox = filter.inboxIds?.length ? filter.inboxIds : null;
  const byPod = filter.podIds?.length ? filter.podIds : null;
  if (!byInbox && !byPod) return true;
  return (byInbox?.includes(inboxId) ?? false) || (byPod?.includes(podId) ?? false);
}

/**
 * Counts the service keeps for metrics.queryEvents and queryUsage (docs/decisions/0020): every
 * emitted event by type, received copies the lists blocked or that arrived as spam or
 * unauthenticated, and the deltas of what is stored (messages, bytes, threads, inboxes).
 */
/** The SDK's MetricEventType: its EventType without message.opened (this service tracks no opens). */
const OPENED = 'message.opened' satisfies (typeof SDK_EVENT_TYPES)[number];
export const METRIC_EVENT_TYPES: readonly string[] = SDK_EVENT_TYPES.filter((t) => t !== OPENED);

/**
 * metrics.queryRates (AgentMail's RateType): each rate is the count of its event type over the
 * count of `sent` in the same window.
 */
export const RATE_EVENT_TYPES = {
  sent: 'message.sent',
  bounce: 'message.bounced',
  complaint: 'message.complained',
} as const satisfies Readonly<Record<string, EventType>>;

export const USAGE_TYPES = [
  'storage_bytes',
  'message_count',
  'thread_count',
  'inbox_count',
  'pod_count',
  'domain_count',
] as const;
