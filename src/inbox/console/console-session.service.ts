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
import { ConsoleSignInLimitError } from './console.errors.js';

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

/** The window of the failed sign-in budget (INBOX_CONSOLE_SIGNIN_FAILURES per client address). */
export const SIGN_IN_FAILURE_WINDOW_MS = 15 * 60_000;

/** What the failed sign-in budget answers (a platform RateLimiter is one). */
interface Budget {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly resetSeconds: number;
}

export interface ConsoleSessionDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly authenticateKey: (key: string) => Promise<KeyOwner | undefined>;
  readonly ttlHours: number;
  /**
   * Failed sign-ins per client address (a RateLimiter with a SIGN_IN_FAILURE_WINDOW_MS window,
   * shared through Redis when there is one): a spent budget refuses even a valid key until the
   * window ends, so the page cannot be used to try keys.
   */
  readonly failures: { hit(key: string): Promise<Budget>; peek(key: string): Promise<Budget> };
}

export function createConsoleSessions({ db, clock, ids, authenticateKey, ttlHours, failures }: ConsoleSessionDeps) {
  return {
    /**
     * A new session for a valid key: its cookie token, once, and the session. An invalid key is a
     * 401 and counts against `client` (the request's address); a spent budget is a 429 before the
     * key is even looked at.
     */
    async signIn(key: string, client: string): Promise<ConsoleSession & { token: string }> {
      const budget = await failures.peek(client);
      if (!budget.allowed)
        throw new ConsoleSignInLimitError(budget.limit, budget.resetSeconds, SIGN_IN_FAILURE_WINDOW_MS / 60_000);
      const owner = await authenticateKey(key.trim());
      if (!owner) {
        const after = await failures.hit(client);
        throw new UnauthenticatedError('Invalid API key.', {
          code: 'INVALID_API_KEY',
          details: { code: 'INVALID_API_KEY', sign_in_attempts_left: after.remaining },
        });
      }
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
