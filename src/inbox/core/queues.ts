/**
 * The durable queue of mail for non-local recipients (payload: `OutboundMailJob`), filled by
 * delivery (mailstore/delivery.service.ts) in the sending transaction and handled by
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

/** The job queue that delivers one event to one webhook. */
export const WEBHOOK_DELIVERY_QUEUE = 'webhook.deliver';

export interface WebhookDeliveryJob {
  readonly webhook_id: string;
  readonly event_id: string;
}

/**
 * The durable queue of scheduled draft sends: one job per schedule, queued with the draft (or its
 * new `send_at`) in the same transaction and due at `send_at`. Withdrawn when the draft is
 * rescheduled, unscheduled, deleted or sent by hand; a job that runs anyway finds the draft no
 * longer its own (`send_job_id`) and ends. The handler is `DraftService.runScheduledSend`.
 */
export const DRAFT_SEND_QUEUE = 'drafts.send';

export interface DraftSendJob {
  readonly draft_id: string;
  readonly organization_id: string;
  /** The time the job was scheduled for (the draft's send_at then), for the record. */
  readonly send_at: string;
}

/** Failures of our own (the database) are retried for about 15 minutes; then the draft shows send_status `failed`. */
export const DRAFT_SEND_SCHEDULE_MS: readonly number[] = [5e3, 30e3, 2 * 60e3, 10 * 60e3];
