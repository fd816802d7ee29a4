import type { Db } from '../schema/database.js';
import { type KeyOwner, inScope } from '../core/scope.js';
import { type Inbox, normalizeInboxId } from '../core/inbox.js';
import { findInbox } from './inbox.repository.js';
import { InboxNotFoundError } from './inbox.errors.js';

/**
 * An inbox named in a path, if the caller's key (and the route's pod) reaches it: the first check of every
 * inbox-level use case.
 */

/**
 * The inbox `inboxId` of the key's organization if the key reaches it (its pod, its inbox), and
 * with `podId` only if it lies in that pod; undefined otherwise (the caller answers 404).
 */
export async function findScopedInbox(
  db: Db,
  owner: KeyOwner,
  inboxId: string,
  podId?: string,
): Promise<Inbox | undefined> {
  const inbox = await findInbox(db, owner.organizationId, normalizeInboxId(inboxId));
  if (!inbox || !inScope(owner, inbox) || (podId !== undefined && inbox.podId !== podId)) return undefined;
  return inbox;
}

/** findScopedInbox, or InboxNotFoundError (404) when the key does not reach the inbox. */
export async function requireScopedInbox(db: Db, owner: KeyOwner, inboxId: string, podId?: string): Promise<Inbox> {
  const inbox = await findScopedInbox(db, owner, inboxId, podId);
  if (!inbox) throw new InboxNotFoundError(inboxId);
  return inbox;
}
