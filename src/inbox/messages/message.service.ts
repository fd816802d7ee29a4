import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { dialectOf } from '../../platform/db/dialect.js';
import { createGroupCommit } from '../../platform/db/group-commit.js';
import { timeOrderedUuid, type Ids } from '../../platform/ids.js';
import { enqueue } from '../../platform/jobs/jobs.js';
import type { KeyOwner } from '../api-keys/api-key.repository.js';
import type { Db, InboxDatabase } from '../database.js';
import type { EmitInput, EventService } from '../events/event.service.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { parseLimit, parseListFilter, type ListFilterQuery } from '../lists/list-query.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import { findInbox, findInboxesByAddresses, type Inbox } from '../inboxes/inbox.repository.js';
import { normalizeInboxId } from '../inboxes/inbox.service.js';
import {
  addressOf,
  composeMessage,
  escapeHtml,
  formatMailbox,
  forwardedBlock,
  forwardSubject,
  htmlToPlainText,
  mediaTypeOf,
  normalizeSubject,
  parseMailbox,
  previewOf,
  replySubject,
  splitAddressList,
  type ComposeAttachment,
  type Mailbox,
} from '../mail/compose.js';
import { findThreadsForUpdate, insertThreads, updateThread, updateThreadLabels, type Thread } from '../threads/thread.repository.js';
import { toThreadItemResponse } from '../threads/thread.schemas.js';
import { addMessageToThread, mergeThreadLabels, startThread } from '../threads/thread.service.js';
import { createDownloadLinks } from './message-download.service.js';
import {
  AttachmentNotFoundError,
  AttachmentsTooLargeError,
  AttachmentUrlNotSupportedError,
  ConflictingLabelsError,
  ExternalDeliveryDisabledError,
  ForbiddenHeaderError,
  InvalidAttachmentError,
  InvalidHeaderError,
  InvalidLabelError,
  InvalidRecipientError,
  InvalidSubjectError,
  MessageNotFoundError,
  MissingContentError,
  MissingRecipientError,
  RawMessageNotAvailableError,
  ReservedLabelError,
  SendLimitExceededError,
  TooManyRecipientsError,
  type AddressField,
} from './message.errors.js';
import {
  findAttachmentContent,
  findMessage,
  findRawSource,
  findThreadAttachment,
  findThreadMessageLabels,
  findThreadsHoldingMessages,
  incrementSendCount,
  insertMessages,
  listMessages,
  updateMessageLabels,
  type AttachmentMeta,
  type ContentDisposition,
  type Message,
  type NewMessage,
} from './message.repository.js';
import { toMessageResponse } from './message.schemas.js';
import { addressKey, domainKey, domainOf, localDomainSet } from '../mail/domains.js';

/**
 * The durable queue of mail for non-local recipients (payload: `OutboundMailJob`), handled by
 * `outbound/outbound.worker.ts`: it hands the stored source to INBOX_SMTP_RELAY_URL and emits
 * message.sent, message.delivered, message.bounced or message.rejected for those recipients.
 * Without a relay, sends to them are refused here.
 */
export const OUTBOUND_MAIL_QUEUE = 'mail.outbound';

export interface OutboundMailJob {
  readonly message_pk: number;
  readonly message_id: string;
  readonly organization_id: string;
  readonly inbox_id: string;
  readonly thread_id: string;
  /** Bare addresses on other domains (bcc included). */
  readonly recipients: readonly string[];
}

/** Labels that state a fact about a message (its direction); only the service sets them. */
export const RESERVED_LABELS: readonly string[] = ['sent', 'received'];

/** The headers a sender may not set: the service writes them from the request fields. */
const FORBIDDEN_HEADERS = new Set(['from', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id', 'in-reply-to', 'references', 'mime-version', 'sender', 'return-path']);
/**
 * Trace and authentication headers: mail servers and verifiers add them on the way (RFC 5321
 * §4.4, RFC 8601, RFC 8617, RFC 5322 §3.6.6); a sender who sets them could forge a verdict or a
 * route, or ask for read receipts on the recipient's behalf.
 */
const TRACE_HEADERS = new Set(['received', 'return-receipt-to', 'dkim-signature', 'authentication-results', 'received-spf', 'delivered-to', 'x-original-to', 'disposition-notification-to']);
const TRACE_HEADER_PREFIXES = ['arc-', 'resent-'];
const HEADER_NAME = /^[!-9;-~]{1,100}$/;
// Control characters other than tab, for header values and subjects.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_BUT_TAB = /[\u0000-\u0008\u000a-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// A media type with parameters; no line breaks or other control characters, even quoted.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}([ \t]*;[ \t]*[a-z0-9!#$&^_.+-]+=("[^"\\\u0000-\u001f\u007f]*"|[a-z0-9!#$&^_.+-]+))*$/i;
const BASE64 = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/;
const MAX_HEADERS = 50;
const MAX_REFERENCES = 50;
const EVENT_PAYLOAD_LIMIT = 1024 * 1024;

export interface SendAttachmentInput {
  readonly filename?: string;
  readonly contentType?: string;
  readonly contentDisposition?: ContentDisposition;
  readonly contentId?: string;
  readonly content?: string;
  readonly url?: string;
}

type Addresses = string | readonly string[];

export interface SendInput {
  readonly to?: Addresses;
  readonly cc?: Addresses;
  readonly bcc?: Addresses;
  readonly replyTo?: Addresses;
  readonly subject?: string;
  readonly text?: string;
  readonly html?: string;
  readonly labels?: readonly string[];
  readonly attachments?: readonly SendAttachmentInput[];
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ReplyInput extends Omit<SendInput, 'subject'> {
  /** Also answer every to and cc recipient of the original. */
  readonly replyAll?: boolean;
}

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
  readonly events: EventService;
  /** Lower-cased local domains: mail to them is delivered in the sending transaction. */
  readonly localDomains: readonly string[];
  readonly maxRecipients: number;
  readonly maxAttachmentBytes: number;
  readonly sendLimitPerDay: number;
  /** Whether mail to other domains may be queued for an SMTP relay. */
  readonly relayConfigured: boolean;
  /** Absolute base URL of download links; the request's own origin when unset. */
  readonly publicUrl: string | undefined;
  readonly downloadTtlSeconds: number;
  /** Wakes the job runner after a commit that queued work (webhook deliveries, outbound mail). */
  readonly notifyJobs: () => void;
}

/** A message id as it appears in paths: with its angle brackets, added when the caller left them out. */
export function normalizeMessageId(raw: string): string {
  const id = raw.trim();
  return id.startsWith('<') ? id : `<${id}>`;
}

/** Seconds from `now` until the next UTC midnight (at least 1). */
export function secondsUntilUtcMidnight(now: Date): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
}

// ---------------------------------------------------------------------------------------------
// Validation of an outgoing message: each rule has its own error and detail code.

interface Recipient {
  readonly mailbox: Mailbox;
  readonly field: AddressField;
  readonly local: boolean;
}

interface Outgoing {
  readonly to: Mailbox[];
  readonly cc: Mailbox[];
  readonly bcc: Mailbox[];
  readonly replyTo: Mailbox[];
  /** Every recipient once (case-insensitive address), to before cc before bcc. */
  readonly recipients: Recipient[];
  readonly subject: string | null;
  readonly text: string | null;
  readonly html: string | null;
  readonly labels: string[];
  readonly headers: Record<string, string>;
  readonly attachments: { meta: AttachmentMeta; compose: ComposeAttachment }[];
}

function parseAddresses(field: AddressField, value: Addresses | undefined, singleLabelDomains: readonly string[]): Mailbox[] {
  if (value === undefined) return [];
  // Empty strings name nobody (so `to: ""` is a missing recipient, not a bad address).
  const pieces = (typeof value === 'string' ? [value] : value).flatMap((v) => splitAddressList(v));
  return pieces.map((piece) => {
    const mailbox = parseMailbox(piece, singleLabelDomains);
    if (!mailbox) throw new InvalidRecipientError(field, piece);
    return mailbox;
  });
}

export function validateLabels(field: string, labels: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const label of labels ?? []) {
    if (typeof label !== 'string' || label.length === 0 || label.length > 255) throw new InvalidLabelError(field, 'labels are 1 to 255 characters long.');
    if (CONTROL.test(label)) throw new InvalidLabelError(field, 'labels must not contain control characters.');
    if (RESERVED_LABELS.includes(label.toLowerCase())) throw new ReservedLabelError(field, label);
    if (!out.includes(label)) out.push(label);
  }
  return out;
}

function validateHeaders(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  const entries = Object.entries(headers ?? {});
  if (entries.length > MAX_HEADERS) throw new InvalidHeaderError(`${entries.length} headers`, `exceed the limit of ${MAX_HEADERS}.`);
  for (const [name, value] of entries) {
    if (!HEADER_NAME.test(name)) throw new InvalidHeaderError(name, 'is not a valid header name (printable ASCII without colon or space, at most 100 characters).');
    const lower = name.toLowerCase();
    if (FORBIDDEN_HEADERS.has(lower) || lower.startsWith('content-')) throw new ForbiddenHeaderError(name);
    if (TRACE_HEADERS.has(lower) || TRACE_HEADER_PREFIXES.some((p) => lower.startsWith(p))) throw new ForbiddenHeaderError(name, 'trace');
    if (typeof value !== 'string' || CONTROL_BUT_TAB.test(value)) throw new InvalidHeaderError(name, 'has a value with line breaks or control characters.');
    if (value.length > 998) throw new InvalidHeaderError(name, 'has a value longer than 998 characters.');
    if (seen.has(lower)) throw new InvalidHeaderError(name, 'is given twice.');
    seen.add(lower);
    out[name] = value;
  }
  return out;
}

function validateAttachments(list: readonly SendAttachmentInput[] | undefined, maxBytes: number, newId: () => string): Outgoing['attachments'] {
  let total = 0;
  const out = (list ?? []).map((a, i) => {
    if (a.url !== undefined) throw new AttachmentUrlNotSupportedError(i);
    if (typeof a.content !== 'string') throw new InvalidAttachmentError(i, 'content (the file as base64) is required.');
    const b64 = a.content.replace(/\s+/g, '');
    const padded = b64.includes('=');
    if (!BASE64.test(b64) || b64.length % 4 === 1 || (padded && b64.length % 4 !== 0)) throw new InvalidAttachmentError(i, 'content is not valid base64.');
    const content = Buffer.from(b64, 'base64');
    let filename: string | null = null;
    if (a.filename !== undefined) {
      filename = a.filename.trim();
      if (!filename || filename.length > 255 || CONTROL.test(filename) || /[/\\]/.test(filename)) {
        throw new InvalidAttachmentError(i, 'filename must be 1 to 255 characters, without control characters or path separators.');
      }
    }
    let contentType: string;
    if (a.contentType !== undefined) {
      contentType = a.contentType.trim();
      if (contentType.length > 255 || !MEDIA_TYPE.test(contentType)) throw new InvalidAttachmentError(i, 'content_type must be a media type such as application/pdf.');
    } else {
      contentType = mediaTypeOf(filename ?? undefined);
    }
    let contentId: string | null = null;
    if (a.contentId !== undefined) {
      contentId = a.contentId.trim().replace(/^<(.*)>$/, '$1');
      if (!contentId || contentId.length > 255 || !/^[!-~]+$/.test(contentId) || /[<>"]/.test(contentId)) {
        throw new InvalidAttachmentError(i, 'content_id must be printable ASCII without spaces, quotes or angle brackets.');
      }
    }
    const contentDisposition: ContentDisposition = a.contentDisposition ?? (contentId !== null ? 'inline' : 'attachment');
    total += content.length;
    const meta: AttachmentMeta = { attachmentId: newId(), filename, size: content.length, contentType, contentDisposition, contentId };
    return { meta, compose: { filename, contentType, contentDisposition, contentId, content } };
  });
  if (total > maxBytes) throw new AttachmentsTooLargeError(total, maxBytes);
  return out;
}

function uniqueByAddress(list: readonly string[]): string[] {
  const seen = new Set<string>();
  return list.filter((e) => {
    const key = addressOf(e).toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------

/**
 * The Message of a message.received event; its bodies are dropped above 1 MB, as AgentMail does.
 * Exported for inbound SMTP, which emits the same event.
 */
export function receivedPayload(message: Message) {
  const wire = toMessageResponse(message);
  if ((message.text?.length ?? 0) + (message.html?.length ?? 0) < EVENT_PAYLOAD_LIMIT / 4 || Buffer.byteLength(JSON.stringify(wire)) <= EVENT_PAYLOAD_LIMIT) return wire;
  const { text: _t, html: _h, extracted_text: _et, extracted_html: _eh, ...rest } = wire;
  return rest;
}

export function createMessageService(deps: MessageServiceDeps) {
  const { db, clock, ids, events, localDomains, notifyJobs } = deps;
  const dialect = dialectOf(db);
  const singleLabelDomains = localDomains.filter((d) => !d.includes('.'));
  const downloads = createDownloadLinks({ db, clock, ids, ttlSeconds: deps.downloadTtlSeconds });
  // Sends commit in groups on SQLite: one fsync for all the sends that arrived meanwhile.
  const commits = createGroupCommit(db);
  const local = localDomainSet(localDomains);
  const isLocal = (address: string) => local.has(domainOf(address));
  /** The inbox id an address on a local domain names (its domain spelled as configured). */
  const inboxIdOf = (address: string) => local.inboxId(address) ?? address.toLowerCase();

  function validate(input: SendInput): Outgoing {
    const to = parseAddresses('to', input.to, singleLabelDomains);
    const cc = parseAddresses('cc', input.cc, singleLabelDomains);
    const bcc = parseAddresses('bcc', input.bcc, singleLabelDomains);
    const replyTo = parseAddresses('reply_to', input.replyTo, singleLabelDomains);
    if (!to.length) throw new MissingRecipientError();
    const recipients: Recipient[] = [];
    const seen = new Set<string>();
    for (const [field, list] of [['to', to], ['cc', cc], ['bcc', bcc]] as const) {
      for (const mailbox of list) {
        // One recipient per mailbox however its domain is spelled (case, Unicode or xn--): a local
        // inbox named twice would otherwise get two copies of one Message-ID.
        const key = addressKey(mailbox.address);
        if (seen.has(key)) continue;
        seen.add(key);
        recipients.push({ mailbox, field, local: isLocal(mailbox.address) });
      }
    }
    if (recipients.length > deps.maxRecipients) throw new TooManyRecipientsError(recipients.length, deps.maxRecipients);
    const external = recipients.find((r) => !r.local);
    if (external && !deps.relayConfigured) throw new ExternalDeliveryDisabledError(external.field, external.mailbox.address, localDomains);
    const subject = input.subject ?? null;
    if (subject !== null && CONTROL_BUT_TAB.test(subject)) throw new InvalidSubjectError();
    const labels = validateLabels('labels', input.labels);
    const headers = validateHeaders(input.headers);
    const attachments = validateAttachments(input.attachments, deps.maxAttachmentBytes, () => timeOrderedUuid(clock.now(), ids));
    const text = input.text ? input.text : null;
    const html = input.html ? input.html : null;
    if (text === null && html === null && attachments.length === 0) throw new MissingContentError();
    return { to, cc, bcc, replyTo, recipients, subject, text, html, labels, headers, attachments };
  }

  async function requireMessage(owner: KeyOwner, inboxId: string, messageId: string, options: { lock?: boolean; trx?: Db } = {}): Promise<Message> {
    const id = normalizeInboxId(inboxId);
    const message = await findMessage(options.trx ?? db, owner.organizationId, id, normalizeMessageId(messageId), options.lock ? { lock: dialect } : {});
    if (message) return message;
    if (!(await findInbox(options.trx ?? db, owner.organizationId, id))) throw new InboxNotFoundError(inboxId);
    throw new MessageNotFoundError(messageId);
  }

  /**
   * Stores the sender's copy, delivers to local inboxes and queues the rest, in one transaction
   * with the quota count and the events: either all of it happens or none.
   */
  async function deliver(owner: KeyOwner, senderId: string, out: Outgoing, parent: Message | undefined): Promise<{ messageId: string; threadId: string }> {
    // Everything that touches the database runs in the unit of work, so that sends arriving
    // while a commit is under way queue up for the next group commit instead of for the connection.
    const result = await commits.run(async (trx) => {
      const localAddresses = [...new Set(out.recipients.filter((r) => r.local).map((r) => inboxIdOf(r.mailbox.address)))];
      const found = await findInboxesByAddresses(trx, [...new Set([senderId, ...localAddresses])]);
      const byAddress = new Map(found.map((i) => [i.inboxId, i]));
      const sender = byAddress.get(senderId);
      if (!sender || sender.organizationId !== owner.organizationId) throw new InboxNotFoundError(senderId);
      const delivered: Inbox[] = [];
      const bounced: string[] = [];
      for (const r of out.recipients) {
        if (!r.local) continue;
        const inbox = byAddress.get(inboxIdOf(r.mailbox.address));
        if (inbox) delivered.push(inbox);
        else bounced.push(r.mailbox.address);
      }
      const external = out.recipients.filter((r) => !r.local).map((r) => r.mailbox.address);
      const selfDelivered = delivered.some((i) => i.inboxId === sender.inboxId);
      const others = delivered.filter((i) => i.inboxId !== sender.inboxId);

      const now = clock.now();
      const timestamp = now.toISOString();
      // ASCII on the wire: an internationalized domain goes into the Message-ID in its xn-- form.
      const messageId = `<${timeOrderedUuid(now, ids)}@${domainKey(sender.domain)}>`;
      const from: Mailbox = { name: sender.displayName ?? '', address: sender.inboxId };
      const inReplyTo = parent ? parent.messageId : null;
      const references = parent ? [...new Set([...parent.references, parent.messageId])].slice(-MAX_REFERENCES) : [];
      // Composed once: every copy stores the same source (which never names bcc recipients).
      const raw = await composeMessage({
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
      });

      const base = {
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
        size: raw.length,
        createdAt: timestamp,
        updatedAt: timestamp,
        raw,
        attachmentContents: out.attachments.map((a) => a.compose.content),
      };
      const copyFor = (inbox: Inbox, labels: string[], bcc: readonly Mailbox[]): Omit<NewMessage, 'threadId'> => ({
        ...base,
        organizationId: inbox.organizationId,
        inboxId: inbox.inboxId,
        labels: [...new Set(labels)],
        bcc: bcc.map(formatMailbox),
      });
      const copies = [
        { inbox: sender, message: copyFor(sender, ['sent', ...(selfDelivered ? ['received', 'unread'] : []), ...out.labels], out.bcc) },
        ...others.map((inbox) => ({ inbox, message: copyFor(inbox, ['received', 'unread'], []) })),
      ];

      // Threading: the sender's copy joins the thread of the message it answers; a recipient's
      // copy joins the thread of that inbox holding a message named by In-Reply-To/References.
      const threadIdByInbox = new Map<string, string>();
      const refs = [...new Set([...(inReplyTo ? [inReplyTo] : []), ...references])];
      if (refs.length && others.length) {
        for (const h of await findThreadsHoldingMessages(trx, others.map((i) => i.inboxId), refs)) if (!threadIdByInbox.has(h.inboxId)) threadIdByInbox.set(h.inboxId, h.threadId);
      }
      if (parent) threadIdByInbox.set(sender.inboxId, parent.threadId);
      const existing = new Map((await findThreadsForUpdate(trx, [...new Set(threadIdByInbox.values())], dialect)).map((t) => [t.threadId, t]));

      const created: Thread[] = [];
      const changed: Thread[] = [];
      const stored = copies.map(({ inbox, message }) => {
        const current = existing.get(threadIdByInbox.get(inbox.inboxId) ?? '');
        const thread = current ? addMessageToThread(current, message) : startThread({ threadId: timeOrderedUuid(now, ids), organizationId: inbox.organizationId, inboxId: inbox.inboxId }, message, normalizeSubject(message.subject));
        (current ? changed : created).push(thread);
        return { inbox, thread, message: { ...message, threadId: thread.threadId } };
      });
      await insertThreads(trx, created);
      for (const t of changed) await updateThread(trx, t);
      const pks = await insertMessages(trx, stored.map((s) => s.message));

      const senderCopy = stored[0] as (typeof stored)[number];
      const ref = { inbox_id: sender.inboxId, thread_id: senderCopy.thread.threadId, message_id: messageId, timestamp };
      const event = (inbox: Inbox, eventType: EmitInput['eventType'], body: Record<string, unknown>): EmitInput => ({ organizationId: inbox.organizationId, inboxId: inbox.inboxId, podId: inbox.podId, eventType, body });
      // Here only the local leg: the outbound worker emits message.sent for the other recipients
      // when the relay takes the message (docs/decisions/0006-outbound-mail.md).
      const localRecipients = out.recipients.filter((r) => r.local).map((r) => r.mailbox.address);
      const emitted: EmitInput[] = localRecipients.length ? [event(sender, 'message.sent', { send: { ...ref, recipients: localRecipients } })] : [];
      for (const s of stored) {
        if (s.inbox.inboxId === sender.inboxId && !selfDelivered) continue;
        emitted.push(event(s.inbox, 'message.received', { message: receivedPayload({ ...s.message, pk: pks.get(s.inbox.inboxId) as number }), thread: toThreadItemResponse(s.thread) }));
      }
      // As SES reports a delivery: for the recipients that got it (all of them, unless some bounced).
      if (delivered.length) emitted.push(event(sender, 'message.delivered', { delivery: { ...ref, recipients: out.recipients.filter((r) => r.local && !bounced.includes(r.mailbox.address)).map((r) => r.mailbox.address) } }));
      if (bounced.length) {
        // SES's vocabulary, which AgentMail passes on: a permanent bounce, "NoEmail" = no such address;
        // the recipient status is the RFC 3463 code, as for bounces from the relay (decision 0006).
        emitted.push(event(sender, 'message.bounced', { bounce: { ...ref, type: 'Permanent', sub_type: 'NoEmail', recipients: bounced.map((address) => ({ address, status: '5.1.1', diagnostic_code: 'smtp; 550 5.1.1 no such mailbox' })) } }));
      }
      let jobs = (await events.emitMany(trx, emitted)).jobs;
      if (external.length) {
        const job: OutboundMailJob = { message_pk: pks.get(sender.inboxId) as number, message_id: messageId, organization_id: sender.organizationId, inbox_id: sender.inboxId, thread_id: senderCopy.thread.threadId, recipients: external };
        await enqueue(trx, clock, OUTBOUND_MAIL_QUEUE, job);
        jobs += 1;
      }

      // Counted last: in PostgreSQL the counter row stays locked until the commit, and the
      // organization's other sends wait for it; a refused send rolls all of the above back.
      const sentToday = await incrementSendCount(trx, owner.organizationId, timestamp.slice(0, 10));
      if (sentToday > deps.sendLimitPerDay) throw new SendLimitExceededError(deps.sendLimitPerDay, secondsUntilUtcMidnight(now));
      return { messageId, threadId: senderCopy.thread.threadId, jobs };
    });
    if (result.jobs) notifyJobs();
    return { messageId: result.messageId, threadId: result.threadId };
  }

  function link(token: string, expiresAt: string, origin: string): DownloadLink {
    const base = (deps.publicUrl ?? origin).replace(/\/+$/, '');
    return { url: `${base}/v0/downloads/${token}`, expiresAt };
  }

  return {
    /** Sends a new message from an inbox; returns the ids of the sender's copy. */
    async send(owner: KeyOwner, inboxId: string, input: SendInput): Promise<{ messageId: string; threadId: string }> {
      return deliver(owner, normalizeInboxId(inboxId), validate(input), undefined);
    },

    /**
     * Answers a message of the inbox: by default its sender (its Reply-To, or, for a message this
     * inbox sent, its recipients); with `replyAll` also every to and cc recipient but the inbox
     * itself. Explicit to, cc and bcc replace the computed ones. In-Reply-To and References
     * make it join the thread on both sides.
     */
    async reply(owner: KeyOwner, inboxId: string, messageId: string, input: ReplyInput): Promise<{ messageId: string; threadId: string }> {
      const parent = await requireMessage(owner, inboxId, messageId);
      const own = parent.inboxId.toLowerCase();
      const notOwn = (list: readonly string[]) => list.filter((e) => addressOf(e).toLowerCase() !== own);
      const fromUs = addressOf(parent.from).toLowerCase() === own;
      let to = fromUs ? notOwn(parent.to) : parent.replyTo.length ? [...parent.replyTo] : [parent.from];
      if (input.replyAll && !fromUs) to = [...to, ...notOwn(parent.to)];
      // A note the inbox sent to itself is answered to itself.
      if (!to.length) to = [parent.from];
      to = uniqueByAddress(to);
      const inTo = new Set(to.map((e) => addressOf(e).toLowerCase()));
      const cc = input.replyAll ? uniqueByAddress(notOwn(parent.cc)).filter((e) => !inTo.has(addressOf(e).toLowerCase())) : [];
      const out = validate({
        ...input,
        to: input.to ?? to,
        cc: input.cc ?? cc,
        subject: replySubject(parent.subject),
      });
      return deliver(owner, parent.inboxId, out, parent);
    },

    /**
     * Forwards a message of the inbox to new recipients: the caller's text and HTML first, then
     * the original under a forwarded-message block, with the original's attachments after the
     * caller's. The sender's copy stays in the original's thread (References name it).
     */
    async forward(owner: KeyOwner, inboxId: string, messageId: string, input: SendInput): Promise<{ messageId: string; threadId: string }> {
      const original = await requireMessage(owner, inboxId, messageId);
      const carried: SendAttachmentInput[] = [];
      for (const a of original.attachments) {
        const found = await findAttachmentContent(db, original.pk, a.attachmentId);
        if (!found) continue;
        carried.push({
          ...(a.filename !== null ? { filename: a.filename } : {}),
          ...(a.contentType !== null ? { contentType: a.contentType } : {}),
          ...(a.contentDisposition !== null ? { contentDisposition: a.contentDisposition } : {}),
          ...(a.contentId !== null ? { contentId: a.contentId } : {}),
          content: found.content.toString('base64'),
        });
      }
      const block = forwardedBlock(original);
      const own = input.text ?? (input.html !== undefined ? htmlToPlainText(input.html) : '');
      const ownHtml = input.html ?? (input.text !== undefined ? `<div>${escapeHtml(input.text).replace(/\n/g, '<br>')}</div>` : '');
      const out = validate({
        ...input,
        subject: input.subject ?? forwardSubject(original.subject),
        text: own ? `${own}\n\n${block.text}` : block.text,
        html: `${ownHtml}${ownHtml ? '<br><br>' : ''}${block.html}`,
        attachments: [...(input.attachments ?? []), ...carried],
      });
      return deliver(owner, original.inboxId, out, original);
    },

    async get(owner: KeyOwner, inboxId: string, messageId: string): Promise<Message> {
      return requireMessage(owner, inboxId, messageId);
    },

    /** Newest first (or oldest with `ascending`), by keyset: every page costs what the first does. */
    async list(owner: KeyOwner, inboxId: string, query: MessageListQuery) {
      const id = normalizeInboxId(inboxId);
      const limit = parseLimit(query.limit);
      const filter = parseListFilter(query);
      const cursor = query.pageToken ? decodeCursor(query.pageToken, 'integer') : undefined;
      const direction = cursor?.direction ?? (query.ascending ? 'asc' : 'desc');
      if (!(await findInbox(db, owner.organizationId, id))) throw new InboxNotFoundError(inboxId);
      const rows = await listMessages(db, { organizationId: owner.organizationId, inboxId: id }, filter, { limit, direction, ...(cursor ? { after: cursor } : {}) });
      return { limit, ...page(rows, limit, (m) => ({ sort: m.timestamp, tiebreak: m.pk }), direction) };
    },

    /** Adds and removes labels; the thread's labels follow (the union of its messages'). */
    async updateLabels(owner: KeyOwner, inboxId: string, messageId: string, change: { addLabels?: readonly string[]; removeLabels?: readonly string[] }): Promise<Message> {
      const add = validateLabels('add_labels', change.addLabels);
      const remove = validateLabels('remove_labels', change.removeLabels);
      const both = add.find((l) => remove.includes(l));
      if (both !== undefined) throw new ConflictingLabelsError(both);
      const result = await db.transaction().execute(async (trx) => {
        const message = await requireMessage(owner, inboxId, messageId, { lock: true, trx });
        const added = add.filter((l) => !message.labels.includes(l));
        const removed = remove.filter((l) => message.labels.includes(l));
        if (!added.length && !removed.length) return message;
        const labels = [...message.labels.filter((l) => !removed.includes(l)), ...added];
        const updatedAt = clock.now().toISOString();
        await updateMessageLabels(trx, message.pk, labels, added, removed, updatedAt);
        const [thread] = await findThreadsForUpdate(trx, [message.threadId], dialect);
        if (thread) await updateThreadLabels(trx, thread.threadId, mergeThreadLabels(thread.labels, await findThreadMessageLabels(trx, thread.threadId)), updatedAt);
        return { ...message, labels, updatedAt };
      });
      return result;
    },

    /** Metadata and a signed download link of an attachment of a message. */
    async attachmentLink(owner: KeyOwner, inboxId: string, messageId: string, attachmentId: string, origin: string): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      const message = await requireMessage(owner, inboxId, messageId);
      const attachment = message.attachments.find((a) => a.attachmentId === attachmentId);
      if (!attachment) throw new AttachmentNotFoundError(attachmentId);
      const { token, expiresAt } = await downloads.sign({ kind: 'attachment', messagePk: message.pk, attachmentId });
      return { attachment, ...link(token, expiresAt, origin) };
    },

    /** The same for an attachment found through a thread (of the organization, or of one inbox). */
    async threadAttachmentLink(owner: KeyOwner, threadId: string, attachmentId: string, origin: string, inboxId?: string): Promise<{ attachment: AttachmentMeta } & DownloadLink> {
      const found = await findThreadAttachment(db, owner.organizationId, threadId, attachmentId, inboxId === undefined ? undefined : normalizeInboxId(inboxId));
      if (!found) throw new AttachmentNotFoundError(attachmentId);
      const { token, expiresAt } = await downloads.sign({ kind: 'attachment', messagePk: found.messagePk, attachmentId });
      return { attachment: found.attachment, ...link(token, expiresAt, origin) };
    },

    /** Size and a signed download link of the RFC 5322 source. */
    async rawLink(owner: KeyOwner, inboxId: string, messageId: string, origin: string): Promise<{ messageId: string; size: number } & DownloadLink> {
      const message = await requireMessage(owner, inboxId, messageId);
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
      const file = await findAttachmentContent(db, target.messagePk, target.attachmentId);
      if (!file) throw new AttachmentNotFoundError(target.attachmentId);
      return { kind: 'attachment', filename: file.filename, contentType: file.contentType ?? 'application/octet-stream', content: file.content };
    },
  };
}

export type MessageService = ReturnType<typeof createMessageService>;
