import { InvalidUsernameError } from './inbox.errors.js';

/** The local part of an inbox address as people may choose it. */
const USERNAME = /^[a-z0-9_+-](?:[a-z0-9._+-]{0,62}[a-z0-9_+-])?$/;

/** The username of a new inbox, lower-cased; InvalidUsernameError when it breaks the rules. */
export function checkUsername(raw: string): string {
  const username = raw.trim().toLowerCase();
  if (!USERNAME.test(username) || username.includes('..')) throw new InvalidUsernameError();
  return username;
}
