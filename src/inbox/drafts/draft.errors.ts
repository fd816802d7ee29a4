import { ConflictError, NotFoundError, ValidationError } from '../../platform/errors/app-error.js';

export class DraftNotFoundError extends NotFoundError {
  constructor(draftId: string) {
    super(`Draft ${draftId} not found.`, {
      code: 'DRAFT_NOT_FOUND',
      details: { field: 'draft_id', code: 'DRAFT_NOT_FOUND' },
    });
  }
}

/** The scheduled send of the draft has started: it can no longer be changed, sent again or deleted. */
export class DraftBeingSentError extends ConflictError {
  constructor(draftId: string) {
    super(
      `Draft ${draftId} is being sent (send_status "sending") and can no longer be changed; it disappears once sent, or shows send_status "failed".`,
      {
        code: 'DRAFT_BEING_SENT',
        details: { field: 'draft_id', code: 'DRAFT_BEING_SENT' },
      },
    );
  }
}

/** The draft changed between the moment a send read it and the moment it would have been stored. */
export class DraftChangedError extends ConflictError {
  constructor(draftId: string) {
    super(`Draft ${draftId} changed while it was being sent; nothing was sent. Read it again and send it again.`, {
      code: 'DRAFT_CHANGED',
      details: { field: 'draft_id', code: 'DRAFT_CHANGED' },
    });
  }
}

export class InvalidSendAtError extends ValidationError {
  constructor(problem: string) {
    super(`send_at: ${problem}`, 'send_at', 'INVALID_SEND_AT');
  }
}

/** A draft's kind (plain, reply, forward) is fixed at creation. */
export class DraftKindError extends ValidationError {
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`, field, 'INVALID_DRAFT_KIND');
  }
}

/** `scheduled` says a send is scheduled: only the service puts it on or takes it off. */
export class DraftReservedLabelError extends ValidationError {
  constructor(field: string) {
    super(
      `${field}: the label "scheduled" is set by the service while a send is scheduled (send_at) and cannot be given or removed.`,
      field,
      'RESERVED_LABEL',
    );
  }
}
