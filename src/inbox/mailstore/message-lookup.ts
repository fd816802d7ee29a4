import type { Db } from '../schema/database.js';
import type { KeyOwner } from '../core/scope.js';
import { type Message, normalizeMessageId } from '../core/message.js';
import { normalizeInboxId } from '../core/inbox.js';
import { requireScopedInbox } from '../inboxes/inbox-scope.js';
import { findMessage } from './message.repository.js';
import { dialectOf } from '../../platform/db/dialect.js';
import { findInbox } from '../inboxes/inbox.repository.js';
import { InboxNotFoundError } from '../inboxes/inbox.errors.js';
import { MessageNotFoundError } from '../core/message.errors.js';

/** A stored message named in a path, within the caller's scope. */

/**
 * A message of an inbox of the caller's organization (locked with `lock`; without its bodies with
 * `bodies: false`, see findMessage), else MessageNotFoundError or InboxNotFoundError.
 */
export async function findOwnMessage(
  db: Db,
  owner: KeyOwner,
  inboxId: string,
  messageId: string,
  options: { lock?: boolean; bodies?: boolean } = {},
): Promise<Message> {
  const id = normalizeInboxId(inboxId);
  // A key limited to a pod or an inbox: the inbox must be in its scope before anything else is looked at.
  if (owner.podId !== undefined || owner.inboxId !== undefined) await requireScopedInbox(db, owner, inboxId);
  const message = await findMessage(db, owner.organizationId, id, normalizeMessageId(messageId), {
    lock: options.lock ? dialectOf(db) : undefined,
    bodies: options.bodies,
  });
  if (message) return message;
  if (!(await findInbox(db, owner.organizationId, id))) throw new InboxNotFoundError(inboxId);
  throw new MessageNotFoundError(messageId);
}
