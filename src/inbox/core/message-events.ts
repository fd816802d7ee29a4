import type { Inbox } from './inbox.js';
import type { Message } from './message.js';
import { toMessageResponse } from './message.wire.js';
import type { Thread } from './thread.js';
import { toThreadItemResponse } from './thread.wire.js';
import type { EmitInput } from './events.js';

/**
 * The payloads of the message events, in AgentMail's wire shapes (`message` + `thread`, `send`,
 * `delivery`, `bounce`, `reject`): built here only, for local delivery (delivery/), the outbound
 * worker and delivery status notifications. Bounces use SES's vocabulary, which AgentMail passes
 * on: `type` Permanent or Transient, a `sub_type`, and per recipient the RFC 3463 status plus the
 * remote's words.
 */

/** The copy of a sent message an event is about: the sender's. */
export interface MessageRef {
  readonly organizationId: string;
  readonly inboxId: string;
  readonly podId: string;
  readonly threadId: string;
  readonly messageId: string;
}

/** Bodies are dropped from a message.received payload above this size, as AgentMail does. */
const EVENT_PAYLOAD_LIMIT = 1024 * 1024;

/** The Message of a message.received event; its bodies are left out above 1 MB. */
export function receivedPayload(message: Message) {
  // Decided from the lengths where they settle it: every UTF-16 unit of a body is at least one
  // byte of the JSON (bodies of a quarter of the limit fit whatever they hold; bodies longer than
  // the limit cannot), so only messages in between are stringified to measure them. A message
  // without its bodies is also spared extracting the new text from them.
  const chars = (message.text?.length ?? 0) + (message.html?.length ?? 0);
  if (chars > EVENT_PAYLOAD_LIMIT) return toMessageResponse({ ...message, text: null, html: null });
  const wire = toMessageResponse(message);
  if (chars < EVENT_PAYLOAD_LIMIT / 4 || Buffer.byteLength(JSON.stringify(wire)) <= EVENT_PAYLOAD_LIMIT) return wire;
  const { text: _t, html: _h, extracted_text: _et, extracted_html: _eh, ...rest } = wire;
  return rest;
}

/** message.received: a copy was stored in `inbox`, in `thread`. */
export function receivedEvent(
  inbox: Pick<Inbox, 'organizationId' | 'inboxId' | 'podId'>,
  message: Message,
  thread: Thread,
): EmitInput {
  return {
    organizationId: inbox.organizationId,
    inboxId: inbox.inboxId,
    podId: inbox.podId,
    eventType: 'message.received',
    body: { message: receivedPayload(message), thread: toThreadItemResponse(thread) },
  };
}

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

const refOf = (m: MessageRef, timestamp: string) => ({
  inbox_id: m.inboxId,
  thread_id: m.threadId,
  message_id: m.messageId,
  timestamp,
});

function event(m: MessageRef, eventType: EmitInput['eventType'], body: Record<string, unknown>): EmitInput {
  return { organizationId: m.organizationId, inboxId: m.inboxId, podId: m.podId, eventType, body };
}

/** message.sent: the relay took the message (`recipients`: the envelope of that transaction), or local inboxes did. */
export function sentEvent(m: MessageRef, recipients: readonly string[], timestamp: string): EmitInput {
  return event(m, 'message.sent', { send: { ...refOf(m, timestamp), recipients } });
}

/** message.delivered: the recipients the relay accepted, or the local inboxes that got a copy. */
export function deliveredEvent(m: MessageRef, recipients: readonly string[], timestamp: string): EmitInput {
  return event(m, 'message.delivered', { delivery: { ...refOf(m, timestamp), recipients } });
}

/** message.bounced, one event per sub-type (the payload has one type and sub-type for all its recipients). */
export function bouncedEvents(
  m: MessageRef,
  type: BounceType,
  recipients: readonly BouncedRecipient[],
  timestamp: string,
): EmitInput[] {
  const bySubType = new Map<string, BouncedRecipient[]>();
  for (const r of recipients) {
    const sub = bounceSubType(r.status);
    bySubType.set(sub, [...(bySubType.get(sub) ?? []), r]);
  }
  return [...bySubType].map(([subType, list]) =>
    event(m, 'message.bounced', {
      bounce: {
        ...refOf(m, timestamp),
        type,
        sub_type: subType,
        recipients: list.map((r) => ({ address: r.address, status: r.status, diagnostic_code: r.diagnostic })),
      },
    }),
  );
}

/** message.rejected: our own checks refused to hand the message to the relay. */
export function rejectedEvent(m: MessageRef, reason: string, timestamp: string): EmitInput {
  return event(m, 'message.rejected', { reject: { ...refOf(m, timestamp), reason } });
}
