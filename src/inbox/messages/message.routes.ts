import type { SendService } from '../outgoing/send.service.js';
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { errorResponses } from '../http/common.schemas.js';
import { ownerOf } from '../http/auth.js';
import type { InboxApp } from '../http/types.js';
import {
  AttachmentParams,
  BatchGetBody,
  BatchUpdateBody,
  labelList,
  DownloadParams,
  InboxIdParams,
  ListQuery,
  MessageParams,
  ReplyAllBody,
  ReplyBody,
  SendMessageBody,
  UpdateMessageBody,
  toListQuery,
  toSendInput,
} from './message.schemas.js';
import {
  AttachmentDownloadResponse,
  ListMessagesResponse,
  MessageResponse,
  RawMessageResponse,
  SendMessageResponse,
  toAttachmentResponse,
  messageListJson,
  toMessageResponse,
} from '../core/message.wire.js';
import type { Download, MessageService } from './message.service.js';

/** Scheme, host and port the request came to: the base of download links without INBOX_PUBLIC_URL. */
export function requestOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

const SAFE_MEDIA_TYPE =
  /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(\s*;\s*[a-z0-9!#$&^_.+-]+=("[^"\\\r\n]*"|[a-z0-9!#$&^_.+-]+))*$/i;

/**
 * Always `attachment` (never rendered in our origin), with an ASCII fallback name and the exact
 * name in RFC 5987 form.
 */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

const binary = { schema: { type: 'string', format: 'binary' } };
/** Bytes, not JSON: documented per media type (Fastify sends Buffers without serializing them). */
const DownloadBody = Type.Unsafe<Buffer>({
  description: 'The attachment with its own content type, or the RFC 5322 source',
  content: { 'application/octet-stream': binary, 'message/rfc822': binary },
});

const BatchGetResponse = Type.Object({
  limit: Type.Integer(),
  count: Type.Integer(),
  messages: Type.Array(MessageResponse, { description: 'In the order asked; ids not found are left out' }),
});
const BatchUpdateResponse = Type.Object({
  limit: Type.Integer(),
  count: Type.Integer(),
  updates: Type.Array(Type.Object({ message_id: Type.String(), labels: Type.Array(Type.String()) })),
});

export function messageRoutes(app: InboxApp, messages: MessageService, outgoing: SendService): void {
  const tags = ['messages'];
  const notFound = Type.Ref('ErrorResponse');

  // The spec's path and the SDK's: the same operation.
  for (const [path, summary] of [
    ['/v0/inboxes/:inbox_id/messages', 'Send a message'],
    ['/v0/inboxes/:inbox_id/messages/send', 'Send a message (the path the SDK uses)'],
  ] as const) {
    app.post(path, {
      schema: {
        tags,
        summary,
        params: InboxIdParams,
        body: SendMessageBody,
        response: { 200: SendMessageResponse, ...errorResponses },
      },
      config: { attachmentBytes: true },
      handler: async (request) => {
        const sent = await outgoing.send(ownerOf(request), request.params.inbox_id, toSendInput(request.body));
        return { message_id: sent.messageId, thread_id: sent.threadId };
      },
    });
  }

  app.get('/v0/inboxes/:inbox_id/messages', {
    schema: {
      tags,
      summary: 'List the messages of an inbox, newest first',
      querystring: ListQuery,
      params: InboxIdParams,
      response: { 200: ListMessagesResponse, ...errorResponses },
    },
    handler: async (request, reply) => {
      const result = await messages.list(ownerOf(request), request.params.inbox_id, toListQuery(request.query));
      // Already JSON (messageListJson): Fastify sends a string with a JSON content type as it is.
      void reply.type('application/json; charset=utf-8');
      return messageListJson(result);
    },
  });

  app.get('/v0/inboxes/:inbox_id/messages/:message_id', {
    schema: {
      tags,
      summary: 'Get a message',
      params: MessageParams,
      response: { 200: MessageResponse, ...errorResponses },
    },
    handler: async (request) =>
      toMessageResponse(await messages.get(ownerOf(request), request.params.inbox_id, request.params.message_id)),
  });

  app.patch('/v0/inboxes/:inbox_id/messages/:message_id', {
    schema: {
      tags,
      summary: 'Add and remove labels of a message',
      params: MessageParams,
      body: UpdateMessageBody,
      response: { 200: MessageResponse, ...errorResponses },
    },
    handler: async (request) => {
      const b = request.body;
      const message = await messages.updateLabels(
        ownerOf(request),
        request.params.inbox_id,
        request.params.message_id,
        {
          ...(b.add_labels !== undefined ? { addLabels: labelList(b.add_labels) } : {}),
          ...(b.remove_labels !== undefined ? { removeLabels: labelList(b.remove_labels) } : {}),
        },
      );
      return toMessageResponse(message);
    },
  });

  app.delete('/v0/inboxes/:inbox_id/messages/:message_id', {
    schema: {
      tags,
      summary: 'Delete a message for good (its thread is rebuilt from the others)',
      params: MessageParams,
      response: { 204: Type.Null(), ...errorResponses },
    },
    handler: async (request, reply) => {
      await messages.delete(ownerOf(request), request.params.inbox_id, request.params.message_id);
      return reply.code(204).send(null);
    },
  });

  app.post('/v0/inboxes/:inbox_id/messages/batch-get', {
    schema: {
      tags,
      summary: 'Get up to 500 messages by id (without bodies), in the order asked',
      params: InboxIdParams,
      body: BatchGetBody,
      response: { 200: BatchGetResponse, ...errorResponses },
    },
    handler: async (request) => {
      const result = await messages.batchGet(ownerOf(request), request.params.inbox_id, request.body.message_ids);
      return { limit: result.limit, count: result.messages.length, messages: result.messages.map(toMessageResponse) };
    },
  });

  app.post('/v0/inboxes/:inbox_id/messages/batch-update', {
    schema: {
      tags,
      summary: 'Add and remove labels of up to 50 messages at once',
      params: InboxIdParams,
      body: BatchUpdateBody,
      response: { 200: BatchUpdateResponse, ...errorResponses },
    },
    handler: async (request) => {
      const b = request.body;
      const result = await messages.batchUpdate(ownerOf(request), request.params.inbox_id, {
        messageIds: b.message_ids,
        ...(b.add_labels !== undefined ? { addLabels: labelList(b.add_labels) } : {}),
        ...(b.remove_labels !== undefined ? { removeLabels: labelList(b.remove_labels) } : {}),
      });
      return {
        limit: result.limit,
        count: result.updates.length,
        updates: result.updates.map((u) => ({ message_id: u.messageId, labels: u.labels })),
      };
    },
  });

  app.post('/v0/inboxes/:inbox_id/messages/:message_id/reply', {
    schema: {
      tags,
      summary: 'Reply to a message (reply_all: true answers everyone)',
      params: MessageParams,
      body: ReplyBody,
      response: { 200: SendMessageResponse, ...errorResponses },
    },
    config: { attachmentBytes: true },
    handler: async (request) => {
      const b = request.body;
      const sent = await outgoing.reply(ownerOf(request), request.params.inbox_id, request.params.message_id, {
        ...toSendInput(b),
        ...(b.reply_all !== undefined ? { replyAll: b.reply_all } : {}),
      });
      return { message_id: sent.messageId, thread_id: sent.threadId };
    },
  });

  app.post('/v0/inboxes/:inbox_id/messages/:message_id/reply-all', {
    schema: {
      tags,
      summary: 'Reply to the sender and every recipient of a message',
      params: MessageParams,
      body: ReplyAllBody,
      response: { 200: SendMessageResponse, ...errorResponses },
    },
    config: { attachmentBytes: true },
    handler: async (request) => {
      const sent = await outgoing.reply(ownerOf(request), request.params.inbox_id, request.params.message_id, {
        ...toSendInput(request.body),
        replyAll: true,
      });
      return { message_id: sent.messageId, thread_id: sent.threadId };
    },
  });

  app.post('/v0/inboxes/:inbox_id/messages/:message_id/forward', {
    schema: {
      tags,
      summary: 'Forward a message, with its attachments, to new recipients',
      params: MessageParams,
      body: SendMessageBody,
      response: { 200: SendMessageResponse, ...errorResponses },
    },
    config: { attachmentBytes: true },
    handler: async (request) => {
      const sent = await outgoing.forward(
        ownerOf(request),
        request.params.inbox_id,
        request.params.message_id,
        toSendInput(request.body),
      );
      return { message_id: sent.messageId, thread_id: sent.threadId };
    },
  });

  app.get('/v0/inboxes/:inbox_id/messages/:message_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment: its metadata and a signed download URL',
      params: AttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const p = request.params;
      const found = await messages.attachmentLink(
        ownerOf(request),
        p.inbox_id,
        p.message_id,
        p.attachment_id,
        requestOrigin(request),
      );
      return {
        ...toAttachmentResponse(found.attachment),
        download_url: found.url,
        expires_at: found.expiresAt,
      } satisfies Static<typeof AttachmentDownloadResponse>;
    },
  });

  app.get('/v0/inboxes/:inbox_id/messages/:message_id/raw', {
    schema: {
      tags,
      summary: 'Get the RFC 5322 source of a message: its size and a signed download URL',
      params: MessageParams,
      response: { 200: RawMessageResponse, ...errorResponses },
    },
    handler: async (request) => {
      const raw = await messages.rawLink(
        ownerOf(request),
        request.params.inbox_id,
        request.params.message_id,
        requestOrigin(request),
      );
      return { message_id: raw.messageId, size: raw.size, download_url: raw.url, expires_at: raw.expiresAt };
    },
  });

  app.get('/v0/downloads/:token', {
    config: { public: true },
    schema: {
      tags,
      summary: 'Download an attachment or a raw message through a signed link (no API key)',
      security: [],
      params: DownloadParams,
      response: { 200: DownloadBody, 400: notFound, 404: notFound, 410: notFound },
    },
    handler: async (request, reply) => {
      const file: Download = await messages.download(request.params.token);
      const contentType =
        file.kind === 'raw'
          ? 'message/rfc822'
          : SAFE_MEDIA_TYPE.test(file.contentType)
            ? file.contentType
            : 'application/octet-stream';
      return reply
        .header('content-type', contentType)
        .header(
          'content-disposition',
          contentDisposition(file.kind === 'raw' ? 'message.eml' : (file.filename ?? 'attachment')),
        )
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, no-store')
        .send(file.content);
    },
  });
}
