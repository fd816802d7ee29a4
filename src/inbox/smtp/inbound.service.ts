import { recipientRule } from '../core/recipients.js';
import { timeOrderedUuid } from '../../platform/ids.js';
import type { Db } from '../schema/database.js';
import type { ComposedMessage, DeliveryPathDeps, Screen, Withheld } from '../mailstore/delivery.service.js';
import type { EventService } from '../events/event.service.js';
import { findInboxesByAddresses } from '../inboxes/inbox.repository.js';
import { type Inbox } from '../core/inbox.js';
import { domainOf } from '../mail/domains.js';
import {
  applyDeliveryStatusNotification,
  parseDeliveryStatusNotification,
  type DeliveryStatusNotification,
} from '../outbound/dsn.js';
import type { AuthVerdict, AuthVerifier } from './auth-results.js';
import { NoRecipientInboxError } from './inbound.errors.js';
import { findDeliveryReports, insertDeliveryReports } from './inbound.repository.js';
import {
  headerRecord,
  inboundContent,
  mentionsDeliveryStatus,
  parseMessage,
  traceHeaders,
  withoutOwnFields,
} from './parse.js';

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

export interface InboundServiceDeps extends DeliveryPathDeps {
  readonly events: EventService;
  readonly localDomains: readonly string[];
  /** The ASCII spelling of a domain a verified custom domain serves (domains/), else undefined. */
  readonly servedDomain?: (domain: string) => Promise<string | undefined>;
  /** Our host name: the Received `by`, the authserv-id, the domain of generated Message-IDs. */
  readonly hostname: string;
  /** Undefined when verification is switched off (INBOX_SMTP_VERIFY_AUTH=false). */
  readonly verifier: AuthVerifier | undefined;
}

/**
 * Inbound mail: the recipient check of RCPT, and DATA's pipeline: parse → verify → deliver (the
 * delivery module every path shares). Every recipient inbox gets its copy, labelled `received` and
 * `unread`, and a message.received event, in one transaction that commits before the caller
 * answers 250.
 */
export function createInboundService(deps: InboundServiceDeps) {
  const { db, delivery, clock, ids, events, hostname, verifier } = deps;
  const rule = recipientRule(deps);

  /**
   * The inbox ids a recipient may name, in order of preference; undefined for a domain that is
   * not ours. The domain is matched in any spelling (Unicode or `xn--`) and written as
   * INBOX_DOMAINS writes it. `postmaster` (RFC 5321 §4.5.1: case-insensitive, with or without a
   * domain) goes to the inbox postmaster@<that domain>, else postmaster@<default domain>.
   */
  async function inboxCandidates(address: string): Promise<string[] | undefined> {
    const lower = address.trim().toLowerCase();
    if (lower === 'postmaster') return rule.defaultDomain === undefined ? [] : [`postmaster@${rule.defaultDomain}`];
    const inboxId = await rule.inboxIdOf(lower);
    if (inboxId === undefined) return undefined;
    if (!inboxId.startsWith('postmaster@')) return [inboxId];
    const domain = domainOf(inboxId);
    return [
      ...new Set([
        `postmaster@${domain}`,
        ...(rule.defaultDomain === undefined ? [] : [`postmaster@${rule.defaultDomain}`]),
      ]),
    ];
  }

  /**
   * For a delivery status notification (parsed before the transaction): the inboxes that already
   * turned this report (by its Message-ID) into bounces, and those for which it bounces mail they
   * sent now (outbound/dsn.ts emits the message.bounced events in `trx`; the report is recorded
   * so that a second delivery of it bounces nothing again). A report that bounces nothing for an
   * inbox (a delay, a report about mail it never sent, forged local recipients) is ordinary mail.
   */
  async function deliveryReports(
    trx: Db,
    inboxes: readonly Inbox[],
    messageId: string,
    report: DeliveryStatusNotification,
  ): Promise<{ seen: Set<string>; handled: Set<string> }> {
    const seen = await findDeliveryReports(
      trx,
      inboxes.map((i) => i.inboxId),
      messageId,
    );
    const handled = new Set<string>();
    for (const inbox of inboxes) {
      if (seen.has(inbox.inboxId)) continue;
      if (
        (await applyDeliveryStatusNotification(trx, { events, clock, localDomains: deps.localDomains }, report, {
          inboxId: inbox.inboxId,
        })) > 0
      )
        handled.add(inbox.inboxId);
    }
    await insertDeliveryReports(trx, [...handled], messageId, clock.now().toISOString());
    return { seen, handled };
  }

  /** The delivery screen of a report: inboxes that saw it already, and those it bounced mail of now, get no copy. */
  const reportScreen =
    (messageId: string, report: DeliveryStatusNotification): Screen =>
    async (trx, inboxes) => {
      const { seen, handled } = await deliveryReports(trx, inboxes, messageId, report);
      const withheld = new Map<string, Withheld>([
        ...[...seen].map((id) => [id, 'duplicate'] as const),
        ...[...handled].map((id) => [id, 'report'] as const),
      ]);
      // A report's bounce events may have queued webhook deliveries: wake the runner either way.
      return { withheld, jobs: handled.size };
    };

  async function verify(source: Buffer, envelope: InboundEnvelope): Promise<AuthVerdict | undefined> {
    if (!verifier) return undefined;
    return verifier(source, {
      sender: envelope.mailFrom,
      ip: envelope.remoteAddress,
      helo: envelope.helo,
      authservId: hostname,
    });
  }

  return {
    /**
     * RCPT TO: `relay` for a domain that is not ours, `unknown` for an address without an inbox,
     * `no-postmaster` for postmaster when neither its domain nor the default one has that inbox.
     */
    async checkRecipient(address: string): Promise<RecipientCheck> {
      const candidates = await inboxCandidates(address);
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
      const report =
        content.multipart && mentionsDeliveryStatus(source) ? parseDeliveryStatusNotification(source) : undefined;
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
      const message: ComposedMessage = {
        messageId,
        timestamp,
        // No From at all: the envelope sender is the best name of who sent it.
        from: content.from ?? envelope.mailFrom,
        replyTo: content.replyTo,
        to: content.to,
        cc: content.cc,
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
      const recipients = await Promise.all(
        envelope.recipients.map(async (address) => ({ address, inboxIds: (await inboxCandidates(address)) ?? [] })),
      );
      const prepared = await delivery.prepare(message);
      const result = await delivery.commit(prepared, (trx) =>
        delivery.deliver(trx, {
          prepared,
          recipients,
          labels: verdict?.labels ?? [],
          foreignMessageId: true,
          ...(report ? { screen: reportScreen(messageId, report) } : {}),
        }),
      );
      // Nothing was written then: every inbox named at RCPT time is gone.
      if (!result.found) throw new NoRecipientInboxError();
      return {
        messageId,
        stored: result.stored,
        duplicates: result.withheld.duplicate,
        reports: result.withheld.report,
      };
    },
  };
}

export type InboundService = ReturnType<typeof createInboundService>;
