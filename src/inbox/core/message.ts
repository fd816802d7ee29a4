import { InvalidLabelError, ReservedLabelError } from './message.errors.js';

/**
 * Messages as the service knows them, and their pure rules: ids as paths give them, labels (valid, reserved,
 * applied). No SQL, no I/O.
 */

export type ContentDisposition = 'attachment' | 'inline';

/** What a message says about one attachment; the bytes stay in the attachments table. */
export interface AttachmentMeta {
  readonly attachmentId: string;
  readonly filename: string | null;
  readonly size: number;
  readonly contentType: string | null;
  readonly contentDisposition: ContentDisposition | null;
  readonly contentId: string | null;
}

export interface Message {
  /** Internal key: the keyset tiebreaker and the owner of labels and attachments. */
  readonly pk: number;
  readonly organizationId: string;
  readonly inboxId: string;
  readonly threadId: string;
  /** The RFC 5322 Message-ID, angle brackets included. */
  readonly messageId: string;
  readonly labels: readonly string[];
  readonly timestamp: string;
  /** `addr` or `Name <addr>`. */
  readonly from: string;
  readonly replyTo: readonly string[];
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly subject: string | null;
  readonly preview: string | null;
  /** Null in list reads, which leave the bodies out. */
  readonly text: string | null;
  readonly html: string | null;
  readonly inReplyTo: string | null;
  readonly references: readonly string[];
  /** Headers the sender set explicitly. */
  readonly headers: Readonly<Record<string, string>> | null;
  readonly attachments: readonly AttachmentMeta[];
  /** Bytes of the RFC 5322 source. */
  readonly size: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** A message id as it appears in paths: with its angle brackets, added when the caller left them out. */
export function normalizeMessageId(raw: string): string {
  const id = raw.trim();
  return id.startsWith('<') ? id : `<${id}>`;
}

/** Labels after adding and removing (in the order they were, added ones last), and what changed. */
export function applyLabels(
  current: readonly string[],
  add: readonly string[],
  remove: readonly string[],
): { labels: string[]; added: string[]; removed: string[] } {
  const added = add.filter((l) => !current.includes(l));
  const removed = remove.filter((l) => current.includes(l));
  return { labels: [...current.filter((l) => !removed.includes(l)), ...added], added, removed };
}

/** Labels that state a fact about a message (its direction); only the service sets them. */
export const RESERVED_LABELS: readonly string[] = ['sent', 'received'];

// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

export function validateLabels(field: string, labels: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const label of labels ?? []) {
    if (typeof label !== 'string' || label.length === 0 || label.length > 255)
      throw new InvalidLabelError(field, 'labels are 1 to 255 characters long.');
    if (CONTROL.test(label)) throw new InvalidLabelError(field, 'labels must not contain control characters.');
    if (RESERVED_LABELS.includes(label.toLowerCase())) throw new ReservedLabelError(field, label);
    if (!out.includes(label)) out.push(label);
  }
  return out;
}
