import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import type { InboxEvent, InboxEventService } from './inbox-event.service.js';

const InboxEventResponse = Type.Object({
  organization_id: Type.String(),
  pod_id: Type.String(),
  inbox_id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String({ description: 'label.added or label.removed' }),
  message_id: Type.String(),
  label: Type.String(),
  event_at: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
});

const toWire = (e: InboxEvent) => ({
  organization_id: e.organizationId,
  pod_id: e.podId,
  inbox_id: e.inboxId,
  event_id: e.eventId,
  event_type: e.eventType,
  message_id: e.messageId,
  label: e.label,
  event_at: e.eventAt,
  created_at: e.createdAt,
});

/** inboxes.events.list: label changes of the inbox's messages, by event_id (newest first unless ascending). */
export function inboxEventRoutes(app: InboxApp, events: InboxEventService): void {
  app.get('/v0/inboxes/:inbox_id/events', {
    schema: {
      tags: ['inboxes'],
      summary: 'List label changes of the messages of an inbox',
      params: Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320 }) }),
      querystring: Type.Object({
        limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
        page_token: Type.Optional(Type.String({ maxLength: 1000 })),
        ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
      }),
      response: {
        200: Type.Object({
          count: Type.Integer(),
          limit: Type.Optional(Type.Integer()),
          next_page_token: Type.Optional(Type.String()),
          events: Type.Array(InboxEventResponse),
        }),
        ...errorResponses,
      },
    },
    handler: async (request) => {
      const q = request.query;
      const result = await events.list(ownerOf(request), request.params.inbox_id, {
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.page_token ? { pageToken: q.page_token } : {}),
        ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
      });
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        events: result.items.map(toWire),
      };
    },
  });
}
