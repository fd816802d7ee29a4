import { LABEL_ADDED, LABEL_REMOVED, WEBHOOK_TEST_EVENT, type EmitInput, webhookMatches } from '../core/events.js';
import { WEBHOOK_DELIVERY_QUEUE, type WebhookDeliveryJob } from '../core/queues.js';
import type { Clock } from '../../platform/clock.js';
import { timeOrderedUuid, type Ids } from '../../platform/ids.js';
import { enqueueMany } from '../../platform/jobs/jobs.js';
import type { Db } from '../schema/database.js';
import { countOf, recordUsage } from '../usage/usage-counts.js';
import { findEnabledWebhookFilters, insertEvents, type StoredEvent } from './event.repository.js';
import type { InboxRef } from '../core/inbox.js';

/**
 * Announces events written in `trx` to the real-time feed (realtime/event-feed.ts), as part of
 * that transaction: subscribers hear of them after the commit, never of rolled-back ones.
 */
export type PublishEvents = (trx: Db, events: readonly StoredEvent[]) => Promise<void>;

/**
 * The only producer of webhook work (the outbox): writes the event and one delivery job per
 * matching webhook in the caller's transaction, so an event exists exactly when its cause does,
 * and announces it to WebSocket subscribers (`publish`) in the same transaction.
 * Call the runner's `notify()` after the commit for immediate delivery. Label changes are written
 * by `recordLabelChanges` alone, for mailstore/labels.service.ts.
 */
export function createEventService({ clock, ids, publish }: { clock: Clock; ids: Ids; publish?: PublishEvents }) {
  return {
    /**
     * Label changes of stored messages (label.added, label.removed): stored for inboxes.events.list
     * in the caller's transaction, one statement; they go to no webhook and are not counted.
     */
    async recordLabelChanges(
      trx: Db,
      inbox: InboxRef,
      changes: readonly { messageId: string; added: readonly string[]; removed: readonly string[] }[],
    ): Promise<void> {
      const now = clock.now();
      const at = now.toISOString();
      const labelled = changes.flatMap(({ messageId, added, removed }) => [
        ...added.map((label) => ({ messageId, label, eventType: LABEL_ADDED })),
        ...removed.map((label) => ({ messageId, label, eventType: LABEL_REMOVED })),
      ]);
      // Ids of one millisecond, sorted: inboxes.events.list gives a change's events in the order written.
      const eventIds = labelled.map(() => `evt_${timeOrderedUuid(now, ids).replace(/-/g, '')}`).sort();
      const events: StoredEvent[] = labelled.map(({ messageId, label, eventType }, i) => ({
        eventId: eventIds[i] as string,
        organizationId: inbox.organizationId,
        eventType,
        inboxId: inbox.inboxId,
        podId: inbox.podId,
        payload: JSON.stringify({ message_id: messageId, label, event_at: at }),
        createdAt: at,
      }));
      await insertEvents(trx, events);
    },

    /**
     * A test event for one webhook (webhooks.sendTest): stored, and one delivery job for that webhook
     * alone, in the caller's transaction. Not published (no WebSocket hears it), not counted.
     */
    async emitWebhookTest(
      trx: Db,
      webhook: { organizationId: string; webhookId: string; podId: string | null; inboxId: string | null },
    ): Promise<StoredEvent> {
      const now = clock.now();
      const eventId = `evt_${timeOrderedUuid(now, ids).replace(/-/g, '')}`;
      const event: StoredEvent = {
        eventId,
        organizationId: webhook.organizationId,
        eventType: WEBHOOK_TEST_EVENT,
        inboxId: webhook.inboxId,
        podId: webhook.podId,
        payload: JSON.stringify({
          type: 'event',
          event_type: WEBHOOK_TEST_EVENT,
          event_id: eventId,
          webhook_id: webhook.webhookId,
          created_at: now.toISOString(),
        }),
        createdAt: now.toISOString(),
      };
      await insertEvents(trx, [event]);
      await enqueueMany(trx, clock, [
        {
          queue: WEBHOOK_DELIVERY_QUEUE,
          payload: { webhook_id: webhook.webhookId, event_id: eventId } satisfies WebhookDeliveryJob,
        },
      ]);
      return event;
    },

    /**
     * Several events with one cause (a send: message.sent, message.received per recipient inbox,
     * message.delivered), or one, in three statements at most:
     * one insert of the events, one webhook lookup per organization, one insert of the jobs.
     * Returns the event ids and how many delivery jobs were queued (nothing to notify if none).
     * Each event is counted for the metrics (usage/) unless `counts: false` says the caller
     * counts them with its own (delivery: one statement for the events and the stored copies).
     */
    async emitMany(
      trx: Db,
      inputs: readonly EmitInput[],
      options: { counts?: boolean } = {},
    ): Promise<{ eventIds: string[]; jobs: number }> {
      const now = clock.now();
      const createdAt = now.toISOString();
      const events: StoredEvent[] = inputs.map((input) => {
        // Time-ordered, so that a burst of sends appends to the events index instead of scattering.
        const eventId = `evt_${timeOrderedUuid(now, ids).replace(/-/g, '')}`;
        const payload = JSON.stringify({
          type: 'event',
          event_type: input.eventType,
          event_id: eventId,
          ...input.body,
        });
        return {
          eventId,
          organizationId: input.organizationId,
          eventType: input.eventType,
          inboxId: input.inboxId,
          podId: input.podId,
          payload,
          createdAt,
        };
      });
      await insertEvents(trx, events);
      if (events.length) await publish?.(trx, events);
      const hooksByOrganization = new Map<string, Awaited<ReturnType<typeof findEnabledWebhookFilters>>>();
      for (const organizationId of new Set(inputs.map((i) => i.organizationId)))
        hooksByOrganization.set(organizationId, await findEnabledWebhookFilters(trx, organizationId));
      const jobs = inputs.flatMap((input, i) =>
        (hooksByOrganization.get(input.organizationId) ?? [])
          .filter((h) => webhookMatches(h, input.eventType, input.inboxId, input.podId))
          .map((h) => ({
            queue: WEBHOOK_DELIVERY_QUEUE,
            payload: {
              webhook_id: h.webhookId,
              event_id: (events[i] as StoredEvent).eventId,
            } satisfies WebhookDeliveryJob,
          })),
      );
      await enqueueMany(trx, clock, jobs);
      if (options.counts !== false)
        await recordUsage(
          trx,
          inputs.map((input) => countOf(input, input.eventType, now)),
        );
      return { eventIds: events.map((e) => e.eventId), jobs: jobs.length };
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
