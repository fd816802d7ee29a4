import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../platform/errors/app-error.js';

export class InboxNotFoundError extends NotFoundError {
  constructor(inboxId: string) {
    super(`Inbox ${inboxId} not found.`, {
      code: 'INBOX_NOT_FOUND',
      details: { field: 'inbox_id', code: 'INBOX_NOT_FOUND' },
    });
  }
}

/** A send from a paused inbox (AgentMail answers 403 `inbox_paused`): every door, drafts and scheduled sends included. */
export class InboxPausedError extends ForbiddenError {
  constructor(inboxId: string) {
    super(`Inbox ${inboxId} is paused: it sends nothing until its status is active again (PATCH status: active).`, {
      code: 'INBOX_PAUSED',
      details: { field: 'inbox_id', code: 'INBOX_PAUSED' },
    });
  }
}

export class InboxAddressTakenError extends ConflictError {
  constructor(address: string) {
    super(`The address ${address} is already taken.`, {
      code: 'ADDRESS_TAKEN',
      details: { field: 'username', code: 'ADDRESS_TAKEN' },
    });
  }
}

export class DomainNotAllowedError extends ValidationError {
  constructor(domain: string, allowed: readonly string[]) {
    super(
      `The domain ${domain} is not served here; use one of: ${allowed.join(', ')}.`,
      'domain',
      'DOMAIN_NOT_ALLOWED',
    );
  }
}

export class InvalidUsernameError extends ValidationError {
  constructor() {
    super(
      'username must be 1-64 characters: letters, digits, dots, hyphens, underscores and plus signs, not starting or ending with a dot.',
      'username',
      'INVALID_USERNAME',
    );
  }
}
