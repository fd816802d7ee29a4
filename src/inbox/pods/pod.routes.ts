import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses, PageQuery as InboxListQuery } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import type { PodService } from './pod.service.js';
import { CreatePodBody, ListPodsResponse, PodParams, PodResponse, toPodResponse } from './pod.schemas.js';

/**
 * Pods themselves. The pod-scoped routes of inboxes and threads live with those resources
 * (`inboxes/pod-inbox.routes.ts`, `threads/pod-thread.routes.ts`): every /v0/pods/:pod_id/… route
 * first checks that the pod is the caller's to see (404 if not), then asks the resource's service
 * for records of that pod only.
 */
export function podRoutes(app: InboxApp, services: { pods: PodService }): void {
  const { pods } = services;
  const tags = ['pods'];

  app.post('/v0/pods', {
    schema: {
      tags,
      summary: 'Create a pod',
      body: CreatePodBody,
      response: { 200: PodResponse, 201: PodResponse, 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    handler: async (request, reply) => {
      const b = request.body;
      const { pod, created } = await pods.create(ownerOf(request), {
        ...(b.name !== undefined ? { name: b.name } : {}),
        ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
      });
      return reply.code(created ? 201 : 200).send(toPodResponse(pod));
    },
  });

  app.get('/v0/pods', {
    schema: {
      tags,
      summary: 'List pods, newest first',
      querystring: InboxListQuery,
      response: { 200: ListPodsResponse, ...errorResponses },
    },
    handler: async (request) => {
      const q = request.query;
      const result = await pods.list(ownerOf(request), {
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.page_token ? { pageToken: q.page_token } : {}),
        ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
      });
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        pods: result.items.map(toPodResponse),
      };
    },
  });

  app.get('/v0/pods/:pod_id', {
    schema: { tags, summary: 'Get a pod', params: PodParams, response: { 200: PodResponse, ...errorResponses } },
    handler: async (request) => toPodResponse(await pods.get(ownerOf(request), request.params.pod_id)),
  });

  app.delete('/v0/pods/:pod_id', {
    schema: {
      tags,
      summary: 'Delete a pod without inboxes (409 while it has some); its API keys go with it',
      params: PodParams,
      response: { 204: Type.Null(), 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    handler: async (request, reply) => {
      await pods.delete(ownerOf(request), request.params.pod_id);
      return reply.code(204).send(null);
    },
  });
}
