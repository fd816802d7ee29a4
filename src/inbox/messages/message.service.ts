import { decodeCursor, page } from '../../platform/db/cursor.js';
import { dialectOf } from '../../platform/db/dialect.js';
import type { KeyOwner } from '../api-keys/api-key.repository.js';
import type { Db } from '../database.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import { findScopedInbox, normalizeInboxId } from '../inboxes/inbox.service.js';
import { requireLabelPermissions, requirePermission } from '../api-keys/scope.js';
import { parseLimit, parseListFilter, type ListFilterQuery } from '../lists/list-query.js';
import { createDownloadLinks, type DownloadTarget } from './message-download.service.js';
import { AttachmentNotFoundError, ConflictingLabelsError, MessageNotFoundError, RawMessageNotAvailableError } from './message.errors.js';
import {
  findAttachmentContent,
  findMessage,
  findRawSource,
  findThreadAttachment,
  listMessages,
  updateMessageLabels,
  type AttachmentMeta,
  type Message,
} from './message.repository.js';
import { validateLabels } from './outgoing.js';
import { createSendService, type SendServiceDeps } from './send.service.js';

export type { ReplyInput, SendAttachmentInput, SendInput } from './outgoing.js';

export interface MessageListQuery extends ListFilterQuery {
  readonly limit?: number;
  readonly pageToken?: string;
  readonly ascending?: boolean;
}

export interface DownloadLink {
  readonly url: string;
  readonly expiresAt: string;
}

export interface Download {
  readonly kind: 'attachment' | 'raw';
  readonly filename: string | null;
  readonly contentType: string;
  readonly content: Buffer;
}

export interface MessageServiceDeps extends SendServiceDeps {
  /** Absolute base URL of download links; the request's own origin when unset. */
  readonly publicUrl: string | undefined;
  readonly downloadTtlSeconds: number;
  /** Recomputes the labels of a thread after its messages' changed, in `trx` (threads/thread.service.ts, wired by service.ts). */
  readonly refreshThreadLabels: (trx: Db, threadId: string, updatedAt: string) => Promise<void>;
  /** The bytes of a draft's attachment (drafts/draft.repository.ts, wired by service.ts): download links serve them too. */
  readonly findDraftAttachmentContent?: (db: Db, draftPk: number, attachmentId: string) => Promise<AttachmentContent | undefined>;
}

export interface AttachmentContent {
  readonly filename: string | null;
  readonly contentType: string | null;
  readonly content: Buffer;
}

/** A message id as it appears in paths: with its angle brackets, added when the caller left them out. */
export function normalizeMessageId(raw: string): string {
  const id = raw.trim();
  return id.startsWith('<') ? id : `<${id}>`;
}

/** A message of an inbox of the caller's organization (locked with `lock`), else MessageNotFoundError or InboxNotFoundError. */
export async function findOwnMessage(db: Db, owner: KeyOwner, inboxId: string, messageId: string, options: { lock?: boolean } = {}): Promise<Message> {
  const id = normalizeInboxId(inboxId);
  // A key limited to a pod or an inbox: the inbox must be in its scope before anything else is looked at.
  if ((owner.podId !== undefined || owner.inboxId !== undefined) && !(await findScopedInbox(db, owner, id))) throw new InboxNotFoundError(inboxId);
  const message = await findMessage(db, owner.organizationId, id, normalizeMessageId(messageId), options.lock ? { lock: dialectOf(db) } : {});
  if (message) return message;
  if (!(await findInbox(db, owner.organizationId, id))) throw new InboxNotFoundError(inboxId);
  throw new MessageNotFoundError(messageId);
}

/** The messages of an inbox: sending (send.service.ts), reading, labels and download links. */
export function createMessageService(deps: MessageServiceDeps) {
  const { db, commits, clock, ids } = deps;
  const downloads = createDownloadLinks({ db, clock, ids, ttlSeconds: deps.downloadTtlSeconds });

  function link(token: string, expiresAt: string, origin: string): DownloadLink {
    const base = (deps.publicUrl ?? origin).replace(/\/+$/, '');
    return { url: `${base}/v0/downloads/${token}`, expiresAt };
  }

  return {
    ...createSendService(deps),

    async get(owner: KeyOwner, inboxId: string, messageId: string): Promise<Message> {
      requirePermission(owner, 'messageRead');
      return findOwnMessage(db, owner, inboxId, messageId);
    },

    /** Newest first (or oldest with `ascending`), by keyset: every page costs what the first does. */
    async list(owner: KeyOwner, inboxId: string, query: MessageListQuery) {
      requirePermission(owner, 'messageRead');
      requireLabelPermissions(owner, query);
      const id = normalizeInboxId(inboxId);
      const limit = parseLimit(query.limit);
      const filter = parseListFilter(query);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'integer') : undefined;
      const direction = cursor?.direction ?? (query.ascending ? 'asc' : 'desc');
      if (!(await findScopedInbox(db, owner, id))) throw new InboxNotFoundError(inboxId);
      const rows = await listMessages(db, { organizationId: owner.organizationId, inboxId: id }, filter, { limit, direction, ...(cursor ? { after: cursor } : {}) });
      return { limit, ...page(rows, limit, (m) => ({ sort: m.timestamp, tiebreak: m.pk }), direction) };
    },

    /** Adds and removes labels; the thread's labels follow (the union of its messages'). */
    async updateLabels(owner: KeyOwner, inboxId: string, messageId: string, change: { addLabels?: readonly string[]; removeLabels?: readonly string[] }): Promise<Message> {
      requirePermission(owner, 'messageUpdate');
      const add = validateLabels('add_labels', change.addLabels);
      const remove = validateLabels('remove_labels', change.removeLabels);
      const both = add.find((l) => remove.includes(l));
      if (both !== undefined) throw new ConflictingLabelsError(both);
      const result = await commits.run(async (trx) => {
        const message = await findOwnMessage(trx, owner, inboxId, messageId, { lock: true });
        const added = add.filter((l) => !message.labels.includes(l));
        const removed = remove.filter((l) => message.labels.includes(l));
        if (!added.length && !removed.length) return message;
        const labels = [...message.labels.filter((l) => !removed.includes(l)), ...added];
        const updatedAt = clock.now().toISOString();
        await updateMessageLabels(trx, message.pk, labels, added, removed, updatedAt);
        await deps.refreshThreadLabels(trx, message.threadId, updatedAt);
        return { ...message, labels, updatedAt };
      });
      return result;
    },

    /** Metadata and a signed download link of an attachment of a message. */
    async attachmentLink(owner: KeyOwner, inboxId: string, messageId: string, attachmentId: string, origin: string): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      requirePermission(owner, 'messageRead');
      const message = await findOwnMessage(db, owner, inboxId, messageId);
      const attachment = message.attachments.find((a) => a.attachmentId === attachmentId);
      if (!attachment) throw new AttachmentNotFoundError(attachmentId);
      const { token, expiresAt } = await downloads.sign({ kind: 'attachment', messagePk: message.pk, attachmentId });
      return { attachment, ...link(token, expiresAt, origin) };
    },

    /** The same for an attachment found through a thread (of the organization, or of one inbox). */
    async threadAttachmentLink(owner: KeyOwner, threadId: string, attachmentId: string, origin: string, inboxId?: string, podId?: string): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      requirePermission(owner, 'messageRead');
      const found = await findThreadAttachment(db, owner.organizationId, threadId, attachmentId, inboxId === undefined ? undefined : normalizeInboxId(inboxId));
      // Out of the key's scope (or of the pod of the route): as if it did not exist.
      if (!found || ((owner.podId !== undefined || owner.inboxId !== undefined || podId !== undefined) && !(await findScopedInbox(db, owner, found.inboxId, podId)))) throw new AttachmentNotFoundError(attachmentId);
      const { token, expiresAt } = await downloads.sign({ kind: 'attachment', messagePk: found.messagePk, attachmentId });
      return { attachment: found.attachment, ...link(token, expiresAt, origin) };
    },

    /** A signed download link of anything download links serve (drafts' attachments sign theirs here). */
    async downloadLink(target: DownloadTarget, origin: string): Promise<DownloadLink> {
      const { token, expiresAt } = await downloads.sign(target);
      return link(token, expiresAt, origin);
    },

    /** Size and a signed download link of the RFC 5322 source. */
    async rawLink(owner: KeyOwner, inboxId: string, messageId: string, origin: string): Promise<{ messageId: string; size: number } & DownloadLink> {
      requirePermission(owner, 'messageRead');
      const message = await findOwnMessage(db, owner, inboxId, messageId);
      const { token, expiresAt } = await downloads.sign({ kind: 'raw', messagePk: message.pk });
      return { messageId: message.messageId, size: message.size, ...link(token, expiresAt, origin) };
    },

    /** The bytes behind a download token (no API key: the token is the permission). */
    async download(token: string): Promise<Download> {
      const target = await downloads.verify(token);
      if (target.kind === 'raw') {
        const raw = await findRawSource(db, target.messagePk);
        if (!raw) throw new RawMessageNotAvailableError(String(target.messagePk));
        return { kind: 'raw', filename: null, contentType: 'message/rfc822', content: raw };
      }
      const file = target.kind === 'attachment' ? await findAttachmentContent(db, target.messagePk, target.attachmentId) : await deps.findDraftAttachmentContent?.(db, target.draftPk, target.attachmentId);
      if (!file) throw new AttachmentNotFoundError(target.attachmentId);
      return { kind: 'attachment', filename: file.filename, contentType: file.contentType ?? 'application/octet-stream', content: file.content };
    },
  };
}

export type MessageService = ReturnType<typeof createMessageService>;
