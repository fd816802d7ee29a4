import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  CreateInboxBody,
  InboxResponse,
  ListInboxesResponse,
  ListQuery as InboxListQuery,
  UpdateInboxBody,
  toCreateInboxInput,
  toInboxResponse,
} from '../inboxes/inbox.schemas.js';
import type { InboxService } from '../inboxes/inbox.service.js';
import { requestOrigin } from '../messages/message.routes.js';
import { ListQuery, toListQuery } from '../messages/message.schemas.js';
import { AttachmentDownloadResponse, toAttachmentResponse } from '../core/message.wire.js';
import type { MessageService } from '../messages/message.service.js';
import { toThreadLabelChange, UpdateThreadBody } from '../threads/thread.schemas.js';
import {
  ListThreadsResponse,
  ThreadResponse,
  toThreadItemResponse,
  toThreadResponse,
  toUpdateThreadResponse,
  UpdateThreadResponse,
} from '../core/thread.wire.js';
import type { ThreadService } from '../threads/thread.service.js';
import type { PodGuard, PodService } from './pod.service.js';
import {
  CreatePodBody,
  ListPodsResponse,
  PodInboxParams,
  PodParams,
  PodResponse,
  PodThreadAttachmentParams,
  PodThreadParams,
  toPodResponse,
} from './pod.schemas.js';

/**
 * Pods and the pod-scoped routes of the resources that existed before pods (inboxes, threads).
 * Every /v0/pods/:pod_id/… route first checks that the pod is the caller's to see (404 if not),
 * then asks the resource's service for records of that pod only.
 */
export function podRoutes(
  app: InboxApp,
  services: {
    pods: PodService;
    inboxes: InboxService;
    threads: ThreadService;
    messages: MessageService;
    requirePod: PodGuard;
  },
): void {
  const { pods, inboxes, threads, messages, requirePod } = services;
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
      summary: 'Change the display name of an inbox of a pod',
      params: PodInboxParams,
      body: UpdateInboxBody,
      response: { 200: InboxResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const b = request.body;
      const change = {
        ...(b.display_name !== undefined ? { displayName: b.display_name } : {}),
        ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
      };
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

  // Threads of a pod.
  app.get('/v0/pods/:pod_id/threads', {
    schema: {
      tags,
      summary: 'List the threads of every inbox of a pod, newest first',
      params: PodParams,
      querystring: ListQuery,
      response: { 200: ListThreadsResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const podId = await requirePod(owner, request.params.pod_id);
      const result = await threads.list(owner, toListQuery(request.query), undefined, podId);
      return {
        count: result.items.length,
        limit: result.limit,
        ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
        threads: result.items.map(toThreadItemResponse),
      };
    },
  });

  app.get('/v0/pods/:pod_id/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Get a thread of a pod with its messages, oldest first',
      params: PodThreadParams,
      response: { 200: ThreadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const { thread, messages: list } = await threads.get(
        owner,
        request.params.thread_id,
        undefined,
        await requirePod(owner, request.params.pod_id),
      );
      return toThreadResponse(thread, list);
    },
  });

  app.patch('/v0/pods/:pod_id/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Add and remove labels on every message of a thread of a pod',
      params: PodThreadParams,
      body: UpdateThreadBody,
      response: { 200: UpdateThreadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const podId = await requirePod(owner, request.params.pod_id);
      return toUpdateThreadResponse(
        await threads.update(owner, request.params.thread_id, { podId, ...toThreadLabelChange(request.body) }),
      );
    },
  });

  app.delete('/v0/pods/:pod_id/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Move a thread of a pod to the trash, or delete it',
      params: PodThreadParams,
      querystring: Type.Object({ permanent: Type.Optional(Type.Boolean()) }),
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      const owner = ownerOf(request);
      await threads.delete(owner, request.params.thread_id, {
        permanent: request.query.permanent === true,
        podId: await requirePod(owner, request.params.pod_id),
      });
      return reply.code(204).send(null);
    },
  });

  app.get('/v0/pods/:pod_id/threads/:thread_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment of a thread of a pod',
      params: PodThreadAttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const p = request.params;
      const podId = await requirePod(owner, p.pod_id);
      const found = await messages.threadAttachmentLink(
        owner,
        p.thread_id,
        p.attachment_id,
        requestOrigin(request),
        undefined,
        podId,
      );
      return { ...toAttachmentResponse(found.attachment), download_url: found.url, expires_at: found.expiresAt };
    },
  });
}
