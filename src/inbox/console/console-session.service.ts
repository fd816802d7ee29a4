import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { UnauthenticatedError } from '../../platform/errors/app-error.js';
import { hashSecret, newSecret, safeEqual, type Ids } from '../../platform/ids.js';
import { findKeyOwnerBySession } from '../api-keys/api-key.repository.js';
import type { KeyOwner } from '../core/scope.js';
import type { InboxDatabase } from '../schema/database.js';
import {
  deleteConsoleSession,
  deleteExpiredConsoleSessions,
  insertConsoleSession,
} from './console-session.repository.js';

/**
 * Sign-in to the web console (docs/decisions/0046-console-sessions.md): a person types an API key
 * once; the service checks it as any request's key and answers with a session, a random token the
 * browser keeps in an HttpOnly cookie, and a CSRF token the page keeps in memory and repeats in a
 * header on every request. The key itself is never stored, sent back or kept by the page. A session
 * stands for its key: it sees and does exactly what the key may (the same KeyOwner, read afresh on
 * every request), ends at its time, at sign-out, or with its key.
 */

/** The cookie's token carries this prefix: a leaked one is recognisable. */
export const CONSOLE_TOKEN_PREFIX = 'amc_';

export interface ConsoleSession {
  readonly owner: KeyOwner;
  readonly csrfToken: string;
  readonly expiresAt: string;
}

export interface ConsoleSessionDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly authenticateKey: (key: string) => Promise<KeyOwner | undefined>;
  readonly ttlHours: number;
}

export function createConsoleSessions({ db, clock, ids, authenticateKey, ttlHours }: ConsoleSessionDeps) {
  return {
    /** A new session for a valid key (401 otherwise): its cookie token, once, and the session. */
    async signIn(key: string): Promise<ConsoleSession & { token: string }> {
      const owner = await authenticateKey(key.trim());
      if (!owner) throw new UnauthenticatedError('Invalid API key.', { code: 'INVALID_API_KEY' });
      const now = clock.now();
      const token = newSecret(ids, CONSOLE_TOKEN_PREFIX, 32);
      const csrfToken = ids.token(24);
      const expiresAt = new Date(now.getTime() + ttlHours * 3_600_000).toISOString();
      await deleteExpiredConsoleSessions(db, now.toISOString());
      await insertConsoleSession(db, {
        tokenHash: hashSecret(token),
        apiKeyId: owner.apiKeyId,
        csrfToken,
        createdAt: now.toISOString(),
        expiresAt,
      });
      return { token, owner, csrfToken, expiresAt };
    },

    /** The live session of a cookie's token, if any. */
    async find(token: string): Promise<ConsoleSession | undefined> {
      if (!token.startsWith(CONSOLE_TOKEN_PREFIX) || token.length > 200) return undefined;
      return findKeyOwnerBySession(db, hashSecret(token), clock.now().toISOString());
    },

    /** The owner of a request that came with a session cookie: the session must be live and the CSRF token its own. */
    async authenticate(token: string, csrfToken: string | undefined): Promise<KeyOwner | undefined> {
      const session = await this.find(token);
      if (!session) return undefined;
      if (!csrfToken || !safeEqual(csrfToken, session.csrfToken))
        throw new UnauthenticatedError(
          'The console session needs its CSRF token: send it as X-CSRF-Token (GET /console/session has it).',
          { code: 'CSRF_TOKEN_MISMATCH' },
        );
      return session.owner;
    },

    async signOut(token: string): Promise<void> {
      if (token.startsWith(CONSOLE_TOKEN_PREFIX) && token.length <= 200)
        await deleteConsoleSession(db, hashSecret(token));
    },
  };
}

export type ConsoleSessions = ReturnType<typeof createConsoleSessions>;
