import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses, PageQuery as InboxListQuery } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import { CreateInboxBody, UpdateInboxBody, toCreateInboxInput, toUpdateInboxInput } from './inbox.schemas.js';
import { InboxResponse, ListInboxesResponse, toInboxResponse } from '../core/inbox.wire.js';
import type { InboxService } from './inbox.service.js';
import type { PodGuard } from '../pods/pod.service.js';
import { PodInboxParams, PodParams } from '../pods/pod.schemas.js';

/** The inboxes of a pod (/v0/pods/:pod_id/inboxes…): the pod is checked first (404 if out of reach). */
export function podInboxRoutes(app: InboxApp, services: { inboxes: InboxService; requirePod: PodGuard }): void {
  const { inboxes, requirePod } = services;
  const tags = ['pods'];

  // Inboxes of a pod.
  app.post('/v0/pods/:pod_id/inboxes', {
    schema: {
      tags,
      summary: 'Create an inbox in a pod',
      params: PodParams,
      body: CreateInboxBody,
      response: { 200: InboxResponse, 201: InboxResponse, 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    handler: async (request, reply) => {
      const owner = ownerOf(request);
      const podId = await requirePod(owner, request.params.pod_id);
      const { inbox, created } = await inboxes.create(owner, toCreateInboxInput(request.body), podId);
      return reply.code(created ? 201 : 200).send(toInboxResponse(inbox));
    },
  });

  app.get('/v0/pods/:pod_id/inboxes', {
    schema: {
      tags,
      summary: 'List the inboxes of a pod, newest first',
      params: PodParams,
      querystring: InboxListQuery,
      response: { 200: ListInboxesResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const podId = await requirePod(owner, request.params.pod_id);
      const q = request.query;
      const result = await inboxes.list(
        owner,
        {
          ...(q.limit !== undefined ? { limit: q.limit } : {}),
          ...(q.page_token ? { pageToken: q.page_token } : {}),
          ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
        },
        podId,
      );
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        inboxes: result.items.map(toInboxResponse),
      };
    },
  });

  app.get('/v0/pods/:pod_id/inboxes/:inbox_id', {
    schema: {
      tags,
      summary: 'Get an inbox of a pod',
      params: PodInboxParams,
      response: { 200: InboxResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toInboxResponse(
        await inboxes.get(owner, request.params.inbox_id, await requirePod(owner, request.params.pod_id)),
      );
    },
  });

  app.patch('/v0/pods/:pod_id/inboxes/:inbox_id', {
    schema: {
      tags,
      summary: 'Change the display name, the metadata and/or the status of an inbox of a pod',
      params: PodInboxParams,
      body: UpdateInboxBody,
      response: { 200: InboxResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const change = toUpdateInboxInput(request.body);
      return toInboxResponse(
        await inboxes.update(owner, request.params.inbox_id, change, await requirePod(owner, request.params.pod_id)),
      );
    },
  });

  app.delete('/v0/pods/:pod_id/inboxes/:inbox_id', {
    schema: {
      tags,
      summary: 'Delete an inbox of a pod with its messages and threads',
      params: PodInboxParams,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      const owner = ownerOf(request);
      await inboxes.delete(owner, request.params.inbox_id, await requirePod(owner, request.params.pod_id));
      return reply.code(204).send(null);
    },
  });
}
