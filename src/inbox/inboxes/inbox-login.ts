import type { Db } from '../schema/database.js';
import type { Inbox } from '../core/inbox.js';
import { type KeyOwner, type Permission, holds } from '../core/scope.js';
import { findScopedInbox } from './inbox-scope.js';

/**
 * A mail client's login (IMAP, SMTP submission; decision 0045): the user name is an inbox's
 * address and the password an API key. The key is authenticated as the REST API authenticates it
 * and the inbox found in its scope as every inbox route finds it; a key that does not reach the
 * inbox fails as a wrong key does (whether the inbox exists is not revealed), and one that reaches
 * it without `permission` fails apart, so the client can say why.
 */
export type InboxLogin =
  | { readonly ok: true; readonly owner: KeyOwner; readonly inbox: Inbox }
  | { readonly ok: false; readonly reason: 'credentials' | 'permission' };

export async function loginToInbox(
  db: Db,
  apiKeys: { authenticate(key: string): Promise<KeyOwner | undefined> },
  address: string,
  key: string,
  permission: Permission,
): Promise<InboxLogin> {
  const owner = await apiKeys.authenticate(key);
  if (!owner) return { ok: false, reason: 'credentials' };
  const inbox = await findScopedInbox(db, owner, address);
  if (!inbox) return { ok: false, reason: 'credentials' };
  if (!holds(owner, permission)) return { ok: false, reason: 'permission' };
  return { ok: true, owner, inbox };
}
