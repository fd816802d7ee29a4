import { Type, type Static } from 'typebox';
import { errorResponses } from '../http/common.schemas.js';
import { ownerOf } from '../http/auth.js';
import type { InboxApp } from '../http/types.js';
import { requestOrigin } from '../messages/message.routes.js';
import { InboxIdParams, ThreadListQuery, toListQuery } from '../messages/message.schemas.js';
import { AttachmentDownloadResponse, toAttachmentResponse } from '../core/message.wire.js';
import type { MessageService } from '../messages/message.service.js';
import {
  GetThreadQuery,
  UpdateThreadBody,
  toThreadLabelChange,
  InboxThreadAttachmentParams,
  InboxThreadParams,
  ThreadAttachmentParams,
  ThreadParams,
} from './thread.schemas.js';
import {
  UpdateThreadResponse,
  toUpdateThreadResponse,
  ListThreadsResponse,
  ThreadResponse,
  toThreadItemResponse,
  toThreadResponse,
} from '../core/thread.wire.js';
import type { ThreadService } from './thread.service.js';

export function threadRoutes(app: InboxApp, threads: ThreadService, messages: MessageService): void {
  const tags = ['threads'];
  const toList = (result: Awaited<ReturnType<ThreadService['list']>>) => ({
    count: result.items.length,
    limit: result.limit,
    ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
    threads: result.items.map(toThreadItemResponse),
  });
  const paging = (q: Static<typeof GetThreadQuery>) => ({
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.page_token ? { pageToken: q.page_token } : {}),
  });
  const toDownload = (found: Awaited<ReturnType<MessageService['threadAttachmentLink']>>) => ({
    ...toAttachmentResponse(found.attachment),
    download_url: found.url,
    expires_at: found.expiresAt,
  });

  app.get('/v0/inboxes/:inbox_id/threads', {
    schema: {
      tags,
      summary: 'List the threads of an inbox, newest first',
      params: InboxIdParams,
      querystring: ThreadListQuery,
      response: { 200: ListThreadsResponse, ...errorResponses },
    },
    handler: async (request) =>
      toList(await threads.list(ownerOf(request), toListQuery(request.query), request.params.inbox_id)),
  });

  app.get('/v0/inboxes/:inbox_id/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Get a thread with its messages, oldest first (with limit: a page of the newest)',
      params: InboxThreadParams,
      querystring: GetThreadQuery,
      response: { 200: ThreadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const result = await threads.get(
        ownerOf(request),
        request.params.thread_id,
        request.params.inbox_id,
        undefined,
        paging(request.query),
      );
      return toThreadResponse(result.thread, result.messages, result);
    },
  });

  app.patch('/v0/inboxes/:inbox_id/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Add and remove labels on every message of a thread',
      params: InboxThreadParams,
      body: UpdateThreadBody,
      response: { 200: UpdateThreadResponse, ...errorResponses },
    },
    handler: async (request) =>
      toUpdateThreadResponse(
        await threads.update(ownerOf(request), request.params.thread_id, {
          inboxId: request.params.inbox_id,
          ...toThreadLabelChange(request.body),
        }),
      ),
  });

  app.patch('/v0/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Add and remove labels on every message of a thread of the organization',
      params: ThreadParams,
      body: UpdateThreadBody,
      response: { 200: UpdateThreadResponse, ...errorResponses },
    },
    handler: async (request) =>
      toUpdateThreadResponse(
        await threads.update(ownerOf(request), request.params.thread_id, toThreadLabelChange(request.body)),
      ),
  });

  app.get('/v0/inboxes/:inbox_id/threads/:thread_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment of a thread: its metadata and a signed download URL',
      params: InboxThreadAttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const p = request.params;
      return toDownload(
        await messages.threadAttachmentLink(
          ownerOf(request),
          p.thread_id,
          p.attachment_id,
          requestOrigin(request),
          p.inbox_id,
        ),
      );
    },
  });

  const DeleteQuery = Type.Object({
    permanent: Type.Optional(
      Type.Boolean({
        description: 'Delete at once instead of moving to the trash (a thread already in the trash is always deleted)',
      }),
    ),
  });
  app.delete('/v0/inboxes/:inbox_id/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Move a thread to the trash, or delete it (permanent=true, or when already in the trash)',
      params: InboxThreadParams,
      querystring: DeleteQuery,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      await threads.delete(ownerOf(request), request.params.thread_id, {
        inboxId: request.params.inbox_id,
        permanent: request.query.permanent === true,
      });
      return reply.code(204).send(null);
    },
  });

  app.get('/v0/threads', {
    schema: {
      tags,
      summary: 'List the threads of every inbox of the organization, newest first',
      querystring: ThreadListQuery,
      response: { 200: ListThreadsResponse, ...errorResponses },
    },
    handler: async (request) => toList(await threads.list(ownerOf(request), toListQuery(request.query))),
  });

  app.get('/v0/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Get a thread of any inbox of the organization',
      params: ThreadParams,
      querystring: GetThreadQuery,
      response: { 200: ThreadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const result = await threads.get(
        ownerOf(request),
        request.params.thread_id,
        undefined,
        undefined,
        paging(request.query),
      );
      return toThreadResponse(result.thread, result.messages, result);
    },
  });

  app.delete('/v0/threads/:thread_id', {
    schema: {
      tags,
      summary: 'Move a thread of the organization to the trash, or delete it',
      params: ThreadParams,
      querystring: DeleteQuery,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      await threads.delete(ownerOf(request), request.params.thread_id, { permanent: request.query.permanent === true });
      return reply.code(204).send(null);
    },
  });

  app.get('/v0/threads/:thread_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment of a thread of the organization',
      params: ThreadAttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const p = request.params;
      return toDownload(
        await messages.threadAttachmentLink(ownerOf(request), p.thread_id, p.attachment_id, requestOrigin(request)),
      );
    },
  });
}
