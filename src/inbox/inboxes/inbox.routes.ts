import { Type } from 'typebox';
import { errorResponses, InboxIdParams, PageQuery as ListQuery } from '../http/common.schemas.js';
import { ownerOf } from '../http/auth.js';
import type { InboxApp } from '../http/types.js';
import { CreateInboxBody, UpdateInboxBody, toCreateInboxInput, toUpdateInboxInput } from './inbox.schemas.js';
import { InboxResponse, ListInboxesResponse, toInboxResponse } from '../core/inbox.wire.js';
import type { InboxService } from './inbox.service.js';

export function inboxRoutes(app: InboxApp, inboxes: InboxService): void {
  const tags = ['inboxes'];

  app.post('/v0/inboxes', {
    schema: {
      tags,
      summary: 'Create an inbox',
      body: CreateInboxBody,
      response: { 200: InboxResponse, 201: InboxResponse, 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    handler: async (request, reply) => {
      const { inbox, created } = await inboxes.create(ownerOf(request), toCreateInboxInput(request.body));
      return reply.code(created ? 201 : 200).send(toInboxResponse(inbox));
    },
  });

  app.get('/v0/inboxes', {
    schema: {
      tags,
      summary: 'List inboxes, newest first',
      querystring: ListQuery,
      response: { 200: ListInboxesResponse, ...errorResponses },
    },
    handler: async (request) => {
      const q = request.query;
      const result = await inboxes.list(ownerOf(request), {
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.page_token ? { pageToken: q.page_token } : {}),
        ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
      });
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        inboxes: result.items.map(toInboxResponse),
      };
    },
  });

  app.get('/v0/inboxes/:inbox_id', {
    schema: {
      tags,
      summary: 'Get an inbox',
      params: InboxIdParams,
      response: { 200: InboxResponse, ...errorResponses },
    },
    handler: async (request) => toInboxResponse(await inboxes.get(ownerOf(request), request.params.inbox_id)),
  });

  app.patch('/v0/inboxes/:inbox_id', {
    schema: {
      tags,
      summary: 'Change the display name, the metadata and/or the status (active, paused) of an inbox',
      params: InboxIdParams,
      body: UpdateInboxBody,
      response: { 200: InboxResponse, ...errorResponses },
    },
    handler: async (request) => {
      const change = toUpdateInboxInput(request.body);
      return toInboxResponse(await inboxes.update(ownerOf(request), request.params.inbox_id, change));
    },
  });

  app.delete('/v0/inboxes/:inbox_id', {
    schema: {
      tags,
      summary: 'Delete an inbox with its messages and threads',
      params: InboxIdParams,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      await inboxes.delete(ownerOf(request), request.params.inbox_id);
      return reply.code(204).send(null);
    },
  });
}
