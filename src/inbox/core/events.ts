/**
 * The SDK's EventType values (agentmail 0.5.27 `events.EventType`): what a WebSocket subscription
 * may name. Its `metrics.MetricEventType` is the same list without message.opened. This service
 * emits the `EVENT_TYPES` of event.service.ts among them. A module of its own, without imports:
 * usage/ (imported by event.service.ts) reads it too.
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
