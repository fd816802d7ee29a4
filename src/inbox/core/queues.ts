/**
 * The durable queue of mail for non-local recipients (payload: `OutboundMailJob`), filled by
 * delivery (delivery/delivery.service.ts) in the sending transaction and handled by
 * `outbound.worker.ts`: it hands the stored source to INBOX_SMTP_RELAY_URL and emits
 * message.sent, message.delivered, message.bounced or message.rejected for those recipients.
 * Without a relay, sends to them are refused before delivery.
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
