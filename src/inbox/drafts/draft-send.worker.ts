import { type DraftSendJob, DRAFT_SEND_SCHEDULE_MS } from '../core/queues.js';
import { scheduleBackoff, type QueueDefinition } from '../../platform/jobs/jobs.js';
import type { Db } from '../schema/database.js';
import type { DraftService } from './draft.service.js';

export function draftSendQueue(
  drafts: Pick<DraftService, 'runScheduledSend' | 'markFailed'>,
): QueueDefinition<DraftSendJob> {
  return {
    handle: (job) => drafts.runScheduledSend(job),
    backoff: scheduleBackoff(DRAFT_SEND_SCHEDULE_MS),
    onDead: (job, _error, trx) => drafts.markFailed(trx as Db, job),
  };
}
