import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { dialectOf } from '../../platform/db/dialect.js';
import { createGroupCommit } from '../../platform/db/group-commit.js';
import { timeOrderedUuid, type Ids } from '../../platform/ids.js';
import type { InboxDatabase } from '../database.js';
import type { EmitInput, EventService } from '../events/event.service.js';
import { findInboxesByAddresses, type Inbox } from '../inboxes/inbox.repository.js';
import { addressOf, normalizeSubject, subjectKey } from '../mail/compose.js';
import { domainOf, localDomainSet } from '../mail/domains.js';
import { findThreadsHoldingMessages, insertMessages, type NewMessage } from '../messages/message.repository.js';
import { receivedPayload } from '../messages/message.service.js';
import { applyDeliveryStatusNotification, parseDeliveryStatusNotification, type DeliveryStatusNotification } from '../outbound/dsn.js';
import { findThreadsForUpdate, insertThreads, updateThread, type Thread } from '../threads/thread.repository.js';
import { participantsOf, toThreadItemResponse } from '../threads/thread.schemas.js';
import { addMessageToThread, startThread } from '../threads/thread.service.js';
import type { AuthVerdict, AuthVerifier } from './auth-results.js';
import { NoRecipientInboxError } from './inbound.errors.js';
import { findDeliveryReports, findRecentThreadsBySubject, insertDeliveryReports } from './inbound.repository.js';
import { headerRecord, inboundContent, mentionsDeliveryStatus, parseMessage, traceHeaders, withoutOwnFields, type InboundContent } from './parse.js';

/** The SMTP envelope and session facts of one mail transaction. */
export interface InboundEnvelope {
  /** MAIL FROM, '' for the null sender (bounces). */
  readonly mailFrom: string;
  /** RCPT TO addresses accepted at RCPT time, lower-cased. */
  readonly recipients: readonly string[];
  readonly remoteAddress: string;
  readonly clientHostname: string;
  readonly helo: string;
  /** ESMTP, ESMTPS, … for the Received field. */
  readonly protocol: string;
  readonly sessionId: string;
}

/** `no-postmaster`: the reserved name postmaster (RFC 5321 §4.5.1) has no inbox to go to. */
export type RecipientCheck = 'accept' | 'relay' | 'unknown' | 'no-postmaster';

export interface ReceiveResult {
  readonly messageId: string;
  /** Copies stored now. */
  readonly stored: number;
  /**
   * Inboxes that already held this Message-ID (a retry after a lost 250, a list copy), or had
   * already turned this report into bounces: not stored, nothing emitted again.
   */
  readonly duplicates: number;
  /** Inboxes for which it was a delivery status notification that bounced mail they sent: turned into message.bounced, not stored. */
  readonly reports: number;
}

export interface InboundServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly events: EventService;
  readonly localDomains: readonly string[];
  /** Our host name: the Received `by`, the authserv-id, the domain of generated Message-IDs. */
  readonly hostname: string;
  /** Undefined when verification is switched off (INBOX_SMTP_VERIFY_AUTH=false). */
  readonly verifier: AuthVerifier | undefined;
  readonly notifyJobs: () => void;
}

/** How many same-subject threads of an inbox the subject fallback looks at. */
const SUBJECT_CANDIDATES = 20;

/** A subject with a reply or forward prefix: only such messages may join a thread by subject. */
const isReplySubject = (subject: string | null) => subject !== null && normalizeSubject(subject) !== subject.trim().toLowerCase();

/**
 * Inbound mail: the recipient check of RCPT, and DATA's pipeline (parse, verify, store) over the
 * same repositories and events as local delivery through the API (`deliver()` in
 * message.service.ts). Every recipient inbox gets its copy, labelled `received` and `unread`, and a
 * message.received event, in one transaction that commits before the caller answers 250.
 */
export function createInboundService(deps: InboundServiceDeps) {
  const { db, clock, ids, events, hostname, verifier, notifyJobs } = deps;
  const dialect = dialectOf(db);
  const local = localDomainSet(deps.localDomains);

  /**
   * The inbox ids a recipient may name, in order of preference; undefined for a domain that is
   * not ours. The domain is matched in any spelling (Unicode or `xn--`) and written as
   * INBOX_DOMAINS writes it. `postmaster` (RFC 5321 §4.5.1: case-insensitive, with or without a
   * domain) goes to the inbox postmaster@<that domain>, else postmaster@<default domain>.
   */
  function inboxCandidates(address: string): string[] | undefined {
    const lower = address.trim().toLowerCase();
    if (lower === 'postmaster') return local.defaultDomain === undefined ? [] : [`postmaster@${local.defaultDomain}`];
    const inboxId = local.inboxId(lower);
    if (inboxId === undefined) return undefined;
    if (!inboxId.startsWith('postmaster@')) return [inboxId];
    const domain = domainOf(inboxId);
    return [...new Set([`postmaster@${domain}`, ...(local.defaultDomain === undefined ? [] : [`postmaster@${local.defaultDomain}`])])];
  }

  /** The recipient inboxes of a transaction (each at most once), in `trx`. */
  async function recipientInboxes(trx: Transaction<InboxDatabase>, recipients: readonly string[]): Promise<Inbox[]> {
    const wanted = recipients.map((r) => inboxCandidates(r) ?? []);
    const found = new Map((await findInboxesByAddresses(trx, [...new Set(wanted.flat())])).map((i) => [i.inboxId, i]));
    const chosen = new Map<string, Inbox>();
    for (const candidates of wanted) {
      const inbox = candidates.map((c) => found.get(c)).find((i) => i !== undefined);
      if (inbox) chosen.set(inbox.inboxId, inbox);
    }
    return [...chosen.values()];
  }
  // SQLite syncs every commit (synchronous=FULL): messages arriving meanwhile share the next fsync.
  const commits = createGroupCommit(db);

  /**
   * The thread each inbox's copy joins: the thread holding a message named by In-Reply-To or
   * References; else, for a reply-prefixed subject, the newest thread with the same normalized
   * subject in which the sender already took part; else none (a new thread).
   */
  async function chooseThreads(trx: Transaction<InboxDatabase>, inboxes: readonly Inbox[], content: InboundContent, sender: string): Promise<Map<string, string>> {
    const chosen = new Map<string, string>();
    const refs = [...new Set([...(content.inReplyTo ? [content.inReplyTo] : []), ...content.references])];
    if (refs.length) {
      for (const h of await findThreadsHoldingMessages(trx, inboxes.map((i) => i.inboxId), refs)) if (!chosen.has(h.inboxId)) chosen.set(h.inboxId, h.threadId);
    }
    const subject = normalizeSubject(content.subject);
    if (!subject || !sender || !isReplySubject(content.subject)) return chosen;
    const key = subjectKey(subject) as string;
    for (const inbox of inboxes) {
      if (chosen.has(inbox.inboxId)) continue;
      const candidates = await findRecentThreadsBySubject(trx, inbox.inboxId, key, SUBJECT_CANDIDATES);
      const match = candidates.find((t) => participantsOf(t).some((p) => p.toLowerCase() === sender));
      if (match) chosen.set(inbox.inboxId, match.threadId);
    }
    return chosen;
  }

  type Base = Omit<NewMessage, 'organizationId' | 'inboxId' | 'threadId' | 'labels'>;

  /**
   * For a delivery status notification (parsed before the transaction): the inboxes that already
   * turned this report (by its Message-ID) into bounces, and those for which it bounces mail they
   * sent now (outbound/dsn.ts emits the message.bounced events in `trx`; the report is recorded
   * so that a second delivery of it bounces nothing again). A report that bounces nothing for an
   * inbox (a delay, a report about mail it never sent, forged local recipients) is ordinary mail.
   */
  async function deliveryReports(trx: Transaction<InboxDatabase>, inboxes: readonly Inbox[], messageId: string, report: DeliveryStatusNotification): Promise<{ seen: Set<string>; handled: Set<string> }> {
    const seen = await findDeliveryReports(trx, inboxes.map((i) => i.inboxId), messageId);
    const handled = new Set<string>();
    for (const inbox of inboxes) {
      if (seen.has(inbox.inboxId)) continue;
      if ((await applyDeliveryStatusNotification(trx, { events, clock, localDomains: deps.localDomains }, report, { inboxId: inbox.inboxId })) > 0) handled.add(inbox.inboxId);
    }
    await insertDeliveryReports(trx, [...handled], messageId, clock.now().toISOString());
    return { seen, handled };
  }

  /** Stores one copy per recipient inbox that does not hold the message yet, with its events. */
  async function store(trx: Transaction<InboxDatabase>, recipients: readonly string[], base: Base, labels: readonly string[], content: InboundContent, report: DeliveryStatusNotification | undefined): Promise<ReceiveResult & { jobs: number }> {
    const inboxes = await recipientInboxes(trx, recipients);
    if (!inboxes.length) throw new NoRecipientInboxError();
    const holding = new Set((await findThreadsHoldingMessages(trx, inboxes.map((i) => i.inboxId), [base.messageId])).map((h) => h.inboxId));
    const open = inboxes.filter((i) => !holding.has(i.inboxId));
    const { seen, handled: reports } = report && open.length ? await deliveryReports(trx, open, base.messageId, report) : { seen: new Set<string>(), handled: new Set<string>() };
    const fresh = open.filter((i) => !seen.has(i.inboxId) && !reports.has(i.inboxId));
    const duplicates = holding.size + seen.size;
    // A report's bounce events may have queued webhook deliveries: wake the runner either way.
    if (!fresh.length) return { messageId: base.messageId, stored: 0, duplicates, reports: reports.size, jobs: reports.size };

    const sender = addressOf(base.from).toLowerCase();
    const threadIdByInbox = await chooseThreads(trx, fresh, content, sender);
    const existing = new Map((await findThreadsForUpdate(trx, [...new Set(threadIdByInbox.values())], dialect)).map((t) => [t.threadId, t]));
    const now = clock.now();
    const created: Thread[] = [];
    const changed: Thread[] = [];
    const stored = fresh.map((inbox) => {
      const message = { ...base, organizationId: inbox.organizationId, inboxId: inbox.inboxId, labels: [...labels] };
      const current = existing.get(threadIdByInbox.get(inbox.inboxId) ?? '');
      const thread = current ? addMessageToThread(current, message) : startThread({ threadId: timeOrderedUuid(now, ids), organizationId: inbox.organizationId, inboxId: inbox.inboxId }, message, normalizeSubject(message.subject));
      (current ? changed : created).push(thread);
      return { inbox, thread, message: { ...message, threadId: thread.threadId } };
    });
    await insertThreads(trx, created);
    for (const t of changed) await updateThread(trx, t);
    const pks = await insertMessages(trx, stored.map((s) => s.message));
    const emitted: EmitInput[] = stored.map((s) => ({
      organizationId: s.inbox.organizationId,
      inboxId: s.inbox.inboxId,
      podId: s.inbox.podId,
      eventType: 'message.received',
      body: { message: receivedPayload({ ...s.message, pk: pks.get(s.inbox.inboxId) as number }), thread: toThreadItemResponse(s.thread) },
    }));
    const { jobs } = await events.emitMany(trx, emitted);
    return { messageId: base.messageId, stored: stored.length, duplicates, reports: reports.size, jobs: jobs + reports.size };
  }

  async function verify(source: Buffer, envelope: InboundEnvelope): Promise<AuthVerdict | undefined> {
    if (!verifier) return undefined;
    return verifier(source, { sender: envelope.mailFrom, ip: envelope.remoteAddress, helo: envelope.helo, authservId: hostname });
  }

  return {
    /**
     * RCPT TO: `relay` for a domain that is not ours, `unknown` for an address without an inbox,
     * `no-postmaster` for postmaster when neither its domain nor the default one has that inbox.
     */
    async checkRecipient(address: string): Promise<RecipientCheck> {
      const candidates = inboxCandidates(address);
      if (candidates === undefined) return 'relay';
      if ((await findInboxesByAddresses(db, candidates)).length) return 'accept';
      return candidates.some((c) => c.startsWith('postmaster@')) ? 'no-postmaster' : 'unknown';
    },

    /**
     * DATA: parses the message (UnparseableMessageError), verifies it, and stores a copy per
     * recipient inbox with its events; resolves only after the commit that made them durable.
     */
    async receive(envelope: InboundEnvelope, source: Buffer): Promise<ReceiveResult> {
      const content = inboundContent(await parseMessage(source));
      // Once per message and outside the transaction; only a multipart that names a status part is
      // taken apart (parseDeliveryStatusNotification is linear and bounded).
      // A message that names no status part anywhere is not one (the common case, found without
      // turning the source into strings).
      const report = content.multipart && mentionsDeliveryStatus(source) ? parseDeliveryStatusNotification(source) : undefined;
      const verdict = await verify(source, envelope);
      const now = clock.now();
      const messageId = content.messageId ?? `<${timeOrderedUuid(now, ids)}@${hostname}>`;
      const trace = traceHeaders({
        mailFrom: envelope.mailFrom,
        recipients: envelope.recipients,
        helo: envelope.helo,
        clientHostname: envelope.clientHostname,
        remoteAddress: envelope.remoteAddress,
        hostname,
        protocol: envelope.protocol,
        sessionId: envelope.sessionId,
        at: now,
        ...(content.messageId === null || content.messageIdReplaced ? { generatedMessageId: messageId } : {}),
        ...(verdict ? { authHeaders: verdict.headers } : {}),
      });
      const raw = Buffer.concat([Buffer.from(trace, 'utf8'), withoutOwnFields(source, hostname)]);
      const timestamp = now.toISOString();
      const base: Base = {
        messageId,
        timestamp,
        // No From at all: the envelope sender is the best name of who sent it.
        from: content.from ?? envelope.mailFrom,
        replyTo: content.replyTo,
        to: content.to,
        cc: content.cc,
        bcc: [],
        subject: content.subject,
        preview: content.preview,
        text: content.text,
        html: content.html,
        inReplyTo: content.inReplyTo,
        references: content.references,
        headers: headerRecord(raw),
        attachments: content.attachments.map((a) => ({ attachmentId: timeOrderedUuid(now, ids), ...a.meta })),
        size: raw.length,
        createdAt: timestamp,
        updatedAt: timestamp,
        raw,
        attachmentContents: content.attachments.map((a) => a.content),
      };
      const labels = ['received', 'unread', ...(verdict?.labels ?? [])];
      const result = await commits.run((trx) => store(trx, envelope.recipients, base, labels, content, report));
      if (result.jobs) notifyJobs();
      return { messageId: result.messageId, stored: result.stored, duplicates: result.duplicates, reports: result.reports };
    },
  };
}

export type InboundService = ReturnType<typeof createInboundService>;
