import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { isIPv6 } from 'node:net';
import type { AddressObject, Attachment, EmailAddress, ParsedMail, simpleParser } from 'mailparser';
import { formatMailbox, previewOf } from '../mail/compose.js';
import type { AttachmentMeta, ContentDisposition } from '../core/message.js';
import { UnparseableMessageError } from './inbound.errors.js';

/**
 * Mail knowledge of inbound messages, without I/O: MIME parsing (mailparser), the header section
 * as the wire carries it, and the trace fields a receiving MTA prepends.
 */

// PostgreSQL text cannot hold NUL, which bodies in the wild do carry: it is dropped from every
// text we store (a message that cannot be stored must not be acknowledged). Header values also
// lose the other controls but tab; names, addresses and ids lose every control character.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NUL = /\u0000/g;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_ALL = /[\u0000-\u001f\u007f]+/g;
// eslint-disable-next-line no-control-regex -- control characters are what an id must not hold
const MESSAGE_ID = /<([^<>\s\u0000-\u001f\u007f]+)>/g;
/**
 * A Message-ID kept as it is: at most 250 bytes between the brackets, printable ASCII or, as
 * RFC 6532 allows in internationalized mail, UTF-8 (no controls, no spaces: MESSAGE_ID already
 * excludes those but the C1 range).
 */
const MAX_MESSAGE_ID_BYTES = 250;
const C1_CONTROL = /[\u0080-\u009f]/;
const usableMessageId = (inner: string) =>
  inner.length <= MAX_MESSAGE_ID_BYTES &&
  Buffer.byteLength(inner, 'utf8') <= MAX_MESSAGE_ID_BYTES &&
  !C1_CONTROL.test(inner);
const MAX_REFERENCES = 100;

/** What `inboundContent` reads of a parsed message. */
export type ParsedFields = Pick<
  ParsedMail,
  | 'headers'
  | 'subject'
  | 'references'
  | 'to'
  | 'from'
  | 'cc'
  | 'messageId'
  | 'inReplyTo'
  | 'replyTo'
  | 'html'
  | 'text'
  | 'attachments'
>;

/** mailparser (and its character sets) load with the first message that needs it, not at start. */
let mailparser: Promise<{ simpleParser: typeof simpleParser }> | undefined;

/** mailparser, as configured for inbound mail: every message can go this way. */
export async function parseMessageWithMailparser(source: Buffer): Promise<ParsedMail> {
  try {
    const { simpleParser } = await (mailparser ??= import('mailparser'));
    return await simpleParser(source, {
      // Inline images stay attachments, referenced from the HTML by cid: as the sender wrote it.
      keepCidLinks: true,
      // The bodies are what the message carries: no text made from HTML or HTML made from text.
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
      // mailparser hashes every attachment (its `checksum`, md5 by default), which nothing here
      // reads: SHA-1 is the cheapest digest it can take (bench/README.md, "Large messages").
      checksumAlgo: 'sha1',
    });
  } catch (err) {
    throw new UnparseableMessageError(err instanceof Error ? err.message : String(err), err);
  }
}

/**
 * The fields of a message: `parseSimpleMessage` when the message is one it takes, else
 * `parseWithoutLargeBase64` when it has large base64 attachments, else mailparser. Each gives
 * mailparser's fields for the messages it takes (parse.test.ts and parse-shortcuts.test.ts prove
 * it over the fixture corpus and generated messages).
 */
export async function parseMessage(source: Buffer): Promise<ParsedFields> {
  return (
    parseSimpleMessage(source) ?? (await parseWithoutLargeBase64(source)) ?? (await parseMessageWithMailparser(source))
  );
}

// ---------------------------------------------------------------------------------------------
// Large base64 parts: decoded natively, the rest of the message by mailparser.

/** A base64 body shorter than this is left to mailparser (the saving would not pay for the search). */
const LARGE_BASE64_BYTES = 32 * 1024;
/** Random bytes of a stand-in body: a multiple of 3, so that its base64 has no padding. */
const STAND_IN_BYTES = 48;
const BLANK_LINE = Buffer.from('\r\n\r\n', 'latin1');
const BOUNDARY_LINE = Buffer.from('\r\n--', 'latin1');
/** Large bodies read into strings per message, at most (each up to the next `--` line). */
const MAX_READS = 16;

interface Base64Run {
  readonly start: number;
  readonly end: number;
  readonly content: Buffer;
}

/**
 * The base64 body from `start` (after an empty line) to `end` (the CRLF before a line starting
 * with `--`, a boundary if the rest is right), decoded as mailparser decodes it: lines of one
 * length (at most 996; the last may be shorter), padding only at the very end, no `-` or `_`.
 * Undefined for anything else.
 */
function base64RunAt(
  source: Buffer,
  start: number,
  end: number,
  budget: { lines: number; reads: number },
): Base64Run | undefined {
  const width = source.indexOf(0x0d, start) - start;
  if (width < 4 || width % 4 !== 0 || width > 996) return undefined;
  const stride = width + 2;
  const lines = Math.ceil((end - start + 2) / stride);
  // Every line but the last is `width` long; the last is 1 to `width`.
  for (let line = 1; line < lines; line++) {
    if (--budget.lines < 0) return undefined;
    if (source[start + line * stride - 2] !== 0x0d) return undefined;
  }
  const last = end - start - (lines - 1) * stride;
  if (last < 1 || last > width || --budget.reads < 0) return undefined;
  // libbase64 (mailparser's decoder) strips every byte but [A-Za-z0-9+/=] and decodes the rest
  // with Node's decoder, in quartets; Node's decoder alone skips the same bytes but reads `-` and
  // `_` as base64url and stops at a `=`. Without those (a `=` only as the last one or two bytes)
  // both give the same bytes.
  const body = source.subarray(start, end);
  if (body.indexOf(0x2d) >= 0 || body.indexOf(0x5f) >= 0) return undefined;
  const pad = body.indexOf(0x3d);
  if (pad >= 0 && !(pad === body.length - 1 || (pad === body.length - 2 && body[pad + 1] === 0x3d))) return undefined;
  const content = Buffer.from(source.toString('latin1', start, end), 'base64');
  return { start, end, content };
}

/**
 * mailparser's fields for a message with large base64 bodies, for less: each such body (see
 * `base64RunAt`) is given to mailparser as a random 48-byte stand-in and decoded here by Node
 * (mailparser's line splitter, base64 decoder and checksum would otherwise take several ms per
 * MiB). Every stand-in must come back as exactly one attachment whose content is exactly the
 * stand-in, which then gets the decoded bytes: the stand-in then was the whole body of an
 * attachment (any other byte of its body that decodes to something, or a transfer encoding other
 * than base64, or a text part, would change or lose the stand-in), and mailparser decodes such a
 * body to what Node does (`base64RunAt`). Else undefined, and mailparser takes the message as it
 * is. parse-shortcuts.test.ts checks the result against mailparser's.
 */
export async function parseWithoutLargeBase64(source: Buffer): Promise<ParsedFields | undefined> {
  if (source.length < LARGE_BASE64_BYTES) return undefined;
  const runs: Base64Run[] = [];
  // The next line that starts with `--` (a boundary, maybe), found once for all empty lines before it.
  let boundary = -1;
  // Linear however the empty lines fall: line checks at most one per 64 bytes of the message,
  // and at most MAX_READS bodies turned into strings.
  const budget = { lines: Math.ceil(source.length / 64), reads: MAX_READS };
  for (let blank = source.indexOf(BLANK_LINE); blank >= 0;) {
    const start = blank + 4;
    if (boundary < start) boundary = source.indexOf(BOUNDARY_LINE, start);
    if (boundary < 0) break;
    let run: Base64Run | undefined;
    if (boundary - start >= LARGE_BASE64_BYTES) {
      run = base64RunAt(source, start, boundary, budget);
      if (run) runs.push(run);
      if (budget.lines < 0 || budget.reads < 0) return undefined;
    }
    blank = source.indexOf(BLANK_LINE, run ? run.end : blank + 2);
  }
  if (!runs.length) return undefined;
  const standIns = runs.map(() => randomBytes(STAND_IN_BYTES));
  const pieces: Buffer[] = [];
  let at = 0;
  runs.forEach((run, i) => {
    pieces.push(source.subarray(at, run.start), Buffer.from((standIns[i] as Buffer).toString('base64'), 'latin1'));
    at = run.end;
  });
  pieces.push(source.subarray(at));
  let parsed: ParsedMail;
  try {
    parsed = await parseMessageWithMailparser(Buffer.concat(pieces));
  } catch {
    // Whether the message as it is parses is for mailparser to say.
    return undefined;
  }
  const found = runs.map(() => -1);
  for (const [index, attachment] of parsed.attachments.entries()) {
    if (!Buffer.isBuffer(attachment.content) || attachment.content.length !== STAND_IN_BYTES) continue;
    const i = standIns.findIndex((s) => s.equals(attachment.content));
    if (i < 0) continue;
    if (found[i] !== -1) return undefined;
    found[i] = index;
  }
  if (found.includes(-1)) return undefined;
  found.forEach((index, i) => {
    const attachment = parsed.attachments[index] as Attachment;
    attachment.content = (runs[i] as Base64Run).content;
    attachment.size = attachment.content.length;
  });
  return parsed;
}

// ---------------------------------------------------------------------------------------------
// The simple message: what most machine-sent mail is, read without mailparser's streams.

/**
 * mailparser's own address parser (it bundles its own nodemailer, another version than ours), so
 * that an address field is taken apart exactly as mailparser takes it apart.
 */
const mailparserRequire = createRequire(createRequire(import.meta.url).resolve('mailparser'));
type ParsedAddress = { name: string; address?: string; group?: ParsedAddress[] };
const addressparser = mailparserRequire('nodemailer/lib/addressparser') as (value: string) => ParsedAddress[];

/** Bounds of the simple path; larger messages are rare and mailparser's streams suit them. */
const SIMPLE_MAX_BYTES = 256 * 1024;
const SIMPLE_MAX_HEADER_BYTES = 64 * 1024;
/** A field line: a field name (printable ASCII but the colon, no spaces) and its colon. */
const FIELD_LINE = /^[!-9;-~]+:/;
/** Content-Type of a simple message: plain text, in a charset mailparser reads as UTF-8 as it is, and nothing else. */
const SIMPLE_CONTENT_TYPE =
  /^text\/plain(?:[ \t]*;[ \t]*charset[ \t]*=[ \t]*(?:"(?:utf-8|utf8|us-ascii|ascii)"|(?:utf-8|utf8|us-ascii|ascii)))?$/i;
/** Content-Transfer-Encodings mailparser passes through untouched. */
const SIMPLE_TRANSFER_ENCODING = /^(?:7bit|8bit|binary)$/i;
/** The fields read here; each may appear at most once in a simple message. */
const SIMPLE_FIELDS = new Set([
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'subject',
  'from',
  'to',
  'cc',
  'reply-to',
  'message-id',
  'in-reply-to',
  'references',
]);

/** mailparser's `ensureMessageIDFormat`. */
const bracketed = (value: string): string | false =>
  value.length ? `${value.startsWith('<') ? '' : '<'}${value}${value.endsWith('>') ? '' : '>'}` : false;

/** mailparser's `decodeAddresses` for a field without encoded words and punycode: names trimmed. */
function trimmedAddresses(list: ParsedAddress[]): EmailAddress[] {
  for (const entry of list) {
    entry.name = (entry.name || '').toString().trim();
    if (entry.group) trimmedAddresses(entry.group);
  }
  return list as EmailAddress[];
}

/**
 * The fields mailparser would give for a simple message, or undefined for any other. Simple: at
 * most SIMPLE_MAX_BYTES; a header section of printable ASCII (and tabs) in CRLF lines, every one
 * a field line or its continuation, ended by an empty line; no encoded words (`=?`) and no
 * punycode (`xn--`) in it, so mailparser's decoding of words, charsets and domains has nothing to
 * do; none of the fields read here twice; a single text/plain part in UTF-8 or ASCII without a
 * transfer encoding and without a Content-Disposition. For these, mailparser's steps reduce to
 * what this does: unfold and trim a field, parse addresses with the same parser and trim their
 * names, bracket message ids, and read the body as UTF-8 with LF line ends.
 */
export function parseSimpleMessage(source: Buffer): ParsedFields | undefined {
  if (source.length > SIMPLE_MAX_BYTES) return undefined;
  const end = source.indexOf('\r\n\r\n');
  if (end <= 0 || end > SIMPLE_MAX_HEADER_BYTES) return undefined;
  for (let i = 0; i < end; i++) {
    const c = source[i] as number;
    if (c >= 0x20 && c <= 0x7e) continue;
    if (c === 0x09) continue;
    if (c === 0x0d && source[i + 1] === 0x0a) {
      i++;
      continue;
    }
    return undefined;
  }
  const head = source.toString('latin1', 0, end);
  if (head.includes('=?') || /xn--/i.test(head)) return undefined;
  const fields = new Map<string, string>();
  let current: string | undefined;
  let currentLine = '';
  const take = () => {
    if (current === undefined) return true;
    if (fields.has(current)) return false;
    // libmime's decodeHeader, as mailparser applies it: unfolded, the value after the first colon, trimmed.
    const line = currentLine.replace(/(?:\r?\n|\r)[ \t]*/g, ' ').trim();
    fields.set(current, (/^\s*([^:]+):(.*)$/.exec(line)?.[2] ?? '').trim());
    return true;
  };
  for (const line of head.split('\r\n')) {
    if (line.startsWith(' ') || line.startsWith('\t')) {
      if (!currentLine) return undefined;
      currentLine += `\r\n${line}`;
      continue;
    }
    if (!FIELD_LINE.test(line)) return undefined;
    if (!take()) return undefined;
    const name = line.slice(0, line.indexOf(':')).toLowerCase();
    current = SIMPLE_FIELDS.has(name) ? name : undefined;
    currentLine = line;
  }
  if (!take()) return undefined;

  const contentType = fields.get('content-type');
  if (contentType !== undefined && !SIMPLE_CONTENT_TYPE.test(contentType)) return undefined;
  const transferEncoding = fields.get('content-transfer-encoding');
  if (transferEncoding !== undefined && !SIMPLE_TRANSFER_ENCODING.test(transferEncoding)) return undefined;
  if (fields.has('content-disposition')) return undefined;

  const addresses = (key: string): AddressObject | undefined => {
    const value = fields.get(key);
    return value === undefined ? undefined : { value: trimmedAddresses(addressparser(value)), html: '', text: '' };
  };
  const messageId = (key: string): string | undefined => {
    const value = fields.get(key);
    return (value !== undefined && bracketed(value)) || undefined;
  };
  const references = fields.get('references');
  const text = source.toString('utf8', end + 4).replace(/\r?\n/g, '\n');
  return {
    headers: new Map(),
    subject: fields.get('subject') || undefined,
    references:
      references === undefined
        ? undefined
        : references
            .split(/\s+/)
            .map(bracketed)
            .filter((id): id is string => id !== false),
    from: addresses('from'),
    to: addresses('to'),
    cc: addresses('cc'),
    replyTo: addresses('reply-to'),
    messageId: messageId('message-id'),
    inReplyTo: messageId('in-reply-to'),
    html: false,
    text: text || undefined,
    attachments: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Delivery status notifications: the cheap test before parseDeliveryStatusNotification.

/** dsn.ts's STATUS_TYPE_MENTION: a report's body names its status part. */
const STATUS_TYPE_MENTION = /message\/(?:global-)?delivery-status/i;
/** Bytes before the `y-` of such a mention (`message/global-delivery`) and after it (`-status`). */
const MENTION_BEFORE = 'message/global-deliver'.length;
const MENTION_AFTER = '-status'.length;
const MAX_Y_DASH = 256;
const MAX_DASHES = 65_536;

/**
 * Whether `source` names a delivery status part anywhere (`message/delivery-status` or
 * `message/global-delivery-status`, in any case), which `parseDeliveryStatusNotification`
 * requires of a report's body: without one it answers undefined, so it need not run (it reads the
 * whole message as latin1 strings, twice). Found through the `y-` every
 * such mention holds (a case-insensitive JavaScript pattern matches only ASCII `y`/`Y` for `y`):
 * a native search for `-` (base64 has none), and each `y-` checked with the same pattern in a
 * window around it. True (let the parser decide) past MAX_DASHES `-` or MAX_Y_DASH `y-`, so that
 * a message full of them costs no more than the parser's own test.
 */
export function mentionsDeliveryStatus(source: Buffer): boolean {
  let dashes = 0;
  let hits = 0;
  for (let i = source.indexOf(0x2d); i >= 0; i = source.indexOf(0x2d, i + 1)) {
    // Past many `-` or `y-` (day-to-day …), true: the report parser then looks itself, at its linear cost.
    if (++dashes > MAX_DASHES) return true;
    if (((source[i - 1] ?? 0) | 0x20) !== 0x79) continue;
    if (++hits > MAX_Y_DASH) return true;
    if (STATUS_TYPE_MENTION.test(source.toString('latin1', Math.max(0, i - 1 - MENTION_BEFORE), i + MENTION_AFTER)))
      return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// The header section as bytes and fields.

/** Offset of the empty line that ends the header section (the whole buffer when there is none). */
export function headerSectionEnd(raw: Buffer): number {
  let i = 0;
  while (i < raw.length) {
    const nl = raw.indexOf(0x0a, i);
    if (nl < 0) return raw.length;
    const line = nl > i && raw[nl - 1] === 0x0d ? nl - 1 - i : nl - i;
    if (line === 0) return i;
    i = nl + 1;
  }
  return raw.length;
}

/** Header fields, each with its folded continuation lines and line endings. */
function splitFields(head: string): string[] {
  const fields: string[] = [];
  for (const line of head.split(/(?<=\n)/)) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && fields.length) fields[fields.length - 1] += line;
    else fields.push(line);
  }
  return fields;
}

function fieldName(field: string): string | undefined {
  const colon = field.indexOf(':');
  if (colon <= 0) return undefined;
  const name = field.slice(0, colon).trim();
  return /^[!-9;-~]+$/.test(name) ? name : undefined;
}

const unfold = (value: string) =>
  value
    .replace(/\r?\n(?=[ \t])/g, '')
    .replace(/\r?\n$/, '')
    .trim();

/**
 * The source without the fields we write ourselves: Return-Path (ours names the envelope sender;
 * Postfix drops incoming ones too) and Authentication-Results claiming our authserv-id (RFC 8601
 * §5: a receiver removes those, so that only its own verdict carries it).
 */
export function withoutOwnFields(source: Buffer, authservId: string): Buffer {
  const end = headerSectionEnd(source);
  const head = source.subarray(0, end).toString('latin1');
  if (!/^(authentication-results|return-path)[ \t]*:/im.test(head)) return source;
  const id = authservId.toLowerCase();
  const kept = splitFields(head).filter((field) => {
    const name = fieldName(field)?.toLowerCase();
    if (name === 'return-path') return false;
    if (name !== 'authentication-results') return true;
    const value = unfold(field.slice(field.indexOf(':') + 1)).replace(/\([^)]*\)/g, ' ');
    return (value.split(/[;\s]/).find((t) => t !== '') ?? '').toLowerCase() !== id;
  });
  return Buffer.concat([Buffer.from(kept.join(''), 'latin1'), source.subarray(end)]);
}

/**
 * Every field of the header section, as the wire carries it (unfolded, encoded words left as they
 * are), by the name's first spelling. A repeated field (Received, …) keeps every value, newest
 * first, one per line.
 */
export function headerRecord(raw: Buffer): Record<string, string> {
  const byKey = new Map<string, [string, string]>();
  for (const field of splitFields(raw.subarray(0, headerSectionEnd(raw)).toString('utf8'))) {
    const name = fieldName(field);
    if (name === undefined) continue;
    const value = unfold(field.slice(field.indexOf(':') + 1)).replace(CONTROL, '');
    const key = name.toLowerCase();
    const seen = byKey.get(key);
    if (seen) seen[1] += `\n${value}`;
    else byKey.set(key, [name, value]);
  }
  return Object.fromEntries(byKey.values());
}

export interface TraceInput {
  /** MAIL FROM, '' for the null sender. */
  readonly mailFrom: string;
  readonly recipients: readonly string[];
  readonly helo: string;
  readonly clientHostname: string;
  readonly remoteAddress: string;
  readonly hostname: string;
  /** ESMTP, ESMTPS, … (RFC 3848). */
  readonly protocol: string;
  readonly sessionId: string;
  readonly at: Date;
  /** Set when the message had no usable Message-ID: the one generated for it. */
  readonly generatedMessageId?: string;
  /** Received-SPF and Authentication-Results, when verification ran. */
  readonly authHeaders?: string;
}

/** RFC 5322 date-time in UTC (`Sat, 21 Nov 2026 11:25:31 +0000`). */
export function rfc5322Date(at: Date): string {
  return at.toUTCString().replace(/GMT$/, '+0000');
}

const headerSafe = (s: string) =>
  s
    .replace(CONTROL_ALL, '')
    .replace(/[()\\]/g, '')
    .slice(0, 255);

/**
 * What a final-delivery MTA prepends (RFC 5321 §4.4): Return-Path and a Received field; then our
 * authentication verdict, and a Message-ID when the message had none, so the stored source names
 * the id the API uses.
 */
export function traceHeaders(t: TraceInput): string {
  // An address literal as RFC 5321 §4.1.3 writes it: [192.0.2.1], [IPv6:2001:db8::1].
  const literal = `[${isIPv6(t.remoteAddress) ? 'IPv6:' : ''}${headerSafe(t.remoteAddress)}]`;
  const from = headerSafe(t.helo) || literal;
  const client =
    t.clientHostname && t.clientHostname !== `[${t.remoteAddress}]` ? `${headerSafe(t.clientHostname)} ` : '';
  // One recipient is named; several are not, so that no copy reveals the others (Bcc).
  const single = t.recipients.length === 1 ? `\r\n\tfor <${headerSafe(t.recipients[0] as string)}>` : '';
  const lines = [
    `Return-Path: <${headerSafe(t.mailFrom)}>\r\n`,
    `Received: from ${from} (${client}${literal})\r\n\tby ${t.hostname} with ${t.protocol} id ${t.sessionId}${single};\r\n\t${rfc5322Date(t.at)}\r\n`,
    t.authHeaders ?? '',
    t.generatedMessageId ? `Message-ID: ${t.generatedMessageId}\r\n` : '',
  ];
  return lines.join('');
}

// ---------------------------------------------------------------------------------------------
// Content: the fields of a stored message.

export interface InboundAttachment {
  readonly meta: Omit<AttachmentMeta, 'attachmentId'>;
  readonly content: Buffer;
}

export interface InboundContent {
  /** The id of the Message-ID header (angle brackets included; `messageIdKey`), null without one. */
  readonly messageId: string | null;
  /** The header's id was not usable as it is: `messageId` is its stand-in. */
  readonly messageIdReplaced: boolean;
  readonly from: string | null;
  readonly replyTo: string[];
  readonly to: string[];
  readonly cc: string[];
  readonly subject: string | null;
  readonly text: string | null;
  readonly html: string | null;
  readonly preview: string | null;
  readonly inReplyTo: string | null;
  readonly references: string[];
  readonly attachments: InboundAttachment[];
  /** A multipart message (only those can be delivery status notifications). */
  readonly multipart: boolean;
}

const clean = (s: string | undefined | null): string | null => {
  if (s === undefined || s === null) return null;
  const out = s.replace(NUL, '');
  return out === '' ? null : out;
};

function mailboxes(field: AddressObject | AddressObject[] | undefined): string[] {
  const out: string[] = [];
  for (const object of field === undefined ? [] : Array.isArray(field) ? field : [field]) {
    for (const entry of object.value ?? []) {
      // A group (`undisclosed-recipients:;` or named) contributes its members.
      for (const member of entry.group ?? [entry]) {
        const address = (member.address ?? '').replace(CONTROL_ALL, '').trim();
        if (!address) continue;
        out.push(formatMailbox({ name: (member.name ?? '').replace(CONTROL_ALL, ' ').trim(), address }));
      }
    }
  }
  return out;
}

/**
 * The id we key a Message-ID on: the id itself when usable, else a stable stand-in derived from
 * it (`<sha256-prefix@long-message-id.invalid>`). Ids are unique-indexed, and an unbounded one
 * (994 characters of UTF-8 are up to 4 kB) can exceed PostgreSQL's B-tree row limit, which would
 * answer 451 to the message forever; the stand-in keeps retries deduplicated and replies (In-Reply-To, References naming
 * the same id) threaded. The original stays in the stored source.
 */
export function messageIdKey(inner: string): string {
  return usableMessageId(inner)
    ? `<${inner}>`
    : `<${createHash('sha256').update(inner, 'utf8').digest('hex').slice(0, 40)}@long-message-id.invalid>`;
}

function messageIds(value: string | string[] | undefined): string[] {
  const text = Array.isArray(value) ? value.join(' ') : (value ?? '');
  return [...new Set(Array.from(text.matchAll(MESSAGE_ID), (m) => messageIdKey(m[1] as string)))];
}

/** A file name as a path-free, control-free string (a sender may write `../../x` or worse). */
function safeFilename(name: string | undefined): string | null {
  if (!name) return null;
  const base = name.replace(CONTROL_ALL, '').split(/[/\\]/).pop()?.trim() ?? '';
  return base === '' || base === '.' || base === '..' ? null : base.slice(0, 255);
}

function attachmentOf(a: Attachment): InboundAttachment {
  const contentId = a.cid
    ? a.cid
        .replace(/[^!-~]/g, '')
        .replace(/[<>"]/g, '')
        .slice(0, 255) || null
    : null;
  // An image the HTML shows (multipart/related) is inline even without a Content-Disposition.
  const contentDisposition: ContentDisposition =
    a.contentDisposition === 'inline' || (a.contentDisposition !== 'attachment' && a.related && contentId !== null)
      ? 'inline'
      : 'attachment';
  const content = Buffer.isBuffer(a.content) ? a.content : Buffer.from(a.content as string);
  return {
    meta: {
      filename: safeFilename(a.filename),
      size: content.length,
      contentType: (a.contentType || 'application/octet-stream').replace(CONTROL_ALL, '').slice(0, 255),
      contentDisposition,
      contentId,
    },
    content,
  };
}

function contentTypeOf(parsed: ParsedFields): string {
  const value = parsed.headers.get('content-type');
  return typeof value === 'object' && value !== null && 'value' in value
    ? String(value.value)
    : typeof value === 'string'
      ? value
      : '';
}

export function inboundContent(parsed: ParsedFields): InboundContent {
  const text = clean(parsed.text);
  const html = clean(parsed.html === false ? undefined : parsed.html);
  const headerId = new RegExp(MESSAGE_ID.source).exec(parsed.messageId ?? '')?.[1];
  const messageId = headerId === undefined ? null : messageIdKey(headerId);
  const [inReplyTo] = messageIds(parsed.inReplyTo);
  return {
    messageId,
    messageIdReplaced: messageId !== null && messageId !== `<${headerId}>`,
    from: mailboxes(parsed.from)[0] ?? null,
    replyTo: mailboxes(parsed.replyTo),
    to: mailboxes(parsed.to),
    cc: mailboxes(parsed.cc),
    subject: clean(parsed.subject?.replace(CONTROL_ALL, ' ')),
    text,
    html,
    preview: previewOf(text, html),
    inReplyTo: inReplyTo ?? null,
    references: messageIds(parsed.references).slice(-MAX_REFERENCES),
    attachments: parsed.attachments.map(attachmentOf),
    multipart: /^multipart\//i.test(contentTypeOf(parsed)),
  };
}
