import { recipientRule } from '../core/recipients.js';
import { timeOrderedUuid } from '../../platform/ids.js';
import { type KeyOwner, requirePermission } from '../core/scope.js';
import type { ComposedMessage, DeliveryPathDeps } from '../mailstore/delivery.service.js';
import { InboxNotFoundError, InboxPausedError } from '../inboxes/inbox.errors.js';
import { ExternalDeliveryDisabledError } from '../core/message.errors.js';
import { findScopedInbox } from '../inboxes/inbox-scope.js';
import { normalizeInboxId } from '../core/inbox.js';
import { ForbiddenError } from '../../platform/errors/app-error.js';
import { composeSource, formatMailbox, previewOf, type Mailbox } from '../mail/compose.js';
import { CHUNK_BYTES, storedAsBlob } from '../mailstore/message-blobs.js';
import { domainKey } from '../mail/domains.js';
import { answerHeaders, forwardInput, replyInput } from './answers.js';
import { findAttachmentContent } from '../mailstore/message.repository.js';
import { type Message } from '../core/message.js';
import { findOwnMessage } from '../mailstore/message-lookup.js';
import type { Db } from '../schema/database.js';
import {
  checkBodySizes,
  createOutgoingValidator,
  type Outgoing,
  type OutgoingRules,
  type ReplyInput,
  type SendAttachmentInput,
  type SendInput,
  toSendAttachment,
} from './outgoing.js';

export interface SendServiceDeps extends DeliveryPathDeps, OutgoingRules {
  /** The ASCII spelling of a domain a verified custom domain serves (domains/): its mail stays here. */
  readonly servedDomain?: (domain: string) => Promise<string | undefined>;
}

/** A draft as it is sent (drafts/draft.service.ts): its fields, and what it answers or forwards. */
export interface DraftToSend {
  readonly input: SendInput;
  /** A reply: the Message-ID it answers and the References, as stored on the draft. */
  readonly inReplyTo: string | null;
  readonly references: readonly string[];
  /** A forward: the id of the message whose body and attachments are merged in now. */
  readonly forwardOf: string | null;
}

/** Answer headers of a send: In-Reply-To and References (none for a new message). */
interface AnswerHeaders {
  readonly inReplyTo: string | null;
  readonly references: readonly string[];
}

/** Send, reply, reply-all and forward: validate → compose → deliver. */
export function createSendService(deps: SendServiceDeps) {
  const { db, delivery, clock, ids } = deps;
  const validate = createOutgoingValidator(deps);
  const rule = recipientRule(deps);

  /**
   * Composes the message from the sending inbox (read before the unit of work: its display name
   * and domain go into the source), then stores the sender's copy, delivers to local inboxes and
   * queues the rest in one transaction with the quota count and the events. The message is
   * validated (`outgoing`: files given by url fetched) only once the key is known to reach the
   * sending inbox.
   */
  async function send(
    owner: KeyOwner,
    senderId: string,
    outgoing: () => Promise<Outgoing>,
    answer: AnswerHeaders,
    within?: (trx: Db) => Promise<void>,
  ): Promise<{ messageId: string; threadId: string }> {
    const sender = await findScopedInbox(db, owner, senderId);
    if (!sender) throw new InboxNotFoundError(senderId);
    if (sender.status === 'paused') throw new InboxPausedError(sender.inboxId);
    const out = await outgoing();
    if (owner.sendOnlyTo !== undefined) {
      // An unverified agent sign-up mails only the human it named (decision 0018).
      const other = out.recipients.find((r) => r.mailbox.address.toLowerCase() !== owner.sendOnlyTo);
      if (other)
        throw new ForbiddenError(
          owner.sendOnlyTo
            ? `Message rejected: ${other.mailbox.address} is not allowed before the organization is verified; only ${owner.sendOnlyTo} is.`
            : `Message rejected: this organization has no human attached yet, so it sends to nobody (POST /v0/agent/human).`,
          { code: 'MESSAGE_REJECTED', details: { field: other.field, code: 'MESSAGE_REJECTED' } },
        );
    }
    // Recipients on local and verified custom domains are delivered here, not handed to the relay;
    // the rest need one, refused before the message is composed.
    const inboxIds = await Promise.all(out.recipients.map((r) => rule.inboxIdOf(r.mailbox.address)));
    const recipients = out.recipients.flatMap((r, i) => {
      const inboxId = inboxIds[i];
      return inboxId === undefined ? [] : [{ address: r.mailbox.address, inboxIds: [inboxId] }];
    });
    const externalRecipients = out.recipients.filter((_r, i) => inboxIds[i] === undefined);
    const firstExternal = externalRecipients[0];
    if (firstExternal && !deps.relayConfigured)
      throw new ExternalDeliveryDisabledError(firstExternal.field, firstExternal.mailbox.address, deps.localDomains);
    const external = externalRecipients.map((r) => r.mailbox.address);
    const now = clock.now();
    const timestamp = now.toISOString();
    // ASCII on the wire: an internationalized domain goes into the Message-ID in its xn-- form.
    const messageId = `<${timeOrderedUuid(now, ids)}@${domainKey(sender.domain)}>`;
    const from: Mailbox = { name: sender.displayName ?? '', address: sender.inboxId };
    const { inReplyTo } = answer;
    const references = [...answer.references];
    // Composed once, before the unit of work: every copy stores the same source (which never names
    // bcc recipients). A large one comes in pieces that prepare writes into its blob as they come,
    // after the attachments' blobs: attachments stored as blobs are moved to the composing thread
    // then, since no copy needs their bytes in memory after that.
    const source = await composeSource(
      {
        messageId,
        date: now,
        from,
        to: out.to,
        cc: out.cc,
        replyTo: out.replyTo,
        subject: out.subject,
        text: out.text,
        html: out.html,
        inReplyTo,
        references,
        headers: out.headers,
        attachments: out.attachments.map((a) => a.compose),
      },
      CHUNK_BYTES,
      storedAsBlob,
    );
    const message: Omit<ComposedMessage, 'raw' | 'size'> = {
      messageId,
      timestamp,
      from: formatMailbox(from),
      replyTo: out.replyTo.map(formatMailbox),
      to: out.to.map(formatMailbox),
      cc: out.cc.map(formatMailbox),
      subject: out.subject,
      preview: previewOf(out.text, out.html),
      text: out.text,
      html: out.html,
      inReplyTo,
      references,
      headers: Object.keys(out.headers).length ? out.headers : null,
      attachments: out.attachments.map((a) => a.meta),
      createdAt: timestamp,
      updatedAt: timestamp,
      attachmentContents: out.attachments.map((a) => a.compose.content),
    };
    const prepared = await delivery.prepare(
      Buffer.isBuffer(source) ? { ...message, raw: source, size: source.length } : { ...message, source },
    );
    const result = await delivery.commit(prepared, async (trx) => {
      await within?.(trx);
      return delivery.deliver(trx, {
        prepared,
        recipients,
        sender: {
          organizationId: owner.organizationId,
          inboxId: sender.inboxId,
          labels: out.labels,
          bcc: out.bcc.map(formatMailbox),
          external,
        },
      });
    });
    return { messageId: result.messageId, threadId: result.threadId as string };
  }

  /** The attachments of a stored message, as a send takes them (a forward carries them on). */
  async function carriedAttachments(original: Message): Promise<SendAttachmentInput[]> {
    const carried: SendAttachmentInput[] = [];
    for (const a of original.attachments) {
      const found = await findAttachmentContent(db, original.pk, a.attachmentId);
      if (found) carried.push(toSendAttachment(a, found.content));
    }
    return carried;
  }

  return {
    /** Sends a new message from an inbox; returns the ids of the sender's copy. */
    async send(owner: KeyOwner, inboxId: string, input: SendInput): Promise<{ messageId: string; threadId: string }> {
      requirePermission(owner, 'messageSend');
      checkBodySizes(input, deps.maxBodyBytes);
      return send(owner, normalizeInboxId(inboxId), () => validate(input), answerHeaders(undefined));
    },

    /** Answers a message of the inbox (answers.ts `replyInput`); In-Reply-To and References make it join the thread on both sides. */
    async reply(
      owner: KeyOwner,
      inboxId: string,
      messageId: string,
      input: ReplyInput,
    ): Promise<{ messageId: string; threadId: string }> {
      requirePermission(owner, 'messageSend');
      checkBodySizes(input, deps.maxBodyBytes);
      const parent = await findOwnMessage(db, owner, inboxId, messageId);
      return send(owner, parent.inboxId, () => validate(replyInput(parent, input)), answerHeaders(parent));
    },

    /**
     * Forwards a message of the inbox to new recipients (answers.ts `forwardInput`). The sender's
     * copy stays in the original's thread (References name it).
     */
    async forward(
      owner: KeyOwner,
      inboxId: string,
      messageId: string,
      input: SendInput,
    ): Promise<{ messageId: string; threadId: string }> {
      requirePermission(owner, 'messageSend');
      checkBodySizes(input, deps.maxBodyBytes);
      const original = await findOwnMessage(db, owner, inboxId, messageId);
      return send(
        owner,
        original.inboxId,
        async () => validate(forwardInput(original, input, await carriedAttachments(original))),
        answerHeaders(original),
      );
    },

    /**
     * Sends a draft of inbox `inboxId` as it stands: a plain message, a reply (its stored
     * In-Reply-To and References; the recipients and subject are the draft's), or a forward (the
     * original's body and attachments merged in now). `within` runs first in the delivery's unit
     * of work (the draft's removal): if it throws, nothing is stored or sent.
     */
    async sendDraft(
      owner: KeyOwner,
      inboxId: string,
      draft: DraftToSend,
      within: (trx: Db) => Promise<void>,
    ): Promise<{ messageId: string; threadId: string }> {
      checkBodySizes(draft.input, deps.maxBodyBytes);
      const senderId = normalizeInboxId(inboxId);
      if (draft.forwardOf !== null) {
        const original = await findOwnMessage(db, owner, senderId, draft.forwardOf);
        return send(
          owner,
          senderId,
          async () => validate(forwardInput(original, draft.input, await carriedAttachments(original))),
          answerHeaders(original),
          within,
        );
      }
      return send(
        owner,
        senderId,
        () => validate(draft.input),
        { inReplyTo: draft.inReplyTo, references: draft.references },
        within,
      );
    },
  };
}

export type SendService = ReturnType<typeof createSendService>;
