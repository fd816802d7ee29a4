import { CONTROL, validateLabels, type AttachmentMeta, type ContentDisposition } from '../core/message.js';
import { timeOrderedUuid, type Ids } from '../../platform/ids.js';
import type { Clock } from '../../platform/clock.js';
import { decodeBase64 } from '../mail/base64.js';
import { inboxPool, OFFLOAD_BASE64_CHARS } from '../offload.js';
import {
  isMediaType,
  mediaTypeOf,
  parseMailbox,
  splitAddressList,
  type ComposeAttachment,
  type Mailbox,
} from '../mail/compose.js';
import { addressKey, domainOf, localDomainSet } from '../mail/domains.js';
import {
  AttachmentsTooLargeError,
  BodyTooLargeError,
  ForbiddenHeaderError,
  InvalidAttachmentError,
  InvalidHeaderError,
  InvalidRecipientError,
  InvalidSubjectError,
  MissingContentError,
  MissingRecipientError,
  TooManyRecipientsError,
  type AddressField,
} from '../core/message.errors.js';
import { fetchAttachmentFile, type AttachmentUrlRules } from './attachment-urls.js';

/**
 * Validation of an outgoing message (send, reply, reply-all, forward, drafts and their sends): the request's fields → `Outgoing`, or the error of the first rule it breaks, each
 * with its own detail code. No database, no I/O.
 */

/** The headers a sender may not set: the service writes them from the request fields. */
const FORBIDDEN_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'in-reply-to',
  'references',
  'mime-version',
  'sender',
  'return-path',
]);
/**
 * Trace and authentication headers: mail servers and verifiers add them on the way (RFC 5321
 * §4.4, RFC 8601, RFC 8617, RFC 5322 §3.6.6); a sender who sets them could forge a verdict or a
 * route, or ask for read receipts on the recipient's behalf.
 */
const TRACE_HEADERS = new Set([
  'received',
  'return-receipt-to',
  'dkim-signature',
  'authentication-results',
  'received-spf',
  'delivered-to',
  'x-original-to',
  'disposition-notification-to',
]);
const TRACE_HEADER_PREFIXES = ['arc-', 'resent-'];
const HEADER_NAME = /^[!-9;-~]{1,100}$/;
// Control characters other than tab, for header values and subjects.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_BUT_TAB = /[\u0000-\u0008\u000a-\u001f\u007f]/;
const MAX_HEADERS = 50;

/**
 * An attachment as every door gives it: the file as base64 `content`, or a `url` the service
 * fetches before the send (attachment-urls.ts; a missing filename and contentType then come from
 * the answer), never both.
 */
export interface SendAttachmentInput {
  readonly filename?: string;
  readonly contentType?: string;
  readonly contentDisposition?: ContentDisposition;
  readonly contentId?: string;
  readonly content?: string;
  /** The content already decoded as the body arrived (`content` is then ''). */
  readonly bytes?: Buffer;
  /** An http(s) URL of the file, instead of `content`. */
  readonly url?: string;
  /**
   * Set by the send path only, never by a door: `bytes` were fetched from `url` (counted against
   * INBOX_ATTACHMENT_URL_MAX_BYTES) or read from storage (a draft's, a forwarded message's,
   * counted when they were stored), not given inline (INBOX_MAX_ATTACHMENT_BYTES).
   */
  readonly admitted?: 'url' | 'stored';
}

/** A stored attachment (its metadata and bytes) as a send takes it: a forward or a draft carries it on. */
export function toSendAttachment(meta: AttachmentMeta, content: Buffer): SendAttachmentInput {
  return {
    ...(meta.filename !== null ? { filename: meta.filename } : {}),
    ...(meta.contentType !== null ? { contentType: meta.contentType } : {}),
    ...(meta.contentDisposition !== null ? { contentDisposition: meta.contentDisposition } : {}),
    ...(meta.contentId !== null ? { contentId: meta.contentId } : {}),
    content: '',
    bytes: content,
    admitted: 'stored',
  };
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

export interface Recipient {
  readonly mailbox: Mailbox;
  readonly field: AddressField;
  readonly local: boolean;
}

export interface Outgoing {
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

function parseAddresses(
  field: AddressField,
  value: Addresses | undefined,
  singleLabelDomains: readonly string[],
): Mailbox[] {
  if (value === undefined) return [];
  // Empty strings name nobody (so `to: ""` is a missing recipient, not a bad address).
  const pieces = (typeof value === 'string' ? [value] : value).flatMap((v) => splitAddressList(v));
  return pieces.map((piece) => {
    const mailbox = parseMailbox(piece, singleLabelDomains);
    if (!mailbox) throw new InvalidRecipientError(field, piece);
    return mailbox;
  });
}

function validateHeaders(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  const entries = Object.entries(headers ?? {});
  if (entries.length > MAX_HEADERS)
    throw new InvalidHeaderError(`${entries.length} headers`, `exceed the limit of ${MAX_HEADERS}.`);
  for (const [name, value] of entries) {
    if (!HEADER_NAME.test(name))
      throw new InvalidHeaderError(
        name,
        'is not a valid header name (printable ASCII without colon or space, at most 100 characters).',
      );
    const lower = name.toLowerCase();
    if (FORBIDDEN_HEADERS.has(lower) || lower.startsWith('content-')) throw new ForbiddenHeaderError(name);
    if (TRACE_HEADERS.has(lower) || TRACE_HEADER_PREFIXES.some((p) => lower.startsWith(p)))
      throw new ForbiddenHeaderError(name, 'trace');
    if (typeof value !== 'string' || CONTROL_BUT_TAB.test(value))
      throw new InvalidHeaderError(name, 'has a value with line breaks or control characters.');
    if (value.length > 998) throw new InvalidHeaderError(name, 'has a value longer than 998 characters.');
    if (seen.has(lower)) throw new InvalidHeaderError(name, 'is given twice.');
    seen.add(lower);
    out[name] = value;
  }
  return out;
}

function validateAttachments(
  list: readonly SendAttachmentInput[] | undefined,
  maxBytes: number,
  newId: () => string,
  decoded: Decoded | undefined,
): Outgoing['attachments'] {
  let total = 0;
  const out = (list ?? []).map((a, i) => {
    if (a.admitted !== undefined) {
      // Bytes the send path fetched or read from storage.
    } else if (a.url !== undefined) {
      if (a.content !== undefined) throw new InvalidAttachmentError(i, 'give either content or url, not both.');
      if (typeof a.url !== 'string' || !a.url) throw new InvalidAttachmentError(i, 'url must be an http or https URL.');
    } else if (typeof a.content !== 'string')
      throw new InvalidAttachmentError(i, 'content (the file as base64) or url is required.');
    const content =
      a.bytes ??
      (a.url !== undefined ? Buffer.alloc(0) : decoded?.[i] !== undefined ? decoded[i] : decodeBase64(a.content ?? ''));
    if (!content) throw new InvalidAttachmentError(i, 'content is not valid base64.');
    let filename: string | null = null;
    if (a.filename !== undefined) {
      filename = a.filename.trim();
      if (!filename || filename.length > 255 || CONTROL.test(filename) || /[/\\]/.test(filename)) {
        throw new InvalidAttachmentError(
          i,
          'filename must be 1 to 255 characters, without control characters or path separators.',
        );
      }
    }
    let contentType: string;
    if (a.contentType !== undefined) {
      contentType = a.contentType.trim();
      if (!isMediaType(contentType))
        throw new InvalidAttachmentError(i, 'content_type must be a media type such as application/pdf.');
    } else {
      contentType = mediaTypeOf(filename ?? undefined);
    }
    let contentId: string | null = null;
    if (a.contentId !== undefined) {
      contentId = a.contentId.trim().replace(/^<(.*)>$/, '$1');
      if (!contentId || contentId.length > 255 || !/^[!-~]+$/.test(contentId) || /[<>"]/.test(contentId)) {
        throw new InvalidAttachmentError(
          i,
          'content_id must be printable ASCII without spaces, quotes or angle brackets.',
        );
      }
    }
    const contentDisposition: ContentDisposition =
      a.contentDisposition ?? (contentId !== null ? 'inline' : 'attachment');
    // Files fetched from a url or read from storage have limits of their own.
    if (a.admitted === undefined) total += content.length;
    const meta: AttachmentMeta = {
      attachmentId: newId(),
      filename,
      size: content.length,
      contentType,
      contentDisposition,
      contentId,
    };
    return { meta, compose: { filename, contentType, contentDisposition, contentId, content } };
  });
  if (total > maxBytes) throw new AttachmentsTooLargeError(total, maxBytes);
  return out;
}

/** The caller's text and html, each within `maxBytes` of UTF-8 (before a forward adds the original). */
export function checkBodySizes(input: Pick<SendInput, 'text' | 'html'>, maxBytes: number): void {
  for (const field of ['text', 'html'] as const) {
    const value = input[field];
    // A string of n UTF-16 units is at least n and at most 3n bytes of UTF-8.
    if (typeof value !== 'string' || value.length * 3 <= maxBytes) continue;
    const size = Buffer.byteLength(value);
    if (size > maxBytes) throw new BodyTooLargeError(field, size, maxBytes);
  }
}

export interface OutgoingRules {
  readonly clock: Clock;
  readonly ids: Ids;
  /** Lower-cased local domains: mail to them is delivered in the sending transaction. */
  readonly localDomains: readonly string[];
  readonly maxRecipients: number;
  readonly maxAttachmentBytes: number;
  /** Largest text and largest html a caller may give, UTF-8 bytes each. */
  readonly maxBodyBytes: number;
  /** Whether mail to other domains may be queued for an SMTP relay. */
  readonly relayConfigured: boolean;
  /** Attachments given by url: the egress setting, the time per URL and the bytes per request. */
  readonly attachmentUrls: AttachmentUrlRules;
}

/**
 * The rules of an outgoing message, in two strengths: `validate` for a message about to be sent
 * (every rule), `validateParts` for a draft being written (every rule about what is there, none
 * about what is still missing: a recipient, a body). A draft is validated again in full when sent.
 */
export function createOutgoingRules(deps: OutgoingRules) {
  const { clock, ids, localDomains } = deps;
  const singleLabelDomains = localDomains.filter((d) => !d.includes('.'));
  const local = localDomainSet(localDomains);
  const isLocal = (address: string) => local.has(domainOf(address));

  function check(input: SendInput, complete: boolean, decoded?: Decoded): Outgoing {
    const to = parseAddresses('to', input.to, singleLabelDomains);
    const cc = parseAddresses('cc', input.cc, singleLabelDomains);
    const bcc = parseAddresses('bcc', input.bcc, singleLabelDomains);
    const replyTo = parseAddresses('reply_to', input.replyTo, singleLabelDomains);
    if (complete && !to.length) throw new MissingRecipientError();
    const recipients: Recipient[] = [];
    const seen = new Set<string>();
    for (const [field, list] of [
      ['to', to],
      ['cc', cc],
      ['bcc', bcc],
    ] as const) {
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
    // Mail for other domains needs a relay; whether a domain is one of our verified custom domains
    // takes a database lookup, so the send path (send.service.ts) decides, not this synchronous check.
    const subject = input.subject ?? null;
    if (subject !== null && CONTROL_BUT_TAB.test(subject)) throw new InvalidSubjectError();
    const labels = validateLabels('labels', input.labels);
    const headers = validateHeaders(input.headers);
    const attachments = validateAttachments(
      input.attachments,
      deps.maxAttachmentBytes,
      () => timeOrderedUuid(clock.now(), ids),
      decoded,
    );
    const text = input.text ? input.text : null;
    const html = input.html ? input.html : null;
    if (complete && text === null && html === null && attachments.length === 0) throw new MissingContentError();
    return { to, cc, bcc, replyTo, recipients, subject, text, html, labels, headers, attachments };
  }

  /**
   * The input with the file of every attachment given by url fetched, in order, one at a time
   * (the request's bytes within one budget). Every rule is checked first with those files still
   * empty, so that a request that breaks one fetches nothing.
   */
  async function withFetchedFiles(input: SendInput, complete: boolean): Promise<SendInput> {
    const list = input.attachments;
    if (!list?.some((a) => a.url !== undefined && a.admitted === undefined)) return input;
    check(
      input,
      complete,
      list.map(() => Buffer.alloc(0)),
    );
    let budget = deps.attachmentUrls.maxBytes;
    const attachments: SendAttachmentInput[] = [];
    for (const [i, a] of list.entries()) {
      if (a.url === undefined || a.admitted !== undefined) {
        attachments.push(a);
        continue;
      }
      const file = await fetchAttachmentFile(i, a.url, budget, deps.attachmentUrls);
      budget -= file.bytes.length;
      const filename = a.filename ?? file.filename;
      const contentType = a.contentType ?? file.contentType;
      attachments.push({
        ...a,
        ...(filename !== undefined ? { filename } : {}),
        ...(contentType !== undefined ? { contentType } : {}),
        bytes: file.bytes,
        admitted: 'url',
      });
    }
    return { ...input, attachments };
  }

  return {
    /**
     * A complete send. Files given by url are fetched first (the caller's unit of work has not
     * started), attachments of OFFLOAD_BASE64_CHARS or more decoded in a worker thread.
     */
    validate: async (input: SendInput): Promise<Outgoing> => {
      const full = await withFetchedFiles(input, true);
      return check(full, true, await decodeLargeAttachments(full.attachments));
    },
    /** What a draft holds so far (content may still be missing); attachments as in `validate`. */
    validateParts: async (input: SendInput): Promise<Outgoing> => {
      const full = await withFetchedFiles(input, false);
      return check(full, false, await decodeLargeAttachments(full.attachments));
    },
    /** A draft's merged fields inside its unit of work: no attachments, so nothing to decode or await. */
    validateFields: (input: Omit<SendInput, 'attachments'>): Outgoing => check(input, false, undefined),
    maxAttachmentBytes: deps.maxAttachmentBytes,
  };
}

export function createOutgoingValidator(deps: OutgoingRules): (input: SendInput) => Promise<Outgoing> {
  return createOutgoingRules(deps).validate;
}

/**
 * Attachment bytes decoded ahead of validation, by the attachment's index: a Buffer, null for
 * content that is not valid base64, undefined where validation decodes it itself.
 */
type Decoded = readonly (Buffer | null | undefined)[];

/**
 * Checks and decodes the base64 of every attachment of at least OFFLOAD_BASE64_CHARS in a worker
 * thread (`decodeBase64`, the same function validation runs on the smaller ones): for 10 MiB of
 * attachments the whitespace strip, the alphabet check and the decoding held the event loop for
 * about 100 ms (docs/decisions/0023).
 */
async function decodeLargeAttachments(list: readonly SendAttachmentInput[] | undefined): Promise<Decoded | undefined> {
  if (!list?.some((a) => typeof a.content === 'string' && a.content.length >= OFFLOAD_BASE64_CHARS)) return undefined;
  return Promise.all(
    list.map(async (a) => {
      if (typeof a.content !== 'string' || a.content.length < OFFLOAD_BASE64_CHARS) return undefined;
      const bytes = await inboxPool().run<Uint8Array | null>('decodeBase64', a.content);
      return bytes && Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }),
  );
}
