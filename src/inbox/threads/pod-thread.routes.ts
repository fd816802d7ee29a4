import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import { requestOrigin } from '../messages/message.routes.js';
import { ListQuery, toListQuery } from '../messages/message.schemas.js';
import { AttachmentDownloadResponse, toAttachmentResponse } from '../core/message.wire.js';
import type { MessageService } from '../messages/message.service.js';
import { toThreadLabelChange, UpdateThreadBody } from './thread.schemas.js';
import {
  ListThreadsResponse,
  ThreadResponse,
  toThreadItemResponse,
  toThreadResponse,
  toUpdateThreadResponse,
  UpdateThreadResponse,
} from '../core/thread.wire.js';
import type { ThreadService } from './thread.service.js';
import type { PodGuard } from '../pods/pod.service.js';
import { PodParams, PodThreadAttachmentParams, PodThreadParams } from '../pods/pod.schemas.js';

/** The threads of a pod (/v0/pods/:pod_id/threads…): the pod is checked first (404 if out of reach). */
export function podThreadRoutes(
  app: InboxApp,
  services: { threads: ThreadService; messages: MessageService; requirePod: PodGuard },
): void {
  const { threads, messages, requirePod } = services;
  const tags = ['pods'];

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
