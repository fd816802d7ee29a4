import { Type } from 'typebox';
import { requirePermission } from '../core/scope.js';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  InboxWebhookBody,
  InboxWebhookIdParams,
  InboxWebhookParams,
  ListWebhooksQuery,
  ListWebhooksResponse,
  PodWebhookBody,
  PodWebhookIdParams,
  PodWebhookParams,
  UpdateInboxWebhookBody,
  UpdatePodWebhookBody,
  UpdateWebhookHeadersBody,
  WebhookHeaderNamesResponse,
  WebhookIdParams,
  WebhookResponse,
  toWebhookResponse,
} from './webhook.schemas.js';
import type { WebhookScopeAddress, WebhookService } from './webhook.service.js';

type HeadersBody = { headers?: Record<string, string>; remove_headers?: string[] };
const headersChange = (b: HeadersBody) => ({
  ...(b.headers !== undefined ? { headers: b.headers } : {}),
  ...(b.remove_headers !== undefined ? { removeHeaders: b.remove_headers } : {}),
});

/**
 * Webhooks limited to one pod (`/v0/pods/:pod_id/webhooks`) or one inbox
 * (`/v0/inboxes/:inbox_id/webhooks`): they only ever receive that scope's events. And the custom
 * delivery headers of every webhook (`…/webhooks/:webhook_id/headers`): names readable, values
 * write-only. Permissions webhookRead / webhookCreate / webhookUpdate / webhookDelete.
 */
export function scopedWebhookRoutes(app: InboxApp, webhooks: WebhookService): void {
  const tags = ['webhooks'];

  app.get('/v0/webhooks/:webhook_id/headers', {
    schema: {
      tags,
      summary: 'Names of the custom delivery headers of a webhook (values are never returned)',
      params: WebhookIdParams,
      response: { 200: WebhookHeaderNamesResponse, ...errorResponses },
    },
    handler: async (request) => ({
      header_names: await webhooks.headerNames(ownerOf(request), request.params.webhook_id),
    }),
  });
  app.patch('/v0/webhooks/:webhook_id/headers', {
    schema: {
      tags,
      summary: 'Set, replace or remove custom delivery headers',
      params: WebhookIdParams,
      body: UpdateWebhookHeadersBody,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      await webhooks.updateHeaders(ownerOf(request), request.params.webhook_id, headersChange(request.body));
      return reply.code(204).send(null);
    },
  });

  const levels = [
    {
      prefix: '/v0/pods/:pod_id/webhooks',
      params: PodWebhookParams,
      idParams: PodWebhookIdParams,
      body: PodWebhookBody,
      update: UpdatePodWebhookBody,
      of: (p: Record<string, string>): WebhookScopeAddress => ({ level: 'pod', podId: p.pod_id as string }),
      what: 'a pod',
    },
    {
      prefix: '/v0/inboxes/:inbox_id/webhooks',
      params: InboxWebhookParams,
      idParams: InboxWebhookIdParams,
      body: InboxWebhookBody,
      update: UpdateInboxWebhookBody,
      of: (p: Record<string, string>): WebhookScopeAddress => ({ level: 'inbox', inboxId: p.inbox_id as string }),
      what: 'an inbox',
    },
  ];
  for (const level of levels) {
    const scopeOf = async (request: { params: unknown }, owner: ReturnType<typeof ownerOf>) =>
      webhooks.scopeOf(owner, level.of(request.params as Record<string, string>));
    app.post(level.prefix, {
      schema: {
        tags,
        summary: `Create a webhook limited to ${level.what}`,
        params: level.params,
        body: level.body,
        response: { 200: WebhookResponse, 201: WebhookResponse, ...errorResponses },
      },
      handler: async (request, reply) => {
        const owner = ownerOf(request);
        const b = request.body as {
          url: string;
          event_types?: string[];
          inbox_ids?: string[];
          client_id?: string;
          headers?: Record<string, string>;
        };
        const { webhook, created } = await webhooks.createScoped(owner, await scopeOf(request, owner), {
          url: b.url,
          ...(b.event_types !== undefined ? { eventTypes: b.event_types } : {}),
          ...(b.inbox_ids !== undefined ? { inboxIds: b.inbox_ids } : {}),
          ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
          ...(b.headers !== undefined ? { headers: b.headers } : {}),
        });
        return reply.code(created ? 201 : 200).send(toWebhookResponse(webhook));
      },
    });
    app.get(level.prefix, {
      schema: {
        tags,
        summary: `List the webhooks limited to ${level.what}, newest first`,
        params: level.params,
        querystring: ListWebhooksQuery,
        response: { 200: ListWebhooksResponse, ...errorResponses },
      },
      handler: async (request) => {
        const owner = ownerOf(request);
        const q = request.query;
        const result = await webhooks.listScoped(owner, await scopeOf(request, owner), {
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
    app.get(`${level.prefix}/:webhook_id`, {
      schema: {
        tags,
        summary: `Get a webhook limited to ${level.what}`,
        params: level.idParams,
        response: { 200: WebhookResponse, ...errorResponses },
      },
      handler: async (request) => {
        const owner = ownerOf(request);
        return toWebhookResponse(
          await webhooks.getScoped(
            owner,
            await scopeOf(request, owner),
            (request.params as { webhook_id: string }).webhook_id,
          ),
        );
      },
    });
    app.patch(`${level.prefix}/:webhook_id`, {
      schema: {
        tags,
        summary: `Update a webhook limited to ${level.what} (its scope never changes)`,
        params: level.idParams,
        body: level.update,
        response: { 200: WebhookResponse, ...errorResponses },
      },
      handler: async (request) => {
        const owner = ownerOf(request);
        const b = request.body as { event_types?: string[]; add_inbox_ids?: string[]; remove_inbox_ids?: string[] };
        requirePermission(owner, 'webhookUpdate');
        const scope = await scopeOf(request, owner);
        return toWebhookResponse(
          await webhooks.update(
            owner,
            (request.params as { webhook_id: string }).webhook_id,
            {
              ...(b.event_types !== undefined ? { eventTypes: b.event_types } : {}),
              ...(b.add_inbox_ids !== undefined ? { addInboxIds: b.add_inbox_ids } : {}),
              ...(b.remove_inbox_ids !== undefined ? { removeInboxIds: b.remove_inbox_ids } : {}),
            },
            scope,
          ),
        );
      },
    });
    app.delete(`${level.prefix}/:webhook_id`, {
      schema: {
        tags,
        summary: `Delete a webhook limited to ${level.what}`,
        params: level.idParams,
        response: { 204: Type.Null(), ...errorResponses },
      },
      handler: async (request, reply) => {
        const owner = ownerOf(request);
        requirePermission(owner, 'webhookDelete');
        await webhooks.delete(
          owner,
          (request.params as { webhook_id: string }).webhook_id,
          await scopeOf(request, owner),
        );
        return reply.code(204).send(null);
      },
    });
    app.get(`${level.prefix}/:webhook_id/headers`, {
      schema: {
        tags,
        summary: `Names of the custom delivery headers of a webhook limited to ${level.what}`,
        params: level.idParams,
        response: { 200: WebhookHeaderNamesResponse, ...errorResponses },
      },
      handler: async (request) => {
        const owner = ownerOf(request);
        return {
          header_names: await webhooks.headerNames(
            owner,
            (request.params as { webhook_id: string }).webhook_id,
            await scopeOf(request, owner),
          ),
        };
      },
    });
    app.patch(`${level.prefix}/:webhook_id/headers`, {
      schema: {
        tags,
        summary: `Set, replace or remove custom delivery headers of a webhook limited to ${level.what}`,
        params: level.idParams,
        body: UpdateWebhookHeadersBody,
        response: { 204: Type.Null(), ...errorResponses },
      },
      handler: async (request, reply) => {
        const owner = ownerOf(request);
        await webhooks.updateHeaders(
          owner,
          (request.params as { webhook_id: string }).webhook_id,
          headersChange(request.body as HeadersBody),
          await scopeOf(request, owner),
        );
        return reply.code(204).send(null);
      },
    });
  }
}
