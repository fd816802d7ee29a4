import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import type { Ids } from '../../platform/ids.js';
import type { LabelsService, LabelChange } from '../mailstore/labels.service.js';
import type { RemovalService } from '../mailstore/removal.service.js';
import {
  MessageNotFoundError,
  AttachmentNotFoundError,
  ConflictingLabelsError,
  RawMessageNotAvailableError,
} from '../core/message.errors.js';
import { normalizeMessageId, type AttachmentMeta, type Message, validateLabels } from '../core/message.js';
import { findOwnMessage } from '../mailstore/message-lookup.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { dialectOf } from '../../platform/db/dialect.js';
import { type KeyOwner, requireLabelPermissions, requirePermission } from '../core/scope.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import type { Db, InboxDatabase } from '../schema/database.js';
import { ValidationError } from '../../platform/errors/app-error.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import { findScopedInbox, requireScopedInbox } from '../inboxes/inbox-scope.js';
import { normalizeInboxId } from '../core/inbox.js';
import { parseLimit, parseListFilter, type ListFilterQuery } from '../lists/list-query.js';
import { createDownloadLinks, type DownloadTarget } from './message-download.service.js';
import {
  findAttachmentContent,
  findRawSource,
  findMessagesByIds,
  findThreadAttachment,
  listMessages,
} from '../mailstore/message.repository.js';

export type { ReplyInput, SendAttachmentInput, SendInput } from '../outgoing/outgoing.js';

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

export interface MessageServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  /** The database's commit batcher, shared with every other writer (label changes, deletes). */
  readonly commits: GroupCommit<InboxDatabase>;
  /** Absolute base URL of download links; the request's own origin when unset. */
  readonly publicUrl: string | undefined;
  readonly downloadTtlSeconds: number;
  /** Every label change of stored messages goes through it, with its events (mailstore/labels.service.ts). */
  readonly labels: LabelsService;
  /** Every removal of stored messages goes through it (mailstore/removal.service.ts). */
  readonly removal: RemovalService;
  /** The bytes of a draft's attachment (drafts/draft.repository.ts, wired by service.ts): download links serve them too. */
  readonly findDraftAttachmentContent?: (
    db: Db,
    draftPk: number,
    attachmentId: string,
  ) => Promise<AttachmentContent | undefined>;
}

export interface AttachmentContent {
  readonly filename: string | null;
  readonly contentType: string | null;
  readonly content: Buffer;
}

/** Whether a label change left a message's labels as they were (`applyLabels` keeps their order). */
const sameLabels = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((l, i) => l === b[i]);

/** The inbox of a message found in the caller's scope (it exists: the message holds a reference to it). */
async function requireInboxOf(trx: Db, owner: KeyOwner, message: Message) {
  const inbox = await findInbox(trx, owner.organizationId, message.inboxId);
  if (!inbox) throw new MessageNotFoundError(message.messageId);
  return inbox;
}

/** add_labels and remove_labels of a message or a batch, checked; a label in both is an error. */
function labelChangeOf(change: { addLabels?: readonly string[]; removeLabels?: readonly string[] }): LabelChange {
  const add = validateLabels('add_labels', change.addLabels);
  const remove = validateLabels('remove_labels', change.removeLabels);
  const both = add.find((l) => remove.includes(l));
  if (both !== undefined) throw new ConflictingLabelsError(both);
  return { add, remove };
}

/** Message ids of a batch: normalised, without duplicates (a duplicate is an error, as the SDK documents). */
function batchIds(ids: readonly string[], max: number): string[] {
  if (!ids.length || ids.length > max)
    throw new ValidationError(`message_ids: 1 to ${max} ids.`, 'message_ids', 'INVALID_MESSAGE_IDS');
  const out = ids.map(normalizeMessageId);
  const seen = new Set<string>();
  for (const id of out) {
    if (seen.has(id))
      throw new ValidationError(
        `message_ids: ${id.slice(0, 200)} is given twice.`,
        'message_ids',
        'DUPLICATE_MESSAGE_ID',
      );
    seen.add(id);
  }
  return out;
}

/** The messages of an inbox: sending (send.service.ts), reading, labels and download links. */
export function createMessageService(deps: MessageServiceDeps) {
  const { db, commits, clock, ids } = deps;
  const downloads = createDownloadLinks({ db, clock, ids, ttlSeconds: deps.downloadTtlSeconds });

  function link(token: string, expiresAt: string, origin: string): DownloadLink {
    const base = (deps.publicUrl ?? origin).replace(/\/+$/, '');
    return { url: `${base}/v0/downloads/${token}`, expiresAt };
  }

  /** An attachment of a thread (of the organization, or of one inbox) that the key may read. */
  async function threadAttachmentInScope(
    owner: KeyOwner,
    threadId: string,
    attachmentId: string,
    inboxId?: string,
    podId?: string,
  ) {
    requirePermission(owner, 'messageRead');
    const found = await findThreadAttachment(
      db,
      owner.organizationId,
      threadId,
      attachmentId,
      inboxId === undefined ? undefined : normalizeInboxId(inboxId),
    );
    // Out of the key's scope (or of the pod of the route): as if it did not exist.
    if (
      !found ||
      ((owner.podId !== undefined || owner.inboxId !== undefined || podId !== undefined) &&
        !(await findScopedInbox(db, owner, found.inboxId, podId)))
    )
      throw new AttachmentNotFoundError(attachmentId);
    return found;
  }

  return {
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
      await requireScopedInbox(db, owner, inboxId);
      const rows = await listMessages(db, { organizationId: owner.organizationId, inboxId: id }, filter, {
        limit,
        direction,
        ...(cursor ? { after: cursor } : {}),
      });
      return { limit, ...page(rows, limit, (m) => ({ sort: m.timestamp, tiebreak: m.pk }), direction) };
    },

    /** Adds and removes labels; the thread's labels follow (the union of its messages'). */
    async updateLabels(
      owner: KeyOwner,
      inboxId: string,
      messageId: string,
      change: { addLabels?: readonly string[]; removeLabels?: readonly string[] },
    ): Promise<Message> {
      requirePermission(owner, 'messageUpdate');
      const { add, remove } = labelChangeOf(change);
      return commits.run(async (trx) => {
        const message = await findOwnMessage(trx, owner, inboxId, messageId, { lock: true });
        const inbox = await requireInboxOf(trx, owner, message);
        const updatedAt = clock.now().toISOString();
        const labels = (await deps.labels.apply(trx, inbox, [message], { add, remove }, updatedAt)).get(
          message.messageId,
        ) as string[];
        return sameLabels(labels, message.labels) ? message : { ...message, labels, updatedAt };
      });
    },

    /** Deletes a message for good; its thread is rebuilt from the others (or goes with the last one). */
    async delete(owner: KeyOwner, inboxId: string, messageId: string): Promise<void> {
      requirePermission(owner, 'messageDelete');
      await commits.run(async (trx) => {
        const message = await findOwnMessage(trx, owner, inboxId, messageId, { lock: true, bodies: false });
        await deps.removal.deleteMessage(trx, message);
      });
    },

    /** Up to 500 messages by id, in the order asked, without bodies; ids not found are left out. */
    async batchGet(
      owner: KeyOwner,
      inboxId: string,
      messageIds: readonly string[],
    ): Promise<{ limit: number; messages: Message[] }> {
      requirePermission(owner, 'messageRead');
      const ids = batchIds(messageIds, 500);
      const inbox = await requireScopedInbox(db, owner, inboxId);
      const byId = new Map(
        (await findMessagesByIds(db, owner.organizationId, inbox.inboxId, ids)).map((m) => [m.messageId, m]),
      );
      return { limit: ids.length, messages: ids.flatMap((id) => byId.get(id) ?? []) };
    },

    /** Adds and removes labels on up to 50 messages in one transaction; ids not found are left out. */
    async batchUpdate(
      owner: KeyOwner,
      inboxId: string,
      change: { messageIds: readonly string[]; addLabels?: readonly string[]; removeLabels?: readonly string[] },
    ): Promise<{ limit: number; updates: { messageId: string; labels: string[] }[] }> {
      requirePermission(owner, 'messageUpdate');
      const ids = batchIds(change.messageIds, 50);
      const { add, remove } = labelChangeOf(change);
      return commits.run(async (trx) => {
        const inbox = await requireScopedInbox(trx, owner, inboxId);
        const found = await findMessagesByIds(trx, owner.organizationId, inbox.inboxId, ids, { lock: dialectOf(trx) });
        const byId = await deps.labels.apply(trx, inbox, found, { add, remove }, clock.now().toISOString());
        return {
          limit: ids.length,
          updates: ids.flatMap((id) => (byId.has(id) ? [{ messageId: id, labels: byId.get(id) as string[] }] : [])),
        };
      });
    },

    /** Metadata and a signed download link of an attachment of a message. */
    async attachmentLink(
      owner: KeyOwner,
      inboxId: string,
      messageId: string,
      attachmentId: string,
      origin: string,
    ): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      requirePermission(owner, 'messageRead');
      const message = await findOwnMessage(db, owner, inboxId, messageId, { bodies: false });
      const attachment = message.attachments.find((a) => a.attachmentId === attachmentId);
      if (!attachment) throw new AttachmentNotFoundError(attachmentId);
      const { token, expiresAt } = await downloads.sign({ kind: 'attachment', messagePk: message.pk, attachmentId });
      return { attachment, ...link(token, expiresAt, origin) };
    },

    /** The same for an attachment found through a thread (of the organization, or of one inbox). */
    async threadAttachmentLink(
      owner: KeyOwner,
      threadId: string,
      attachmentId: string,
      origin: string,
      inboxId?: string,
      podId?: string,
    ): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      const found = await threadAttachmentInScope(owner, threadId, attachmentId, inboxId, podId);
      const { token, expiresAt } = await downloads.sign({
        kind: 'attachment',
        messagePk: found.messagePk,
        attachmentId,
      });
      return { attachment: found.attachment, ...link(token, expiresAt, origin) };
    },

    /** The bytes of an attachment found through a thread, for readers in the service (MCP `get_attachment`'s text). */
    async threadAttachmentContent(
      owner: KeyOwner,
      threadId: string,
      attachmentId: string,
      inboxId?: string,
    ): Promise<AttachmentContent> {
      const found = await threadAttachmentInScope(owner, threadId, attachmentId, inboxId);
      const file = await findAttachmentContent(db, found.messagePk, attachmentId);
      if (!file) throw new AttachmentNotFoundError(attachmentId);
      return file;
    },

    /** A signed download link of anything download links serve (drafts' attachments sign theirs here). */
    async downloadLink(target: DownloadTarget, origin: string): Promise<DownloadLink> {
      const { token, expiresAt } = await downloads.sign(target);
      return link(token, expiresAt, origin);
    },

    /** Size and a signed download link of the RFC 5322 source. */
    async rawLink(
      owner: KeyOwner,
      inboxId: string,
      messageId: string,
      origin: string,
    ): Promise<{ messageId: string; size: number } & DownloadLink> {
      requirePermission(owner, 'messageRead');
      const message = await findOwnMessage(db, owner, inboxId, messageId, { bodies: false });
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
      const file =
        target.kind === 'attachment'
          ? await findAttachmentContent(db, target.messagePk, target.attachmentId)
          : await deps.findDraftAttachmentContent?.(db, target.draftPk, target.attachmentId);
      if (!file) throw new AttachmentNotFoundError(target.attachmentId);
      return {
        kind: 'attachment',
        filename: file.filename,
        contentType: file.contentType ?? 'application/octet-stream',
        content: file.content,
      };
    },
  };
}

export type MessageService = ReturnType<typeof createMessageService>;
