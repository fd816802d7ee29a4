import type { Kysely } from 'kysely';
import type { KeyOwner } from '../api-keys/api-key.repository.js';
import { podBelongsTo } from '../api-keys/api-key.repository.js';
import { inScope } from '../api-keys/scope.js';
import type { InboxDatabase } from '../database.js';
import { SDK_EVENT_TYPES } from '../events/event-types.js';
import { webhookMatches } from '../events/event.service.js';
import { findInboxesByAddresses } from '../inboxes/inbox.repository.js';
import { normalizeInboxId } from '../inboxes/inbox.service.js';
import type { FeedEventSummary } from './event-feed.js';

/**
 * The subscriptions of WebSocket clients (agentmail 0.5.27 `websockets`): what a `subscribe` frame
 * may say, whether its ids belong to the key, and which events a subscription receives.
 */

/** A client may subscribe to any of the SDK's event types (this service emits the message.* ones it knows). */
export const SUBSCRIBABLE_EVENT_TYPES: readonly string[] = SDK_EVENT_TYPES;

/** Ids per filter list of one subscription. */
export const MAX_SUBSCRIPTION_IDS = 100;

export interface Subscription {
  readonly eventTypes: readonly string[] | null;
  readonly inboxIds: readonly string[] | null;
  readonly podIds: readonly string[] | null;
}

/** A frame the server refuses: sent back as `{ type: 'error', name, message }`, the connection stays. */
export class FrameError extends Error {
  constructor(
    readonly errorName: 'ValidationError' | 'NotFoundError',
    message: string,
  ) {
    super(message);
  }
}

const FIELDS = new Set(['type', 'event_types', 'inbox_ids', 'pod_ids']);

function stringList(frame: Record<string, unknown>, field: string): string[] | null {
  const value = frame[field];
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.trim() === '' || v.length > 320)) {
    throw new FrameError('ValidationError', `${field}: must be an array of non-empty strings.`);
  }
  const unique = [...new Set(value as string[])];
  if (unique.length > MAX_SUBSCRIPTION_IDS)
    throw new FrameError('ValidationError', `${field}: at most ${MAX_SUBSCRIPTION_IDS} entries.`);
  return unique.length ? unique : null;
}

/** The client frame as text: a `subscribe` frame with its filters (not yet checked against the key). */
export function parseClientFrame(text: string): Subscription {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw new FrameError('ValidationError', 'The frame is not valid JSON.');
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame))
    throw new FrameError('ValidationError', 'A frame is a JSON object with a "type".');
  const record = frame as Record<string, unknown>;
  if (record.type !== 'subscribe')
    throw new FrameError(
      'ValidationError',
      `type: unknown frame type ${JSON.stringify(record.type ?? null)}; clients send "subscribe".`,
    );
  const unknown = Object.keys(record).find((k) => !FIELDS.has(k));
  if (unknown !== undefined)
    throw new FrameError(
      'ValidationError',
      `${unknown}: unknown field; a subscribe frame has event_types, inbox_ids and pod_ids.`,
    );
  const eventTypes = stringList(record, 'event_types');
  const wrong = eventTypes?.find((t) => !SUBSCRIBABLE_EVENT_TYPES.includes(t));
  if (wrong !== undefined)
    throw new FrameError(
      'ValidationError',
      `event_types: unknown event type "${wrong}"; one of ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}.`,
    );
  return {
    eventTypes,
    inboxIds: stringList(record, 'inbox_ids')?.map(normalizeInboxId) ?? null,
    podIds: stringList(record, 'pod_ids')?.map((p) => p.trim()) ?? null,
  };
}

/**
 * Checks that every inbox and pod of the subscription is the key's to see. An unknown id and one
 * of another organization (or outside the key's scope) get the same answer, so that a frame
 * reveals nothing about ids that are not the caller's.
 */
export async function checkSubscription(
  db: Kysely<InboxDatabase>,
  owner: KeyOwner,
  subscription: Subscription,
): Promise<Subscription> {
  if (subscription.inboxIds) {
    const visible = new Set(
      (await findInboxesByAddresses(db, subscription.inboxIds)).filter((i) => inScope(owner, i)).map((i) => i.inboxId),
    );
    const missing = subscription.inboxIds.find((id) => !visible.has(id));
    if (missing !== undefined) throw new FrameError('NotFoundError', `inbox_ids: inbox ${missing} not found.`);
  }
  for (const podId of subscription.podIds ?? []) {
    // An inbox key lives in one pod: it may name that pod (its events are still only its inbox's).
    const visible =
      (await podBelongsTo(db, podId, owner.organizationId)) &&
      inScope(owner, { organizationId: owner.organizationId, podId, inboxId: owner.inboxId ?? null });
    if (!visible) throw new FrameError('NotFoundError', `pod_ids: pod ${podId} not found.`);
  }
  return subscription;
}

/** The `subscribed` acknowledgement: the filters in force, as the SDK's Subscribed type names them. */
export function subscribedFrame(subscription: Subscription): string {
  return JSON.stringify({
    type: 'subscribed',
    ...(subscription.eventTypes ? { event_types: subscription.eventTypes } : {}),
    ...(subscription.inboxIds ? { inbox_ids: subscription.inboxIds } : {}),
    ...(subscription.podIds ? { pod_ids: subscription.podIds } : {}),
  });
}

/** Whether a client of `owner` with `subscription` receives the event: in the key's scope, and matching the filters as a webhook's would. */
export function receives(owner: KeyOwner, subscription: Subscription, event: FeedEventSummary): boolean {
  if (!inScope(owner, event)) return false;
  return webhookMatches(subscription, event.eventType, event.inboxId ?? '', event.podId ?? '');
}
