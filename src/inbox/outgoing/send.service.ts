import { recipientRule } from '../core/recipients.js';
import { timeOrderedUuid } from '../../platform/ids.js';
import { type KeyOwner, requirePermission } from '../core/scope.js';
import type { ComposedMessage, DeliveryPathDeps } from '../mailstore/delivery.service.js';
import { InboxNotFoundError, InboxPausedError } from '../inboxes/inbox.errors.js';
import {
  type AddressField,
  ExternalDeliveryDisabledError,
  SenderNotAllowedError,
  TooManyRecipientsError,
} from '../core/message.errors.js';
import { findScopedInbox } from '../inboxes/inbox-scope.js';
import { normalizeInboxId } from '../core/inbox.js';
import { ForbiddenError } from '../../platform/errors/app-error.js';
import { addressOf, composeSource, formatMailbox, previewOf, type Mailbox } from '../mail/compose.js';
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

/**
 * A message a mail client submitted (SMTP submission, decision 0045): its envelope, its source as
 * the client wrote it, and what the parser made of that source (smtp/parse.ts `inboundContent`).
 */
export interface SubmittedMessage {
  readonly mailFrom: string;
  readonly recipients: readonly string[];
  readonly source: Buffer;
  readonly content: {
    readonly messageId: string | null;
    readonly from: string | null;
    readonly replyTo: readonly string[];
    readonly to: readonly string[];
    readonly cc: readonly string[];
    readonly subject: string | null;
    readonly text: string | null;
    readonly html: string | null;
    readonly preview: string | null;
    readonly inReplyTo: string | null;
    readonly references: readonly string[];
    readonly attachments: readonly {
      readonly meta: Omit<Message['attachments'][number], 'attachmentId'>;
      readonly content: Buffer;
    }[];
  };
}

/** The header section of a source without its Bcc fields (RFC 6409 §8.1 lets a submission server remove them). */
function withoutBcc(source: Buffer): Buffer {
  const text = source.toString('latin1');
  const end = /\r?\n\r?\n/.exec(text);
  const headerEnd = end ? end.index : text.length;
  const header = text.slice(0, headerEnd);
  if (!/^bcc:/im.test(header)) return source;
  const kept = header
    .split(/(?=\r?\n(?![ \t]))/)
    .filter((field) => !/^(\r?\n)?bcc:/i.test(field))
    .join('');
  return Buffer.concat([Buffer.from(kept.replace(/^\r?\n/, ''), 'latin1'), source.subarray(headerEnd)]);
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

  /** The inbox a send leaves from: in the key's scope, and not paused (every door's sends: API, drafts, SMTP submission). */
  async function sendingInbox(owner: KeyOwner, inboxId: string) {
    const sender = await findScopedInbox(db, owner, inboxId);
    if (!sender) throw new InboxNotFoundError(inboxId);
    if (sender.status === 'paused') throw new InboxPausedError(sender.inboxId);
    return sender;
  }

  /**
   * Where a send's recipients go, after the checks every door's send passes: an unverified agent
   * sign-up mails only the human it named (decision 0018); recipients on local and verified
   * custom domains are delivered here, the rest need the relay (refused before anything is composed).
   */
  async function route(owner: KeyOwner, addresses: readonly { address: string; field: AddressField }[]) {
    if (owner.sendOnlyTo !== undefined) {
      const other = addresses.find((r) => r.address.toLowerCase() !== owner.sendOnlyTo);
      if (other)
        throw new ForbiddenError(
          owner.sendOnlyTo
            ? `Message rejected: ${other.address} is not allowed before the organization is verified; only ${owner.sendOnlyTo} is.`
            : `Message rejected: this organization has no human attached yet, so it sends to nobody (POST /v0/agent/human).`,
          { code: 'MESSAGE_REJECTED', details: { field: other.field, code: 'MESSAGE_REJECTED' } },
        );
    }
    const inboxIds = await Promise.all(addresses.map((r) => rule.inboxIdOf(r.address)));
    const recipients = addresses.flatMap((r, i) => {
      const inboxId = inboxIds[i];
      return inboxId === undefined ? [] : [{ address: r.address, inboxIds: [inboxId] }];
    });
    const externals = addresses.filter((_r, i) => inboxIds[i] === undefined);
    const firstExternal = externals[0];
    if (firstExternal && !deps.relayConfigured)
      throw new ExternalDeliveryDisabledError(firstExternal.field, firstExternal.address, deps.localDomains);
    return { recipients, external: externals.map((r) => r.address) };
  }

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
    const sender = await sendingInbox(owner, senderId);
    const out = await outgoing();
    const { recipients, external } = await route(
      owner,
      out.recipients.map((r) => ({ address: r.mailbox.address, field: r.field })),
    );
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
      const parent = await findOwnMessage(db, owner, inboxId, messageId, { bodies: false });
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
     * A message a mail client submitted over SMTP, sent from `inboxId` as an API send is: the
     * same scope and permission checks, the same recipient rule and relay, and the one delivery
     * (threading, the copy in Sent, events, send lists, the daily limit; DKIM at the relay). The
     * source stays the client's own, without Bcc fields; the envelope sender and the From must be
     * the inbox itself (SenderNotAllowedError).
     */
    async submit(
      owner: KeyOwner,
      inboxId: string,
      submitted: SubmittedMessage,
    ): Promise<{ messageId: string; threadId: string }> {
      requirePermission(owner, 'messageSend');
      const sender = await sendingInbox(owner, inboxId);
      const own = (address: string) => address.trim().toLowerCase() === sender.inboxId;
      if (!own(submitted.mailFrom)) throw new SenderNotAllowedError('envelope', submitted.mailFrom, sender.inboxId);
      const from = submitted.content.from;
      if (from === null || !own(addressOf(from))) throw new SenderNotAllowedError('from', from ?? '', sender.inboxId);
      if (submitted.recipients.length > deps.maxRecipients)
        throw new TooManyRecipientsError(submitted.recipients.length, deps.maxRecipients);
      const { recipients, external } = await route(
        owner,
        submitted.recipients.map((address) => ({ address, field: 'to' })),
      );
      const { content } = submitted;
      const named = new Set([...content.to, ...content.cc].map((m) => addressOf(m).toLowerCase()));
      const bcc = submitted.recipients.filter((r) => !named.has(r.toLowerCase()));
      const now = clock.now();
      const timestamp = now.toISOString();
      const messageId = content.messageId ?? `<${timeOrderedUuid(now, ids)}@${domainKey(sender.domain)}>`;
      const added = [
        ...(content.messageId === null ? [`Message-ID: ${messageId}`] : []),
        ...(/^date:/im.test(submitted.source.toString('latin1', 0, Math.min(submitted.source.length, 64 * 1024)))
          ? []
          : [`Date: ${now.toUTCString().replace('GMT', '+0000')}`]),
      ];
      const stripped = withoutBcc(submitted.source);
      const raw = added.length ? Buffer.concat([Buffer.from(`${added.join('\r\n')}\r\n`), stripped]) : stripped;
      const prepared = await delivery.prepare({
        messageId,
        timestamp,
        from,
        replyTo: [...content.replyTo],
        to: [...content.to],
        cc: [...content.cc],
        subject: content.subject,
        preview: content.preview,
        text: content.text,
        html: content.html,
        inReplyTo: content.inReplyTo,
        references: [...content.references],
        headers: null,
        attachments: content.attachments.map((a) => ({ attachmentId: timeOrderedUuid(now, ids), ...a.meta })),
        size: raw.length,
        createdAt: timestamp,
        updatedAt: timestamp,
        raw,
        attachmentContents: content.attachments.map((a) => a.content),
      });
      const result = await delivery.commit(prepared, (trx) =>
        delivery.deliver(trx, {
          prepared,
          recipients,
          sender: { organizationId: owner.organizationId, inboxId: sender.inboxId, labels: [], bcc, external },
        }),
      );
      return { messageId: result.messageId, threadId: result.threadId as string };
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
