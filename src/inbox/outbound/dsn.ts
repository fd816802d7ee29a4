import type { Clock } from '../../platform/clock.js';
import type { Db } from '../schema/database.js';
import type { EventService } from '../events/event.service.js';
import { addressOf, splitAddressList } from '../mail/compose.js';
import { domainOf, localDomainSet } from '../mail/domains.js';
import { findMessageCopies, type OutboundMessage } from './outbound.repository.js';
import { bouncedEvents, type BouncedRecipient } from '../core/message-events.js';

/**
 * Delivery status notifications (RFC 3464): the reports a remote MTA mails back to the envelope
 * sender when a message the relay took fails later. They are matched to the sender's copy by the
 * ENVID we passed with the envelope (RFC 3461), else by the Message-ID of the returned headers,
 * and become message.bounced events. Only the standard multipart/report form is understood
 * (also its SMTPUTF8 variant, RFC 6533); free-text bounces of old MTAs are ordinary mail.
 */

export interface DsnRecipient {
  /** Final-Recipient. */
  readonly address: string;
  /** Original-Recipient (the ORCPT we passed), when given. */
  readonly originalAddress: string | undefined;
  /** `failed`, `delayed`, `delivered`, `relayed` or `expanded`. */
  readonly action: string;
  readonly status: string | undefined;
  readonly diagnosticCode: string | undefined;
}

export interface DeliveryStatusNotification {
  /** Original-Envelope-Id, xtext-decoded. */
  readonly envelopeId: string | undefined;
  readonly reportingMta: string | undefined;
  /** Message-ID of the returned headers or message. */
  readonly originalMessageId: string | undefined;
  /** Bare address of the returned From. */
  readonly originalFrom: string | undefined;
  /** Bare addresses the report itself is addressed to (its To): the original envelope sender. */
  readonly notified: readonly string[];
  readonly recipients: readonly DsnRecipient[];
}

// ---------------------------------------------------------------------------------------------
// ENVID: the Message-ID without its brackets, when it fits RFC 3461's 100 characters as is.

const ENVID = /^[!-*,-<>-~]{1,100}$/; // printable ASCII without '+' and '=', which xtext would escape

export function envelopeIdFor(messageId: string): string | undefined {
  const bare = messageId.replace(/^<(.*)>$/, '$1');
  return ENVID.test(bare) ? bare : undefined;
}

// A NUL names nothing we store (PostgreSQL text cannot hold one, and a query naming one fails
// there while SQLite answers nothing): dropped from every value read from a report, decoded or not.
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const NUL = /\u0000/g;

const xtextDecode = (value: string) =>
  value.replace(/\+([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))).replace(NUL, '');

// ---------------------------------------------------------------------------------------------
// Just enough MIME: header blocks, multipart bodies, transfer encodings. Bytes are handled as
// latin1 strings, whose indices are byte offsets.

type Headers = Map<string, string[]>;

interface Entity {
  readonly headers: Headers;
  readonly body: Buffer;
}

const MAX_DEPTH = 4;
/**
 * Bounds of what a report may make us read: the status part (a real one is a few KiB even for
 * hundreds of recipients), the returned headers, the recipient groups, and any header value we
 * take apart. Past them the report is read as far as the bound (the rest is ignored).
 */
export const MAX_STATUS_BYTES = 64 * 1024;
const MAX_RETURNED_HEADER_BYTES = 64 * 1024;
export const MAX_RECIPIENT_GROUPS = 1000;
const MAX_FIELD_CHARS = 4096;

/** Linear in the length of `text`, however many fields repeat one name. */
function parseHeaders(text: string): Headers {
  const headers: Headers = new Map();
  for (const line of text.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line
      .slice(colon + 1)
      .replace(NUL, '')
      .trim();
    const values = headers.get(name);
    if (values) values.push(value);
    else headers.set(name, [value]);
  }
  return headers;
}

const first = (headers: Headers, name: string): string | undefined => headers.get(name)?.[0]?.slice(0, MAX_FIELD_CHARS);

function splitEntity(bytes: Buffer): Entity {
  const text = bytes.toString('latin1');
  if (/^\r?\n/.test(text)) return { headers: new Map(), body: bytes.subarray(text.startsWith('\r\n') ? 2 : 1) };
  const end = /\r?\n\r?\n/.exec(text);
  if (!end) return { headers: parseHeaders(text), body: Buffer.alloc(0) };
  return { headers: parseHeaders(text.slice(0, end.index)), body: bytes.subarray(end.index + end[0].length) };
}

function contentTypeOf(headers: Headers): { type: string; params: Map<string, string> } {
  const value = first(headers, 'content-type') ?? 'text/plain';
  const params = new Map<string, string>();
  for (const m of value.matchAll(/;\s*([^=\s;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/g))
    params.set((m[1] as string).toLowerCase(), m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? ''));
  return { type: (value.split(';')[0] as string).trim().toLowerCase(), params };
}

/** The decoded body, from at most the first `limit` bytes of the encoded one. */
function decodeBody(entity: Entity, limit: number): Buffer {
  const encoding = (first(entity.headers, 'content-transfer-encoding') ?? '').toLowerCase();
  const body = entity.body.subarray(0, limit);
  const text = body.toString('latin1');
  if (encoding === 'base64') return Buffer.from(text.replace(/[^A-Za-z0-9+/]/g, ''), 'base64');
  if (encoding === 'quoted-printable')
    return Buffer.from(
      text
        .replace(/=\r?\n/g, '')
        .replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      'latin1',
    );
  return body;
}

function multipartParts(entity: Entity, boundary: string): Entity[] {
  const text = entity.body.toString('latin1');
  const escaped = boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const delimiter = new RegExp(`(?:^|\\r?\\n)--${escaped}(--)?[ \\t]*(?=\\r?\\n|$)\\r?\\n?`, 'g');
  const parts: Entity[] = [];
  let start: number | undefined;
  for (const m of text.matchAll(delimiter)) {
    if (start !== undefined) parts.push(splitEntity(entity.body.subarray(start, m.index)));
    if (m[1]) break;
    start = (m.index as number) + m[0].length;
  }
  return parts;
}

/** The parts of the first multipart/report of delivery status, top level or nested (forwarded, wrapped). */
function findReport(entity: Entity, depth = 0): Entity[] | undefined {
  const { type, params } = contentTypeOf(entity.headers);
  if (!type.startsWith('multipart/') || depth > MAX_DEPTH) return undefined;
  const boundary = params.get('boundary');
  if (!boundary) return undefined;
  const parts = multipartParts(entity, boundary);
  const reportType = params.get('report-type')?.toLowerCase();
  if (type === 'multipart/report' && (reportType === 'delivery-status' || reportType === 'global-delivery-status'))
    return parts;
  for (const part of parts) {
    const found = findReport(part, depth + 1);
    if (found) return found;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------

const STATUS_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);
const HEADER_TYPES = new Set(['text/rfc822-headers', 'message/global-headers']);
const MESSAGE_TYPES = new Set(['message/rfc822', 'message/global']);

/** `rfc822; a@b` → `a@b` (also without the type, and with angle brackets). */
function addressField(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const address = (value.includes(';') ? value.slice(value.indexOf(';') + 1) : value).trim().replace(/^<(.*)>$/, '$1');
  return address || undefined;
}

function bareAddresses(value: string | undefined): string[] {
  if (!value) return [];
  // Comments, as in `MAILER-DAEMON@host (Mail Delivery System)`, are not part of an address.
  return splitAddressList(value.replace(/\([^()]*\)/g, ''))
    .map((e) => addressOf(e).toLowerCase())
    .filter((a) => a.includes('@'));
}

function parseStatusGroups(text: string): { perMessage: Headers; perRecipient: Headers[] } {
  const groups = text
    .replace(/\r\n/g, '\n')
    .split(/\n[ \t]*\n/, MAX_RECIPIENT_GROUPS + 1)
    .map((g) => g.trim())
    .filter(Boolean)
    .map(parseHeaders);
  const isRecipient = (g: Headers) => g.has('final-recipient') || g.has('original-recipient');
  return { perMessage: groups.find((g) => !isRecipient(g)) ?? new Map(), perRecipient: groups.filter(isRecipient) };
}

function recipientOf(group: Headers): DsnRecipient | undefined {
  const address = addressField(first(group, 'final-recipient')) ?? addressField(first(group, 'original-recipient'));
  if (!address) return undefined;
  const original = addressField(first(group, 'original-recipient'));
  return {
    address,
    originalAddress: original === undefined ? undefined : xtextDecode(original),
    action: (first(group, 'action') ?? '').toLowerCase(),
    status: /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(first(group, 'status') ?? '')?.[1],
    diagnosticCode: first(group, 'diagnostic-code')?.slice(0, 1000),
  };
}

/** A report names its status part's type somewhere; mail that does not is no report (a cheap scan). */
const STATUS_TYPE_MENTION = /message\/(?:global-)?delivery-status/i;

/**
 * The report in `raw`, or undefined when it is not a delivery status notification. Linear in the
 * size of `raw`, and only a multipart that names a status part is taken apart at all: call it
 * once per message, outside any transaction (the inbound pipeline does, before its commit).
 */
export function parseDeliveryStatusNotification(raw: Buffer): DeliveryStatusNotification | undefined {
  const top = splitEntity(raw);
  if (!contentTypeOf(top.headers).type.startsWith('multipart/')) return undefined;
  if (!STATUS_TYPE_MENTION.test(top.body.toString('latin1'))) return undefined;
  const parts = findReport(top);
  const statusPart = parts?.find((p) => STATUS_TYPES.has(contentTypeOf(p.headers).type));
  if (!parts || !statusPart) return undefined;
  const { perMessage, perRecipient } = parseStatusGroups(decodeBody(statusPart, MAX_STATUS_BYTES).toString('utf8'));
  let returned: Headers | undefined;
  for (const part of parts) {
    const type = contentTypeOf(part.headers).type;
    if (HEADER_TYPES.has(type)) returned = parseHeaders(decodeBody(part, MAX_RETURNED_HEADER_BYTES).toString('utf8'));
    else if (MESSAGE_TYPES.has(type)) returned = splitEntity(decodeBody(part, MAX_RETURNED_HEADER_BYTES)).headers;
    if (returned) break;
  }
  const envid = first(perMessage, 'original-envelope-id');
  const messageId = returned && first(returned, 'message-id');
  return {
    envelopeId: envid ? xtextDecode(envid.trim()) : undefined,
    reportingMta: addressField(first(perMessage, 'reporting-mta')),
    originalMessageId: messageId ? (/<[^<>]+>/.exec(messageId)?.[0] ?? `<${messageId.trim()}>`) : undefined,
    originalFrom: returned ? bareAddresses(first(returned, 'from'))[0] : undefined,
    notified: bareAddresses(first(top.headers, 'to')),
    recipients: perRecipient.map(recipientOf).filter((r): r is DsnRecipient => r !== undefined),
  };
}

// ---------------------------------------------------------------------------------------------

export interface DsnDeps {
  readonly events: EventService;
  readonly clock: Clock;
  /**
   * INBOX_DOMAINS. Recipients on them were delivered locally, never through the relay, so a report
   * cannot be about them: they are not bounced (a forged report could otherwise bounce them).
   */
  readonly localDomains?: readonly string[];
}

export interface DsnOptions {
  /**
   * The inbox the report was delivered to (the RCPT of the inbound session). When given, only a
   * message this inbox sent matches: a report mailed to one inbox cannot bounce another's mail.
   */
  readonly inboxId?: string;
}

/** The sender's copy of the message the report is about, if we sent it. */
async function findOriginal(
  trx: Db,
  dsn: DeliveryStatusNotification,
  options: DsnOptions,
): Promise<OutboundMessage | undefined> {
  const messageIds = [
    ...new Set([
      ...(dsn.envelopeId ? [`<${dsn.envelopeId}>`] : []),
      ...(dsn.originalMessageId ? [dsn.originalMessageId] : []),
    ]),
  ];
  const inboxes =
    options.inboxId !== undefined
      ? [options.inboxId.toLowerCase()]
      : [...new Set([...(dsn.originalFrom ? [dsn.originalFrom] : []), ...dsn.notified])];
  for (const messageId of messageIds) {
    const copies = await findMessageCopies(trx, inboxes, messageId);
    // The copy in the inbox that sent it: other copies (local recipients) never went to the relay.
    const sent = copies.find((c) => c.labels.includes('sent') && addressOf(c.from).toLowerCase() === c.inboxId);
    if (sent) return sent;
  }
  return undefined;
}

/**
 * The report's failed recipients that the original was sent to through the relay (as the
 * original spelled them): recipients on a local domain never left this server.
 */
function failedRecipients(
  dsn: DeliveryStatusNotification,
  original: OutboundMessage,
  localDomains: readonly string[],
): { permanent: BouncedRecipient[]; transient: BouncedRecipient[] } {
  const local = localDomainSet(localDomains);
  const relayed = original.recipients.filter((r) => !local.has(domainOf(addressOf(r))));
  const ours = new Map(relayed.map((r) => [addressOf(r).toLowerCase(), addressOf(r)]));
  const permanent: BouncedRecipient[] = [];
  const transient: BouncedRecipient[] = [];
  const seen = new Set<string>();
  for (const r of dsn.recipients) {
    if (r.action !== 'failed') continue;
    const key = [r.originalAddress, r.address].map((a) => a?.toLowerCase()).find((a) => a !== undefined && ours.has(a));
    if (key === undefined || seen.has(key)) continue;
    seen.add(key);
    const status = r.status ?? '5.0.0';
    const bounced = {
      address: ours.get(key) as string,
      status,
      diagnostic: r.diagnosticCode ?? `reported failed by ${dsn.reportingMta ?? 'a remote server'}`,
    };
    (status.startsWith('4') ? transient : permanent).push(bounced);
  }
  return { permanent, transient };
}

/**
 * Turns the failed recipients of a parsed report into message.bounced events of the original
 * sender's inbox, written in `trx` (call the job runner's `notify()` after the commit, so that
 * webhooks go out at once). Returns how many events it wrote: 0 when the report names no message
 * of ours, or only delays, deliveries, relays, recipients the original was not sent to or local
 * ones. Only a report that produced an event is handled; anything else is ordinary mail for the
 * caller to store (a person may want to read it).
 */
export async function applyDeliveryStatusNotification(
  trx: Db,
  deps: DsnDeps,
  dsn: DeliveryStatusNotification,
  options: DsnOptions = {},
): Promise<number> {
  const original = await findOriginal(trx, dsn, options);
  if (!original) return 0;
  const { permanent, transient } = failedRecipients(dsn, original, deps.localDomains ?? []);
  const timestamp = deps.clock.now().toISOString();
  const events = [
    ...(permanent.length ? bouncedEvents(original, 'Permanent', permanent, timestamp) : []),
    ...(transient.length ? bouncedEvents(original, 'Transient', transient, timestamp) : []),
  ];
  if (events.length) await deps.events.emitMany(trx, events);
  return events.length;
}

/**
 * `parseDeliveryStatusNotification` and `applyDeliveryStatusNotification` in one: true when `raw`
 * is a report that produced at least one message.bounced event (handled: it need not be stored),
 * false otherwise (deliver it as ordinary mail).
 */
export async function handleDeliveryStatusNotification(
  trx: Db,
  deps: DsnDeps,
  raw: Buffer,
  options: DsnOptions = {},
): Promise<boolean> {
  const dsn = parseDeliveryStatusNotification(raw);
  return dsn !== undefined && (await applyDeliveryStatusNotification(trx, deps, dsn, options)) > 0;
}
