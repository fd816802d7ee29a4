import { Type } from 'typebox';
import { ValidationError } from '../../platform/errors/app-error.js';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import { requestOrigin } from '../messages/message.routes.js';
import { labelList } from '../messages/message.schemas.js';
import { AttachmentDownloadResponse, SendMessageResponse, toAttachmentResponse } from '../core/message.wire.js';
import {
  CreateDraftBody,
  DraftAttachmentParams,
  DraftListQuerystring,
  DraftParams,
  DraftResponse,
  InboxDraftAttachmentParams,
  InboxDraftParams,
  InboxDraftsParams,
  ListDraftsResponse,
  NOT_UPDATABLE,
  PodDraftAttachmentParams,
  PodDraftParams,
  PodDraftsParams,
  SendDraftBody,
  UpdateDraftBody,
  toCreateDraftInput,
  toDraftItemResponse,
  toDraftListQuery,
  toDraftResponse,
  toUpdateDraftInput,
} from './draft.schemas.js';
import type { DraftService } from './draft.service.js';

/** A body field of another shape that this operation would otherwise drop without a word. */
function refuseFields(body: unknown, refused: Readonly<Record<string, string>>): void {
  if (typeof body !== 'object' || body === null) return;
  const field = Object.keys(refused).find((k) => Object.hasOwn(body, k));
  if (field !== undefined) throw new ValidationError(`${field}: ${refused[field]}`, field, 'UNSUPPORTED_FIELD');
}

const CREATE_REFUSED = { headers: 'drafts carry no custom headers; send the message with messages.send to set them.' };

/**
 * Drafts of an inbox (create, update, get, list, delete, send, attachments), and the read-only
 * views across the organization (/v0/drafts) and a pod (/v0/pods/:pod_id/drafts). Every route
 * checks the key's permission (draftRead, draftCreate, draftUpdate, draftDelete, draftSend) here,
 * and the service its scope (another scope's drafts, inboxes and pods answer 404).
 */
export function draftRoutes(app: InboxApp, drafts: DraftService): void {
  const tags = ['drafts'];
  const toList = (result: Awaited<ReturnType<DraftService['list']>>) => ({
    count: result.items.length,
    limit: result.limit,
    ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
    drafts: result.items.map(toDraftItemResponse),
  });
  const toDownload = (found: Awaited<ReturnType<DraftService['attachmentLink']>>) => ({
    ...toAttachmentResponse(found.attachment),
    download_url: found.url,
    expires_at: found.expiresAt,
  });

  app.post('/v0/inboxes/:inbox_id/drafts', {
    schema: {
      tags,
      summary:
        'Create a draft (plain, a reply with in_reply_to, or a forward with forward_of); send_at schedules its send',
      description: 'Answers 201 with the new draft; a repeated client_id answers 200 with the draft created first.',
      params: InboxDraftsParams,
      body: CreateDraftBody,
      response: { 200: DraftResponse, 201: DraftResponse, ...errorResponses },
    },
    config: { attachmentBytes: true },
    handler: async (request, reply) => {
      const owner = ownerOf(request);
      refuseFields(request.body, CREATE_REFUSED);
      const { draft, created } = await drafts.create(owner, request.params.inbox_id, toCreateDraftInput(request.body));
      return reply.code(created ? 201 : 200).send(toDraftResponse(draft));
    },
  });

  app.get('/v0/inboxes/:inbox_id/drafts', {
    schema: {
      tags,
      summary: 'List the drafts of an inbox, last updated first',
      params: InboxDraftsParams,
      querystring: DraftListQuerystring,
      response: { 200: ListDraftsResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toList(await drafts.list(owner, { inboxId: request.params.inbox_id }, toDraftListQuery(request.query)));
    },
  });

  app.get('/v0/inboxes/:inbox_id/drafts/:draft_id', {
    schema: {
      tags,
      summary: 'Get a draft of an inbox',
      params: InboxDraftParams,
      response: { 200: DraftResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toDraftResponse(await drafts.get(owner, { inboxId: request.params.inbox_id }, request.params.draft_id));
    },
  });

  app.patch('/v0/inboxes/:inbox_id/drafts/:draft_id', {
    schema: {
      tags,
      summary: 'Change a draft: fields (null clears), attachments, labels, send_at (null unschedules)',
      description: 'A draft whose scheduled send has started (send_status "sending") answers 409.',
      params: InboxDraftParams,
      body: UpdateDraftBody,
      response: { 200: DraftResponse, 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    config: { attachmentBytes: true },
    handler: async (request) => {
      const owner = ownerOf(request);
      refuseFields(request.body, NOT_UPDATABLE);
      return toDraftResponse(
        await drafts.update(owner, request.params.inbox_id, request.params.draft_id, toUpdateDraftInput(request.body)),
      );
    },
  });

  app.delete('/v0/inboxes/:inbox_id/drafts/:draft_id', {
    schema: {
      tags,
      summary: 'Delete a draft (and cancel its scheduled send)',
      params: InboxDraftParams,
      response: { 204: Type.Null(), 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    handler: async (request, reply) => {
      const owner = ownerOf(request);
      await drafts.delete(owner, request.params.inbox_id, request.params.draft_id);
      return reply.code(204).send(null);
    },
  });

  app.post('/v0/inboxes/:inbox_id/drafts/:draft_id/send', {
    schema: {
      tags,
      summary: 'Send a draft now (as a send: same checks, same events); the draft is removed',
      description:
        'add_labels and remove_labels change the labels of the sent message. A draft changed meanwhile, or whose scheduled send has started, answers 409 and nothing is sent.',
      params: InboxDraftParams,
      body: SendDraftBody,
      response: { 200: SendMessageResponse, 409: Type.Ref('ErrorResponse'), ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const b = request.body;
      const sent = await drafts.send(owner, request.params.inbox_id, request.params.draft_id, {
        ...(b.add_labels !== undefined ? { addLabels: labelList(b.add_labels) } : {}),
        ...(b.remove_labels !== undefined ? { removeLabels: labelList(b.remove_labels) } : {}),
      });
      return { message_id: sent.messageId, thread_id: sent.threadId };
    },
  });

  app.get('/v0/inboxes/:inbox_id/drafts/:draft_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment of a draft: its metadata and a signed download URL',
      params: InboxDraftAttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const p = request.params;
      return toDownload(
        await drafts.attachmentLink(
          owner,
          { inboxId: p.inbox_id },
          p.draft_id,
          p.attachment_id,
          requestOrigin(request),
        ),
      );
    },
  });

  app.get('/v0/drafts', {
    schema: {
      tags,
      summary: 'List the drafts of every inbox the key sees, last updated first',
      querystring: DraftListQuerystring,
      response: { 200: ListDraftsResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toList(await drafts.list(owner, {}, toDraftListQuery(request.query)));
    },
  });

  app.get('/v0/drafts/:draft_id', {
    schema: {
      tags,
      summary: 'Get a draft of any inbox the key sees',
      params: DraftParams,
      response: { 200: DraftResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toDraftResponse(await drafts.get(owner, {}, request.params.draft_id));
    },
  });

  app.get('/v0/drafts/:draft_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment of a draft of any inbox the key sees',
      params: DraftAttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const p = request.params;
      return toDownload(await drafts.attachmentLink(owner, {}, p.draft_id, p.attachment_id, requestOrigin(request)));
    },
  });

  app.get('/v0/pods/:pod_id/drafts', {
    schema: {
      tags,
      summary: 'List the drafts of the inboxes of a pod, last updated first',
      params: PodDraftsParams,
      querystring: DraftListQuerystring,
      response: { 200: ListDraftsResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toList(await drafts.list(owner, { podId: request.params.pod_id }, toDraftListQuery(request.query)));
    },
  });

  app.get('/v0/pods/:pod_id/drafts/:draft_id', {
    schema: {
      tags,
      summary: 'Get a draft of an inbox of a pod',
      params: PodDraftParams,
      response: { 200: DraftResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      return toDraftResponse(await drafts.get(owner, { podId: request.params.pod_id }, request.params.draft_id));
    },
  });

  app.get('/v0/pods/:pod_id/drafts/:draft_id/attachments/:attachment_id', {
    schema: {
      tags,
      summary: 'Get an attachment of a draft of an inbox of a pod',
      params: PodDraftAttachmentParams,
      response: { 200: AttachmentDownloadResponse, ...errorResponses },
    },
    handler: async (request) => {
      const owner = ownerOf(request);
      const p = request.params;
      return toDownload(
        await drafts.attachmentLink(owner, { podId: p.pod_id }, p.draft_id, p.attachment_id, requestOrigin(request)),
      );
    },
  });
}
