import { AppError } from '../../platform/errors/app-error.js';

/**
 * Why inbound mail was refused. The SMTP listener is the one mapper that turns these into reply
 * codes (smtp.server.ts `replyFor`); anything else becomes a temporary 451.
 */

/** mailparser could not take the message apart; the same bytes would fail again. */
export class UnparseableMessageError extends AppError {
  constructor(reason: string, cause?: unknown) {
    super('validation', `The message could not be parsed: ${reason}`, { code: 'MESSAGE_UNPARSEABLE', cause });
  }
}

/** Every recipient accepted at RCPT lost its inbox before DATA ended. */
export class NoRecipientInboxError extends AppError {
  constructor() {
    super('not_found', 'No recipient has an inbox here any more.', { code: 'NO_RECIPIENT_INBOX' });
  }
}
