import { scheduleBackoff, type QueueDefinition } from '../../platform/jobs/jobs.js';
import type { Db } from '../schema/database.js';
import type { DraftService } from './draft.service.js';

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

export function draftSendQueue(
  drafts: Pick<DraftService, 'runScheduledSend' | 'markFailed'>,
): QueueDefinition<DraftSendJob> {
  return {
    handle: (job) => drafts.runScheduledSend(job),
    backoff: scheduleBackoff(DRAFT_SEND_SCHEDULE_MS),
    onDead: (job, _error, trx) => drafts.markFailed(trx as Db, job),
  };
}
