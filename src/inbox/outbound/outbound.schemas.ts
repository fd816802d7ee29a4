import type { EmitInput } from '../events/event.service.js';
import type { OutboundMessage } from './outbound.repository.js';

/**
 * The events of outbound mail, in AgentMail's wire shapes (`send`, `delivery`, `bounce`,
 * `reject`). Bounces use SES's vocabulary, which AgentMail passes on: `type` Permanent or
 * Transient, a `sub_type`, and per recipient the RFC 3463 status plus the remote's words.
 */

export type BounceType = 'Permanent' | 'Transient';

export interface BouncedRecipient {
  readonly address: string;
  /** RFC 3463 enhanced status code, e.g. `5.1.1`. */
  readonly status: string;
  /** `smtp; 550 5.1.1 …` as the remote said it, or what went wrong on the way. */
  readonly diagnostic: string;
}

/** SES's sub-types, from the enhanced status code's subject and detail. */
export function bounceSubType(status: string): string {
  const [, subject, detail] = status.split('.');
  if (subject === '1') return 'NoEmail';
  if (subject === '2' && detail === '2') return 'MailboxFull';
  if ((subject === '3' && detail === '4') || (subject === '2' && detail === '3')) return 'MessageTooLarge';
  return 'General';
}

const refOf = (m: OutboundMessage, timestamp: string) => ({ inbox_id: m.inboxId, thread_id: m.threadId, message_id: m.messageId, timestamp });

function event(m: OutboundMessage, eventType: EmitInput['eventType'], body: Record<string, unknown>): EmitInput {
  return { organizationId: m.organizationId, inboxId: m.inboxId, podId: m.podId, eventType, body };
}

/** message.sent: the relay took the message; `recipients` are the envelope of that transaction. */
export function sentEvent(m: OutboundMessage, recipients: readonly string[], timestamp: string): EmitInput {
  return event(m, 'message.sent', { send: { ...refOf(m, timestamp), recipients } });
}

/** message.delivered: the recipients the relay accepted. */
export function deliveredEvent(m: OutboundMessage, recipients: readonly string[], timestamp: string): EmitInput {
  return event(m, 'message.delivered', { delivery: { ...refOf(m, timestamp), recipients } });
}

/** message.bounced, one event per sub-type (the payload has one type and sub-type for all its recipients). */
export function bouncedEvents(m: OutboundMessage, type: BounceType, recipients: readonly BouncedRecipient[], timestamp: string): EmitInput[] {
  const bySubType = new Map<string, BouncedRecipient[]>();
  for (const r of recipients) {
    const sub = bounceSubType(r.status);
    bySubType.set(sub, [...(bySubType.get(sub) ?? []), r]);
  }
  return [...bySubType].map(([subType, list]) =>
    event(m, 'message.bounced', {
      bounce: { ...refOf(m, timestamp), type, sub_type: subType, recipients: list.map((r) => ({ address: r.address, status: r.status, diagnostic_code: r.diagnostic })) },
    }),
  );
}

/** message.rejected: our own checks refused to hand the message to the relay. */
export function rejectedEvent(m: OutboundMessage, reason: string, timestamp: string): EmitInput {
  return event(m, 'message.rejected', { reject: { ...refOf(m, timestamp), reason } });
}
