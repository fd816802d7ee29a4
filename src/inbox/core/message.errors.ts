import { AppError, NotFoundError, ValidationError } from '../../platform/errors/app-error.js';

/** Which request field an address came from. */
export type AddressField = 'to' | 'cc' | 'bcc' | 'reply_to';

export class InvalidRecipientError extends ValidationError {
  constructor(field: AddressField, value: string) {
    super(
      `${field}: "${value.length > 100 ? `${value.slice(0, 100)}…` : value}" is not a valid email address (expected addr@domain or Name <addr@domain>).`,
      field,
      'INVALID_EMAIL',
    );
  }
}

export class MissingRecipientError extends ValidationError {
  constructor() {
    super('to: at least one recipient is required.', 'to', 'MISSING_RECIPIENT');
  }
}

export class TooManyRecipientsError extends ValidationError {
  constructor(count: number, max: number) {
    super(
      `A message may have at most ${max} recipients across to, cc and bcc; this one has ${count}.`,
      'to',
      'TOO_MANY_RECIPIENTS',
    );
  }
}

export class ExternalDeliveryDisabledError extends ValidationError {
  constructor(field: AddressField, address: string, localDomains: readonly string[]) {
    super(
      `${field}: ${address} is not on a local domain (${localDomains.join(', ')}), and no SMTP relay is configured (INBOX_SMTP_RELAY_URL).`,
      field,
      'EXTERNAL_DELIVERY_DISABLED',
    );
  }
}

/** A submitted message (SMTP submission) whose envelope sender or From is not the inbox that logged in. */
export class SenderNotAllowedError extends AppError {
  constructor(what: 'envelope' | 'from', address: string, inboxId: string) {
    super(
      'forbidden',
      `${what === 'envelope' ? 'The envelope sender' : 'The From address'} ${address.slice(0, 200) || '(none)'} is not the inbox ${inboxId} that logged in.`,
      { code: 'SENDER_NOT_ALLOWED', details: { field: what } },
    );
  }
}

export class InvalidAttachmentError extends ValidationError {
  constructor(index: number, problem: string) {
    super(`attachments[${index}]: ${problem}`, 'attachments', 'INVALID_ATTACHMENT');
  }
}

/** Why the file of an attachment given by `url` could not be had; each has its own detail code. */
export type AttachmentUrlFailure =
  'invalid_url' | 'blocked' | 'unreachable' | 'timeout' | 'too_large' | 'status' | 'too_many_redirects';

const ATTACHMENT_URL_CODES: Readonly<Record<AttachmentUrlFailure, string>> = {
  invalid_url: 'ATTACHMENT_URL_INVALID',
  blocked: 'ATTACHMENT_URL_NOT_ALLOWED',
  unreachable: 'ATTACHMENT_URL_UNREACHABLE',
  timeout: 'ATTACHMENT_URL_TIMEOUT',
  too_large: 'ATTACHMENT_URL_TOO_LARGE',
  status: 'ATTACHMENT_URL_STATUS',
  too_many_redirects: 'ATTACHMENT_URL_TOO_MANY_REDIRECTS',
};

/**
 * 400 for an attachment whose `url` did not give its file (outgoing/attachment-urls.ts):
 * `details` name the attachment's index and, for a non-2xx answer, its status.
 */
export class AttachmentUrlError extends AppError {
  constructor(index: number, failure: AttachmentUrlFailure, problem: string, status?: number) {
    const code = ATTACHMENT_URL_CODES[failure];
    super('validation', `attachments[${index}]: the file at url could not be fetched: ${problem}.`, {
      code,
      details: { field: 'attachments', code, index, ...(status !== undefined ? { status } : {}) },
    });
  }
}

export class AttachmentsTooLargeError extends ValidationError {
  constructor(size: number, max: number) {
    super(
      `The attachments total ${size} bytes; at most ${max} bytes are allowed per message.`,
      'attachments',
      'ATTACHMENTS_TOO_LARGE',
    );
  }
}

export class BodyTooLargeError extends ValidationError {
  constructor(field: 'text' | 'html', size: number, max: number) {
    super(
      `${field} is ${size} bytes long (UTF-8); at most ${max} bytes are allowed per message.`,
      field,
      'BODY_TOO_LARGE',
    );
  }
}

export class InvalidHeaderError extends ValidationError {
  constructor(name: string, problem: string) {
    super(`headers: "${name.slice(0, 100)}" ${problem}`, 'headers', 'INVALID_HEADER');
  }
}

export class ForbiddenHeaderError extends ValidationError {
  constructor(name: string, kind: 'identity' | 'trace' = 'identity') {
    super(
      kind === 'trace'
        ? `headers: ${name} is a trace or authentication header, added by mail servers on the way, and cannot be given.`
        : `headers: ${name} is set by the service and cannot be given (nor any Content-* header); use the request fields instead.`,
      'headers',
      'FORBIDDEN_HEADER',
    );
  }
}

export class InvalidLabelError extends ValidationError {
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`, field, 'INVALID_LABEL');
  }
}

export class ReservedLabelError extends ValidationError {
  constructor(field: string, label: string) {
    super(
      `${field}: the label "${label}" is set by the service (it records whether a message was sent or received) and cannot be given or removed.`,
      field,
      'RESERVED_LABEL',
    );
  }
}

export class ConflictingLabelsError extends ValidationError {
  constructor(label: string) {
    super(`The label "${label}" is in both add_labels and remove_labels.`, 'add_labels', 'CONFLICTING_LABELS');
  }
}

export class MissingContentError extends ValidationError {
  constructor() {
    super('A message needs a body: text, html or at least one attachment.', 'text', 'MISSING_CONTENT');
  }
}

export class InvalidSubjectError extends ValidationError {
  constructor() {
    super('subject must not contain line breaks or control characters.', 'subject', 'INVALID_SUBJECT');
  }
}

export class SendLimitExceededError extends AppError {
  constructor(limit: number, retryAfterSeconds: number) {
    super(
      'rate_limited',
      `The organization has sent its ${limit} messages for today (UTC); retry in ${retryAfterSeconds} s.`,
      {
        code: 'SEND_LIMIT_EXCEEDED',
        details: { code: 'SEND_LIMIT_EXCEEDED', limit, retry_after_seconds: retryAfterSeconds },
      },
    );
  }
}

export class MessageNotFoundError extends NotFoundError {
  constructor(messageId: string) {
    super(`Message ${messageId} not found.`, {
      code: 'MESSAGE_NOT_FOUND',
      details: { field: 'message_id', code: 'MESSAGE_NOT_FOUND' },
    });
  }
}

export class AttachmentNotFoundError extends NotFoundError {
  constructor(attachmentId: string) {
    super(`Attachment ${attachmentId} not found.`, {
      code: 'ATTACHMENT_NOT_FOUND',
      details: { field: 'attachment_id', code: 'ATTACHMENT_NOT_FOUND' },
    });
  }
}

export class RawMessageNotAvailableError extends NotFoundError {
  constructor(messageId: string) {
    super(`The raw source of message ${messageId} is not stored.`, { code: 'RAW_NOT_AVAILABLE' });
  }
}

export class DownloadLinkInvalidError extends NotFoundError {
  constructor() {
    super('This download link is not valid.', { code: 'DOWNLOAD_LINK_INVALID' });
  }
}

export class DownloadLinkExpiredError extends AppError {
  constructor() {
    super('gone', 'This download link has expired; ask the API for a new one.', { code: 'DOWNLOAD_LINK_EXPIRED' });
  }
}
