import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import {
  GiveUpJob,
  RetryJob,
  SVIX_SCHEDULE_MS,
  scheduleBackoff,
  type QueueDefinition,
} from '../../platform/jobs/jobs.js';
import type { InboxDatabase } from '../schema/database.js';
import { findEvent } from '../events/event.repository.js';
import { type WebhookDeliveryJob } from '../core/queues.js';
import { WEBHOOK_TEST_EVENT, webhookMatches } from '../core/events.js';
import { deliveryHeaders } from './webhook-headers.js';
import { signatureHeaders, type WebhookAttempt, type WebhookClient } from './webhook.client.js';
import { disableWebhook, findWebhookById, insertDelivery, type DeliveryOutcome } from './webhook.repository.js';

/** How much of a receiver's answer the delivery log keeps. */
const EXCERPT_BYTES = 1024;
/** A Retry-After beyond this is cut to it: the longest step of the schedule. */
const MAX_RETRY_AFTER_MS = 10 * 3600 * 1000;

export interface WebhookDeliveryWorkerDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly client: WebhookClient;
  readonly log: { warn(o: object, m: string): void };
  /** Delay before the next attempt; Svix's schedule with jitter unless a test says otherwise. */
  readonly backoff?: (attempt: number) => number | undefined;
}

/** What an attempt means for the job: done, try again (when), or never again. */
type Verdict =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'retry'; readonly error: string; readonly notBefore?: Date }
  | { readonly kind: 'final'; readonly error: string; readonly gone?: boolean };

/** Retry-After as seconds or an HTTP date, relative to `now`, capped. */
function retryAfter(value: string | string[] | undefined, now: Date): Date | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const at = /^\s*\d+\s*$/.test(text) ? now.getTime() + Number(text) * 1000 : Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return new Date(Math.min(Math.max(at, now.getTime()), now.getTime() + MAX_RETRY_AFTER_MS));
}

function judge(attempt: WebhookAttempt, now: Date): Verdict {
  if (attempt.kind === 'blocked')
    return { kind: 'final', error: `refused: ${attempt.message}; deliveries go to public addresses only` };
  if (attempt.kind !== 'response') return { kind: 'retry', error: attempt.message };
  const { status, headers } = attempt;
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  // Standard Webhooks lets a receiver stop the retries of one message.
  if (String(headers['webhook-delivery'] ?? '').toLowerCase() === 'abort-message')
    return {
      kind: 'final',
      error: `the receiver answered ${status} and asked not to retry (webhook-delivery: abort-message)`,
    };
  if (status === 410)
    return { kind: 'final', error: 'the receiver answered 410 Gone; the webhook is disabled', gone: true };
  if (status === 408 || status === 429 || status >= 500) {
    const notBefore = retryAfter(headers['retry-after'], now);
    return { kind: 'retry', error: `the receiver answered ${status}`, ...(notBefore ? { notBefore } : {}) };
  }
  if (status >= 300 && status < 400)
    return { kind: 'final', error: `the receiver answered ${status}; redirects are not followed` };
  return {
    kind: 'final',
    error: `the receiver answered ${status}; client errors other than 408 and 429 are not retried`,
  };
}

/** The start of a response as log text; PostgreSQL text cannot hold NUL characters. */
function excerpt(body: Buffer): string | null {
  if (!body.length) return null;
  // eslint-disable-next-line no-control-regex -- removing NUL is the point
  return new TextDecoder('utf-8', { fatal: false }).decode(body.subarray(0, EXCERPT_BYTES)).replace(/\u0000/g, '');
}

/**
 * The `webhook.deliver` queue: one job per (event, webhook), enqueued by the events outbox.
 * Each attempt POSTs the event's stored bytes, signed for this attempt, and logs a row in
 * `webhook_deliveries`. The svix-id is the event id on every attempt: the receiver's
 * idempotency key, since a crash between sending and recording can repeat an attempt.
 */
export function webhookDeliveryQueue({
  db,
  clock,
  client,
  log,
  backoff = scheduleBackoff(SVIX_SCHEDULE_MS),
}: WebhookDeliveryWorkerDeps): QueueDefinition<WebhookDeliveryJob> {
  return {
    backoff,
    // Renewed while the receiver takes its time: a dead worker's deliveries are taken over 15 s on.
    leaseMs: 15_000,
    async handle(job) {
      const { webhook_id: webhookId, event_id: eventId } = job.payload;
      // Deleted, disabled or re-filtered since the event: nothing to send, and nothing to retry.
      const webhook = await findWebhookById(db, webhookId);
      if (!webhook?.enabled) return;
      const event = await findEvent(db, eventId);
      if (!event || event.organizationId !== webhook.organizationId) return;
      // A test event is queued for its one webhook alone, whatever that webhook's filters (decision 0049).
      if (
        event.eventType !== WEBHOOK_TEST_EVENT &&
        !webhookMatches(webhook, event.eventType, event.inboxId ?? '', event.podId ?? '')
      )
        return;

      const now = clock.now();
      const attempt = await client.post(
        webhook.url,
        event.payload,
        deliveryHeaders(
          webhook.headers,
          signatureHeaders(webhook.secret, event.eventId, Math.floor(now.getTime() / 1000), event.payload),
        ),
      );
      const verdict = judge(attempt, now);
      const outcome: DeliveryOutcome =
        verdict.kind === 'delivered'
          ? 'delivered'
          : verdict.kind === 'retry' && backoff(job.attempt) !== undefined
            ? 'retrying'
            : 'failed';
      await insertDelivery(db, {
        webhookId,
        eventId,
        attempt: job.attempt,
        statusCode: attempt.kind === 'response' ? attempt.status : null,
        error: verdict.kind === 'delivered' ? null : verdict.error,
        durationMs: attempt.durationMs,
        responseExcerpt: attempt.kind === 'response' ? excerpt(attempt.body) : null,
        outcome,
        createdAt: now.toISOString(),
      });

      if (verdict.kind === 'delivered') return;
      if (verdict.kind === 'retry') throw new RetryJob(verdict.error, verdict.notBefore);
      if (verdict.gone) {
        await disableWebhook(
          db,
          webhookId,
          `The receiver answered 410 Gone at ${now.toISOString()}.`,
          clock.now().toISOString(),
        );
        log.warn({ webhook_id: webhookId, event_id: eventId }, 'webhook disabled: the receiver answered 410 Gone');
      }
      throw new GiveUpJob(verdict.error);
    },
  };
}
