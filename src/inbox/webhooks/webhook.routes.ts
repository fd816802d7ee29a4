import { Type, type Static } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  ListDeliveriesQuery,
  ListDeliveriesResponse,
  ListWebhooksQuery,
  ListWebhooksResponse,
  UpdateWebhookBody,
  WebhookBody,
  WebhookIdParams,
  TestEventResponse,
  WebhookResponse,
  toDeliveryResponse,
  toTestEventResponse,
  toWebhookResponse,
} from './webhook.schemas.js';
import type { WebhookInput, WebhookService } from './webhook.service.js';

type Body = Static<typeof WebhookBody>;

function inputOf(b: Body): WebhookInput {
  return {
    url: b.url,
    ...(b.event_types !== undefined ? { eventTypes: b.event_types } : {}),
    ...(b.inbox_ids !== undefined ? { inboxIds: b.inbox_ids } : {}),
    ...(b.pod_ids !== undefined ? { podIds: b.pod_ids } : {}),
    ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
    ...(b.enabled !== undefined ? { enabled: b.enabled } : {}),
    ...(b.headers !== undefined ? { headers: b.headers } : {}),
  };
}

export function webhookRoutes(app: InboxApp, webhooks: WebhookService): void {
  const tags = ['webhooks'];
  const conflict = { 409: Type.Ref('ErrorResponse') };

  app.post('/v0/webhooks', {
    schema: {
      tags,
      summary: 'Create a webhook',
      description:
        'Answers 201 with the new webhook and its signing secret; a repeated client_id answers 200 with the webhook created first.',
      body: WebhookBody,
      response: { 200: WebhookResponse, 201: WebhookResponse, ...errorResponses },
    },
    handler: async (request, reply) => {
      const { webhook, created } = await webhooks.create(ownerOf(request), inputOf(request.body));
      return reply.code(created ? 201 : 200).send(toWebhookResponse(webhook));
    },
  });

  app.get('/v0/webhooks', {
    schema: {
      tags,
      summary: 'List webhooks, newest first',
      querystring: ListWebhooksQuery,
      response: { 200: ListWebhooksResponse, ...errorResponses },
    },
    handler: async (request) => {
      const q = request.query;
      const result = await webhooks.list(ownerOf(request), {
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.page_token ? { pageToken: q.page_token } : {}),
        ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
      });
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        webhooks: result.items.map(toWebhookResponse),
      };
    },
  });

  app.get('/v0/webhooks/:webhook_id', {
    schema: {
      tags,
      summary: 'Get a webhook with its signing secret',
      params: WebhookIdParams,
      response: { 200: WebhookResponse, ...errorResponses },
    },
    handler: async (request) => toWebhookResponse(await webhooks.get(ownerOf(request), request.params.webhook_id)),
  });

  app.put('/v0/webhooks/:webhook_id', {
    schema: {
      tags,
      summary: 'Replace a webhook',
      description:
        'Takes the create body and replaces every setting; omitted fields take their defaults (all event types, every inbox, enabled, no client_id). The id, secret and created_at stay.',
      params: WebhookIdParams,
      body: WebhookBody,
      response: { 200: WebhookResponse, ...conflict, ...errorResponses },
    },
    handler: async (request) =>
      toWebhookResponse(await webhooks.replace(ownerOf(request), request.params.webhook_id, inputOf(request.body))),
  });

  app.patch('/v0/webhooks/:webhook_id', {
    schema: {
      tags,
      summary: 'Update a webhook',
      description:
        "Adds and removes inbox and pod filters (the SDK's update), and replaces event_types or enabled when given.",
      params: WebhookIdParams,
      body: UpdateWebhookBody,
      response: { 200: WebhookResponse, ...errorResponses },
    },
    handler: async (request) => {
      const b = request.body;
      return toWebhookResponse(
        await webhooks.update(ownerOf(request), request.params.webhook_id, {
          ...(b.add_inbox_ids !== undefined ? { addInboxIds: b.add_inbox_ids } : {}),
          ...(b.remove_inbox_ids !== undefined ? { removeInboxIds: b.remove_inbox_ids } : {}),
          ...(b.add_pod_ids !== undefined ? { addPodIds: b.add_pod_ids } : {}),
          ...(b.remove_pod_ids !== undefined ? { removePodIds: b.remove_pod_ids } : {}),
          ...(b.event_types !== undefined ? { eventTypes: b.event_types } : {}),
          ...(b.enabled !== undefined ? { enabled: b.enabled } : {}),
        }),
      );
    },
  });

  app.delete('/v0/webhooks/:webhook_id', {
    schema: {
      tags,
      summary: 'Delete a webhook with its delivery log; pending deliveries are dropped',
      params: WebhookIdParams,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      await webhooks.delete(ownerOf(request), request.params.webhook_id);
      return reply.code(204).send(null);
    },
  });

  app.post('/v0/webhooks/:webhook_id/test', {
    schema: {
      tags,
      summary: 'Send a test event to a webhook (this service only, not AgentMail)',
      description:
        "Queues one webhook.test event for this webhook alone, whatever its event_types and inbox filters, and answers 202 at once. It is delivered like any event: signed with the webhook's secret, retried on the same schedule, and logged in its deliveries (filter them by the event_id answered). Needs the webhook update permission; a disabled webhook answers 409.",
      params: WebhookIdParams,
      response: { 202: TestEventResponse, ...conflict, ...errorResponses },
    },
    handler: async (request, reply) => {
      const test = await webhooks.sendTest(ownerOf(request), request.params.webhook_id);
      return reply.code(202).send(toTestEventResponse(request.params.webhook_id, test));
    },
  });

  app.get('/v0/webhooks/:webhook_id/deliveries', {
    schema: {
      tags,
      summary: 'List delivery attempts of a webhook, newest first (this service only, not AgentMail)',
      description:
        'One entry per attempt: status code or error, duration, the first 1 KB of the answer, and the outcome (delivered, retrying, failed). Failed attempts are retried on 5xx, 408, 429, timeouts and connection errors for about a day (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); 410 disables the webhook.',
      params: WebhookIdParams,
      querystring: ListDeliveriesQuery,
      response: { 200: ListDeliveriesResponse, ...errorResponses },
    },
    handler: async (request) => {
      const q = request.query;
      const result = await webhooks.deliveries(ownerOf(request), request.params.webhook_id, {
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.page_token ? { pageToken: q.page_token } : {}),
        ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
        ...(q.event_id !== undefined ? { eventId: q.event_id } : {}),
      });
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        deliveries: result.items.map(toDeliveryResponse),
      };
    },
  });
}
