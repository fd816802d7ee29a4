import { Type, type Static } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses, InboxIdParams } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  ApiKeyIdParams,
  ApiKeyListQuery,
  ApiKeyResponse,
  CreateApiKeyBody,
  CreateApiKeyResponse,
  IdentityResponse,
  InboxApiKeyParams,
  ListApiKeysResponse,
  OrganizationResponse,
  PodApiKeyParams,
  UpdateApiKeyBody,
  fromWirePermissions,
  toApiKeyResponse,
  toCreateApiKeyResponse,
  toOrganizationResponse,
} from './api-key.schemas.js';
import type { ApiKeyService, KeyPlace } from './api-key.service.js';

const PodParams = Type.Object({ pod_id: Type.String({ minLength: 1, maxLength: 64 }) });
type Body = Static<typeof CreateApiKeyBody>;
const inputOf = (b: Body) => {
  const permissions = fromWirePermissions(b.permissions);
  return { ...(b.name !== undefined ? { name: b.name } : {}), ...(permissions !== undefined ? { permissions } : {}) };
};

/**
 * API keys at the organization (/v0/api-keys), a pod (/v0/pods/:pod_id/api-keys) and an inbox
 * (/v0/inboxes/:inbox_id/api-keys); who the caller is (/v0/auth/me) and its organization.
 */
export function apiKeyRoutes(app: InboxApp, apiKeys: ApiKeyService): void {
  const tags = ['api-keys'];
  const toList = (result: Awaited<ReturnType<ApiKeyService['list']>>) => ({
    count: result.items.length,
    limit: result.limit,
    ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
    api_keys: result.items.map(toApiKeyResponse),
  });
  const listQuery = (q: Static<typeof ApiKeyListQuery>) => ({
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.page_token ? { pageToken: q.page_token } : {}),
    ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
  });

  // One set of five routes per place a key can be managed at.
  const places: {
    prefix: string;
    params: typeof PodParams | typeof InboxIdParams | undefined;
    keyParams: typeof ApiKeyIdParams | typeof PodApiKeyParams | typeof InboxApiKeyParams;
    place: (p: Record<string, string>) => KeyPlace;
    what: string;
  }[] = [
    {
      prefix: '/v0/api-keys',
      params: undefined,
      keyParams: ApiKeyIdParams,
      place: () => ({ level: 'organization' }),
      what: 'of the organization',
    },
    {
      prefix: '/v0/pods/:pod_id/api-keys',
      params: PodParams,
      keyParams: PodApiKeyParams,
      place: (p) => ({ level: 'pod', podId: p.pod_id as string }),
      what: 'limited to a pod',
    },
    {
      prefix: '/v0/inboxes/:inbox_id/api-keys',
      params: InboxIdParams,
      keyParams: InboxApiKeyParams,
      place: (p) => ({ level: 'inbox', inboxId: p.inbox_id as string }),
      what: 'limited to an inbox',
    },
  ];
  for (const { prefix, params, keyParams, place, what } of places) {
    const paramsSchema = params ? { params } : {};
    app.post(prefix, {
      schema: {
        tags,
        summary: `Create an API key ${what} (the secret is shown once)`,
        ...paramsSchema,
        body: CreateApiKeyBody,
        response: { 200: CreateApiKeyResponse, ...errorResponses },
      },
      handler: async (request) =>
        toCreateApiKeyResponse(
          await apiKeys.create(
            ownerOf(request),
            place(request.params as Record<string, string>),
            inputOf(request.body),
          ),
        ),
    });
    app.get(prefix, {
      schema: {
        tags,
        summary: `List the API keys ${what}, newest first`,
        ...paramsSchema,
        querystring: ApiKeyListQuery,
        response: { 200: ListApiKeysResponse, ...errorResponses },
      },
      handler: async (request) => {
        const q = request.query;
        const result = await apiKeys.list(
          ownerOf(request),
          place(request.params as Record<string, string>),
          listQuery(q),
        );
        // Every key here is a bearer key.
        return toList(q.type === 'public_key' ? { ...result, items: [], nextPageToken: undefined } : result);
      },
    });
    if (prefix === '/v0/api-keys') {
      app.get(`${prefix}/:api_key_id`, {
        schema: {
          tags,
          summary: 'Get an API key (never its secret)',
          params: keyParams,
          response: { 200: ApiKeyResponse, ...errorResponses },
        },
        handler: async (request) =>
          toApiKeyResponse(
            await apiKeys.get(
              ownerOf(request),
              place(request.params as Record<string, string>),
              (request.params as { api_key_id: string }).api_key_id,
            ),
          ),
      });
    }
    app.patch(`${prefix}/:api_key_id`, {
      schema: {
        tags,
        summary: `Rename an API key ${what} or replace its permissions`,
        params: keyParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKeyResponse, ...errorResponses },
      },
      handler: async (request) =>
        toApiKeyResponse(
          await apiKeys.update(
            ownerOf(request),
            place(request.params as Record<string, string>),
            (request.params as { api_key_id: string }).api_key_id,
            inputOf(request.body),
          ),
        ),
    });
    app.delete(`${prefix}/:api_key_id`, {
      schema: {
        tags,
        summary: `Delete an API key ${what}: it stops working at once`,
        params: keyParams,
        response: { 204: Type.Null(), ...errorResponses },
      },
      handler: async (request, reply) => {
        await apiKeys.delete(
          ownerOf(request),
          place(request.params as Record<string, string>),
          (request.params as { api_key_id: string }).api_key_id,
        );
        return reply.code(204).send(null);
      },
    });
  }

  app.get('/v0/auth/me', {
    schema: {
      tags: ['auth'],
      summary: 'Who the API key is: its organization and its pod or inbox scope',
      response: { 200: IdentityResponse, ...errorResponses },
    },
    handler: async (request) => {
      const me = apiKeys.identity(ownerOf(request));
      return {
        scope_type: me.scopeType,
        scope_id: me.scopeId,
        organization_id: me.organizationId,
        ...(me.podId !== undefined ? { pod_id: me.podId } : {}),
        ...(me.inboxId !== undefined ? { inbox_id: me.inboxId } : {}),
        api_key_id: me.apiKeyId,
      };
    },
  });

  app.get('/v0/organizations', {
    schema: {
      tags: ['organizations'],
      summary: "The API key's organization",
      response: { 200: OrganizationResponse, ...errorResponses },
    },
    handler: async (request) => toOrganizationResponse(await apiKeys.organization(ownerOf(request))),
  });
}
