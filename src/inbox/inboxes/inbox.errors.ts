import { ConflictError, NotFoundError, ValidationError } from '../../platform/errors/app-error.js';

export class InboxNotFoundError extends NotFoundError {
  constructor(inboxId: string) {
    super(`Inbox ${inboxId} not found.`, {
      code: 'INBOX_NOT_FOUND',
      details: { field: 'inbox_id', code: 'INBOX_NOT_FOUND' },
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
