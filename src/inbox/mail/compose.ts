import { Readable } from 'node:stream';
import { domainToASCII, domainToUnicode } from 'node:url';
import type MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { detectMimeType } from 'nodemailer/lib/mime-funcs/index.js';
import { piecesOf, sendPieces, type PiecesChannel } from '../../platform/workers/pieces.js';
import { ownBuffer } from '../../platform/workers/tasks.js';
import { inboxPool, OFFLOAD_COMPOSE_BYTES } from '../offload.js';
import { domainKey } from './domains.js';

/**
 * Mail knowledge without I/O: address syntax, RFC 5322/MIME composition (nodemailer's
 * MailComposer), and the derived texts a message carries (preview, new content without quotes).
 */

export interface Mailbox {
  /** Display name, '' when there is none. */
  readonly name: string;
  readonly address: string;
}

const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
// Control characters (C0, DEL, C1) and the line and paragraph separators.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** A bare address `local@domain` (dot-atom local part, LDH domain labels, at most 254 characters). */
export function isValidAddress(address: string, singleLabelDomains: readonly string[] = []): boolean {
  if (address.length > 254) return false;
  const at = address.lastIndexOf('@');
  if (at <= 0) return false;
  const local = address.slice(0, at);
  let domain = address.slice(at + 1);
  if (local.length > 64 || !LOCAL_PART.test(local)) return false;
  // An internationalized domain is checked in its ASCII (xn--) form, as DNS and SMTP carry it.
  if (!/^[\x21-\x7e]*$/.test(domain)) {
    domain = domainToASCII(domain.toLowerCase());
    if (!domain) return false;
    // Labels neither begin nor end with a hyphen in their Unicode form either (the conversion
    // alone lets `-ü` pass, and UTS 46 takes 。．｡ as dots, so the labels are read after it).
    if (
      domainToUnicode(domain)
        .split('.')
        .some((l) => l.startsWith('-') || l.endsWith('-'))
    )
      return false;
  }
  if (domain.length > 253) return false;
  const labels = domain.split('.');
  if (!labels.every((l) => DOMAIN_LABEL.test(l))) return false;
  // A public domain has at least two labels and a non-numeric top-level label.
  if (labels.length === 1) return singleLabelDomains.includes(domain.toLowerCase());
  return !/^\d+$/.test(labels[labels.length - 1] as string);
}

/**
 * A valid address with an internationalized domain in its one Unicode spelling (lower case, UTS 46
 * mapped: fullwidth `ｉｎｂｏｘ.test` is `inbox.test`), so that what is stored and shown is the
 * domain the mail goes to; ASCII addresses are returned as they are.
 */
function canonicalDomain(address: string): string {
  const at = address.lastIndexOf('@');
  const domain = address.slice(at + 1);
  if (/^[\x21-\x7e]*$/.test(domain)) return address;
  return `${address.slice(0, at)}@${domainToUnicode(domainKey(domain))}`;
}

/**
 * One mailbox: `addr`, `<addr>`, `Name <addr>` or `"Quoted, Name" <addr>`. Returns undefined for
 * anything else, including control characters anywhere.
 */
export function parseMailbox(input: string, singleLabelDomains: readonly string[] = []): Mailbox | undefined {
  const s = input.trim();
  if (!s || CONTROL.test(s)) return undefined;
  let name = '';
  let address: string;
  if (s.endsWith('>')) {
    const open = s.lastIndexOf('<');
    if (open < 0) return undefined;
    address = s.slice(open + 1, -1).trim();
    const phrase = s.slice(0, open).trim();
    if (phrase.startsWith('"')) {
      const m = /^"((?:[^"\\]|\\.)*)"$/.exec(phrase);
      if (!m) return undefined;
      name = (m[1] as string).replace(/\\(.)/g, '$1');
    } else {
      if (/[<>"]/.test(phrase)) return undefined;
      name = phrase;
    }
  } else {
    address = s;
  }
  if (name.length > 255 || !isValidAddress(address, singleLabelDomains)) return undefined;
  return { name: name.trim(), address: canonicalDomain(address) };
}

/**
 * An address list as one string: mailboxes separated by commas outside quotes and angle brackets.
 * Returns the non-empty pieces, to be parsed one by one.
 */
export function splitAddressList(input: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  let angle = false;
  for (let i = 0; i < input.length; i++) {
    const c = input[i] as string;
    if (quoted && c === '\\' && i + 1 < input.length) {
      current += c + (input[++i] as string);
      continue;
    }
    if (c === '"' && !angle) quoted = !quoted;
    else if (c === '<' && !quoted) angle = true;
    else if (c === '>' && !quoted) angle = false;
    if ((c === ',' || c === ';') && !quoted && !angle) {
      parts.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** `addr`, or `Name <addr>` with the name quoted when it holds RFC 5322 specials. */
export function formatMailbox(mailbox: Mailbox): string {
  if (!mailbox.name) return mailbox.address;
  const name = /[()<>[\]:;@\\,."]/.test(mailbox.name) ? `"${mailbox.name.replace(/(["\\])/g, '\\$1')}"` : mailbox.name;
  return `${name} <${mailbox.address}>`;
}

/** The bare address of a formatted mailbox (`Name <a@b>` → `a@b`). */
export function addressOf(formatted: string): string {
  const m = /<([^<>]*)>\s*$/.exec(formatted);
  return (m ? (m[1] as string) : formatted).trim();
}

// A media type with parameters; no line breaks or other control characters, even quoted.
const MEDIA_TYPE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}([ \t]*;[ \t]*[a-z0-9!#$&^_.+-]+=("[^"\\\u0000-\u001f\u007f]*"|[a-z0-9!#$&^_.+-]+))*$/i;

/** Whether `value` is a media type (with parameters) that may go into a Content-Type header as it is. */
export function isMediaType(value: string): boolean {
  return value.length <= 255 && MEDIA_TYPE.test(value);
}

/** The media type nodemailer would give a file of this name (application/octet-stream if unknown). */
export function mediaTypeOf(filename: string | undefined): string {
  return filename ? detectMimeType(filename) : 'application/octet-stream';
}

export interface ComposeAttachment {
  readonly filename: string | null;
  readonly contentType: string;
  readonly contentDisposition: 'attachment' | 'inline';
  readonly contentId: string | null;
  readonly content: Buffer;
}

export interface ComposeInput {
  readonly messageId: string;
  readonly date: Date;
  readonly from: Mailbox;
  readonly to: readonly Mailbox[];
  readonly cc: readonly Mailbox[];
  readonly replyTo: readonly Mailbox[];
  readonly subject: string | null;
  readonly text: string | null;
  readonly html: string | null;
  readonly inReplyTo: string | null;
  readonly references: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly attachments: readonly ComposeAttachment[];
  /** The shared part of multipart boundaries: given, the same input composes to the same bytes (random otherwise). */
  readonly baseBoundary?: string;
}

/** Pieces of a large source as composeMessage gathers them (the delivery takes them in its blobs' pieces instead). */
const LARGE_SOURCE_PIECE_BYTES = 256 * 1024;

/**
 * The RFC 5322 source of a message, as it goes over the wire. Bcc is never part of it (the
 * envelope carries those recipients), so every stored copy can share these bytes. A large message
 * is composed in a worker thread (`offload.ts`), so that its encoding does not stall other requests.
 */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const source = await composeSource(input, LARGE_SOURCE_PIECE_BYTES);
  if (Buffer.isBuffer(source)) return source;
  const pieces: Buffer[] = [];
  for await (const piece of source) pieces.push(piece);
  return Buffer.concat(pieces);
}

/**
 * The source of a message as composeMessage makes it: whole when small, and when large in pieces
 * of `pieceBytes` (the last shorter) as a worker thread composes it, so that neither thread holds
 * the whole source (docs/decisions/0030-large-sources-composed-into-blobs.md). Take the pieces
 * without awaiting anything that needs the inbox's worker pool (platform/workers/pieces.ts).
 * Attachment contents for which `move` holds, and that own their ArrayBuffer, are moved to the
 * thread when the first piece is asked for, not copied: they are empty from then on.
 */
export async function composeSource(
  input: ComposeInput,
  pieceBytes: number,
  move: (content: Buffer) => boolean = () => false,
): Promise<Buffer | AsyncIterable<Buffer>> {
  const plain = composePlainText(input);
  if (plain) return plain;
  const size =
    (input.text?.length ?? 0) + (input.html?.length ?? 0) + input.attachments.reduce((n, a) => n + a.content.length, 0);
  if (size < OFFLOAD_COMPOSE_BYTES) return composeWithNodemailer(input);
  // Moving a buffer empties every view of it: never one that an attachment kept here also uses.
  const kept = new Set(input.attachments.filter((a) => !move(a.content)).map((a) => a.content.buffer));
  const moved = new Set(
    input.attachments
      .flatMap((a) => (move(a.content) ? [ownBuffer(a.content)] : []))
      .filter((b): b is ArrayBuffer => b !== undefined && !kept.has(b)),
  );
  return piecesOf(inboxPool(), 'compose', { input }, pieceBytes, [...moved]);
}

/** nodemailer's MailComposer, loaded with the first message the shortcut does not compose (not at start). */
let mailComposer: Promise<typeof MailComposer> | undefined;

/** composeMessage through nodemailer's MailComposer, for every shape of message. */
export async function composeWithNodemailer(input: ComposeInput): Promise<Buffer> {
  return (await composer(input, false)).compile().build();
}

/**
 * composeWithNodemailer's bytes, sent in pieces on `channel` as nodemailer writes them (the
 * worker thread's half of composeSource). Attachments that nodemailer encodes in base64 whatever
 * their content reach it in slices, so that it encodes them a slice at a time too.
 */
export async function composeInPieces(input: ComposeInput, channel: PiecesChannel): Promise<number> {
  return sendPieces(channel, (await composer(input, true)).compile().createReadStream());
}

/** Attachment bytes handed to nodemailer per slice: a multiple of 3, so every slice is whole base64. */
const ATTACHMENT_SLICE_BYTES = 48 * 1024;

/**
 * Whether nodemailer encodes an attachment of this type in base64 whatever its content: it
 * chooses a text's encoding from the text itself (and for a stream, whose content it cannot see,
 * differently), and writes multipart and message parts as they are.
 */
const alwaysBase64 = (contentType: string) => !/^(text|multipart|message)\//i.test(contentType);

/** A Readable of `bytes` in slices of ATTACHMENT_SLICE_BYTES (views, not copies). */
function inSlices(bytes: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += ATTACHMENT_SLICE_BYTES)
        yield bytes.subarray(at, at + ATTACHMENT_SLICE_BYTES);
    })(),
    { objectMode: false },
  );
}

/** A MailComposer for `input`; with `sliced`, attachments nodemailer always encodes in base64 are given as streams of slices. */
async function composer(input: ComposeInput, sliced: boolean): Promise<MailComposer> {
  const mailbox = (m: Mailbox) => ({ name: m.name, address: m.address });
  const Composer = await (mailComposer ??= import('nodemailer/lib/mail-composer/index.js').then((m) => m.default));
  return new Composer({
    messageId: input.messageId,
    date: input.date,
    from: mailbox(input.from),
    to: input.to.map(mailbox),
    ...(input.cc.length ? { cc: input.cc.map(mailbox) } : {}),
    ...(input.replyTo.length ? { replyTo: input.replyTo.map(mailbox) } : {}),
    subject: input.subject ?? '',
    ...(input.text !== null ? { text: input.text } : {}),
    ...(input.html !== null ? { html: input.html } : {}),
    ...(input.inReplyTo ? { inReplyTo: input.inReplyTo } : {}),
    ...(input.references.length ? { references: [...input.references] } : {}),
    headers: { ...input.headers },
    ...(input.baseBoundary ? { baseBoundary: input.baseBoundary } : {}),
    attachments: input.attachments.map((a) => ({
      content: sliced && alwaysBase64(a.contentType) ? inSlices(a.content) : a.content,
      contentType: a.contentType,
      contentDisposition: a.contentDisposition,
      ...(a.filename !== null ? { filename: a.filename } : { filename: false as const }),
      ...(a.contentId !== null ? { cid: a.contentId } : {}),
    })),
  });
}

// What nodemailer writes as is: printable ASCII names of word characters and single spaces,
// printable ASCII subjects and addresses, and text whose lines fit 76 characters (7bit).
/** A display name nodemailer writes unquoted: word characters and single spaces. */
const PLAIN_NAME = /^(?:\w+(?: \w+)*)?$/;
/** Printable ASCII, no space at either end. */
const PLAIN_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
/** Printable ASCII without a quote or what looks like an encoded word: what nodemailer does not encode. */
const isPlainValue = (value: string) => PLAIN_VALUE.test(value) && !value.includes('"') && !value.includes('=?');
/** nodemailer lower-cases the domain: a domain with capitals goes the long way. */
const PLAIN_ADDRESS = /^[\x21-\x7e]+@[a-z0-9.-]+$/;
/** Text nodemailer sends as 7bit: printable ASCII, tabs and line breaks… */
const PLAIN_TEXT = /^[\t\n\r\x20-\x7e]*$/;
/** …in lines of at most 76 characters. */
const LONG_LINE = /^.{77,}/m;
/** Longest header line nodemailer leaves unfolded. */
const HEADER_LINE = 75;
/** Longer texts go the long way (composed in a worker thread when large). */
const PLAIN_TEXT_MAX = 64 * 1024;

/**
 * The source of the most common send, a short ASCII text with no extras, written directly: the
 * bytes MailComposer writes for it (compose.test.ts compares the two over many such inputs),
 * without building a MIME tree (decision 0007; the figures are in bench/README.md). Undefined for
 * anything else.
 */
export function composePlainText(input: ComposeInput): Buffer | undefined {
  const text = input.text;
  if (
    text === null ||
    text === '' ||
    input.html !== null ||
    input.attachments.length ||
    input.cc.length ||
    input.replyTo.length
  )
    return undefined;
  if (input.inReplyTo || input.references.length) return undefined;
  for (const _ in input.headers) return undefined;
  if (text.length > PLAIN_TEXT_MAX || !PLAIN_TEXT.test(text) || LONG_LINE.test(text)) return undefined;
  const subject = input.subject ?? '';
  if (subject !== '' && !isPlainValue(subject)) return undefined;
  // nodemailer brackets a bare id; only a bracketed one is written as it is.
  if (
    !isPlainValue(input.messageId) ||
    !input.messageId.startsWith('<') ||
    !input.messageId.endsWith('>') ||
    !input.to.length
  )
    return undefined;
  let from: string | undefined;
  const to: string[] = [];
  for (const m of [input.from, ...input.to]) {
    if (
      !PLAIN_NAME.test(m.name) ||
      !PLAIN_ADDRESS.test(m.address) ||
      m.address.includes('<') ||
      m.address.includes('>')
    )
      return undefined;
    const formatted = m.name ? `${m.name} <${m.address}>` : m.address;
    if (from === undefined) from = formatted;
    else if (to.includes(formatted)) return undefined;
    else to.push(formatted);
  }
  const lines = [
    `From: ${from as string}`,
    `To: ${to.join(', ')}`,
    ...(subject ? [`Subject: ${subject}`] : []),
    `Message-ID: ${input.messageId}`,
  ];
  for (const line of lines) if (line.length > HEADER_LINE) return undefined;
  lines.push(
    `Date: ${input.date.toUTCString().replace(/GMT/, '+0000')}`,
    'Content-Transfer-Encoding: 7bit',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
  );
  const last = text.charCodeAt(text.length - 1);
  return Buffer.from(
    `${lines.join('\r\n')}\r\n\r\n${text}${last === 0x0a ? '' : last === 0x0d ? '\n' : '\r\n'}`,
    'latin1',
  );
}

const PREVIEW_LENGTH = 200;

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Visible text of an HTML body, roughly: no scripts, styles or tags; common entities decoded. */
export function htmlToPlainText(html: string): string {
  return shownText(withoutHidden(html));
}

/** The HTML without its script, style and head blocks. */
const withoutHidden = (html: string) => html.replace(/<(script|style|head)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, ' ');

/** The text of HTML without hidden blocks: line breaks for breaks and block ends, entities decoded. */
function shownText(html: string): string {
  return html
    .replace(/<br\s*\/?>|<\/(p|div|li|tr|h[1-6])\s*>/gi, '\n')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, e: string) => {
      if (e[0] === '#') {
        const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      }
      return ENTITIES[e.toLowerCase()] ?? whole;
    });
}

/**
 * The first 200 characters of the text (or the HTML's text), whitespace collapsed: the first 200
 * code points of `source.replace(/\s+/g, ' ').trim()`, read only as far as they reach (a text of
 * megabytes costs what its first words cost).
 */
export function previewOf(text: string | null, html: string | null): string | null {
  const preview = text?.trim() ? collapsedPrefix(text, PREVIEW_LENGTH) : html ? htmlPreview(html) : '';
  return preview || null;
}

function collapsedPrefix(source: string, limit: number): string {
  const word = /\S+/g;
  let out = '';
  let count = 0;
  for (let m = word.exec(source); m && count < limit; m = word.exec(source)) {
    if (count) {
      out += ' ';
      if (++count === limit) break;
    }
    // At most `limit - count` code points of the word, from at most twice as many UTF-16 units.
    const chars = Array.from(m[0].slice(0, 2 * (limit - count))).slice(0, limit - count);
    out += chars.join('');
    count += chars.length;
  }
  return out;
}

const HIDDEN_OPEN = /<(script|style|head)\b[^>]*>/gi;

/**
 * The preview of an HTML body, from a prefix of the HTML that ends before any hidden block
 * (script, style, head), tag or entity it would cut, when that prefix yields more than the
 * preview (the rest cannot change it then); otherwise from a longer one, up to the whole HTML.
 */
function htmlPreview(html: string): string {
  for (let length = 16 * 1024; length < html.length; length *= 4) {
    let head = html.slice(0, length);
    // A hidden block that does not close before the cut.
    HIDDEN_OPEN.lastIndex = 0;
    for (let m = HIDDEN_OPEN.exec(head); m; m = HIDDEN_OPEN.exec(head)) {
      const close = new RegExp(`<\\/${m[1] as string}\\s*>`, 'gi');
      close.lastIndex = m.index + m[0].length;
      const end = close.exec(head);
      if (!end) {
        head = head.slice(0, m.index);
        break;
      }
      HIDDEN_OPEN.lastIndex = end.index + end[0].length;
    }
    let shown = withoutHidden(head);
    // A tag open at the cut.
    const lt = shown.lastIndexOf('<');
    if (lt > shown.lastIndexOf('>')) shown = shown.slice(0, lt);
    // An entity cut in two.
    const partial = /&[#a-z0-9]*$/i.exec(shown);
    if (partial) shown = shown.slice(0, partial.index);
    const preview = Array.from(collapsedPrefix(shownText(shown), PREVIEW_LENGTH + 1));
    if (preview.length > PREVIEW_LENGTH) return preview.slice(0, PREVIEW_LENGTH).join('');
  }
  return collapsedPrefix(htmlToPlainText(html), PREVIEW_LENGTH);
}

const QUOTE_INTRO = /^(On\b.{0,300}\bwrote:|-{2,}\s*Original Message\s*-{2,}|_{5,})\s*$/im;

/**
 * The new content of a plain-text reply: everything before the quoted history ("On … wrote:",
 * "-----Original Message-----", or a trailing block of `>` lines).
 */
export function extractNewText(text: string): string {
  let cut = text.length;
  const intro = QUOTE_INTRO.exec(text);
  if (intro) cut = intro.index;
  const lines = text.slice(0, cut).split('\n');
  while (lines.length && /^\s*(>.*)?$/.test(lines[lines.length - 1] as string)) lines.pop();
  const result = lines.join('\n').trimEnd();
  return result || text;
}

const HTML_QUOTE = /<(div|blockquote)\b[^>]*(class="[^"]*\b(gmail_quote|moz-cite-prefix)\b[^"]*"|type="cite")[^>]*>/i;

/** The new content of an HTML reply: everything before the first quote container. */
export function extractNewHtml(html: string): string {
  const m = HTML_QUOTE.exec(html);
  if (!m || m.index === 0) return html;
  return html.slice(0, m.index).trimEnd();
}

/** The subject of a reply: `Re: ` once in front of the original subject. */
export function replySubject(subject: string | null): string {
  const s = (subject ?? '').trim();
  return /^re:/i.test(s) ? s : `Re: ${s}`.trimEnd();
}

export function forwardSubject(subject: string | null): string {
  const s = (subject ?? '').trim();
  return /^fwd?:/i.test(s) ? s : `Fwd: ${s}`.trimEnd();
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The forwarded-message block that mail clients put under a forward (Gmail's wording, which
 * other clients and parsers recognise), as text and as HTML.
 */
export function forwardedBlock(original: {
  from: string;
  timestamp: string;
  subject: string | null;
  to: readonly string[];
  cc: readonly string[];
  text: string | null;
  html: string | null;
}): { text: string; html: string } {
  const fields: [string, string][] = [
    ['From', original.from],
    ['Date', new Date(original.timestamp).toUTCString()],
    ['Subject', original.subject ?? ''],
    ['To', original.to.join(', ')],
    ...(original.cc.length ? [['Cc', original.cc.join(', ')] as [string, string]] : []),
  ];
  const heading = '---------- Forwarded message ---------';
  const body = original.text ?? (original.html !== null ? htmlToPlainText(original.html) : '');
  const text = [heading, ...fields.map(([k, v]) => `${k}: ${v}`), '', body].join('\n');
  const htmlBody = original.html ?? `<pre>${escapeHtml(body)}</pre>`;
  const html = `<div class="forwarded">${heading}<br>${fields.map(([k, v]) => `${k}: ${escapeHtml(v)}<br>`).join('')}<br>${htmlBody}</div>`;
  return { text, html };
}

const REPLY_PREFIX = /(?:re|fwd?|aw|wg|sv|vs)\s*(?:\[\d+\]\s*)?:\s*/iy;

/** The subject without reply and forward prefixes, lower-cased: for grouping and search. */
export function normalizeSubject(subject: string | null): string | null {
  if (subject === null) return null;
  const s = subject.trim();
  // One pass over the prefixes, each matched where the last ended: linear in the subject's length
  // (no whitespace run is tried twice; inbound subjects can be megabytes long).
  let at = 0;
  for (;;) {
    REPLY_PREFIX.lastIndex = at;
    if (!REPLY_PREFIX.test(s)) break;
    at = REPLY_PREFIX.lastIndex;
  }
  return s.slice(at).toLowerCase();
}

/** Characters of a normalized subject that threads store and index (`threads_subject`, migration 0004). */
export const SUBJECT_KEY_CHARS = 255;

/**
 * A normalized subject cut to SUBJECT_KEY_CHARS characters (code points, as SQLite and PostgreSQL
 * count them): what a thread stores and the subject fallback looks up. An unbounded key could
 * exceed PostgreSQL's B-tree row limit and fail every insert of that message.
 */
export function subjectKey(normalized: string | null): string | null {
  if (normalized === null || normalized.length <= SUBJECT_KEY_CHARS) return normalized;
  let end = 0;
  for (let n = 0; n < SUBJECT_KEY_CHARS && end < normalized.length; n++)
    end += (normalized.codePointAt(end) as number) > 0xffff ? 2 : 1;
  return normalized.slice(0, end);
}
