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
