import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, UnauthenticatedError } from '../../platform/errors/app-error.js';
import type { RateLimiter } from '../../platform/http/rate-limit.js';
import type { KeyOwner } from '../core/scope.js';

/** What the routes need of the API keys: the owner behind a presented key, if any (api-keys/api-key.service.ts). */
export interface KeyAuthenticator {
  authenticate(key: string): Promise<KeyOwner | undefined>;
}

const owners = new WeakMap<FastifyRequest, KeyOwner>();

/** The organization behind the request's key; only callable behind `bearerAuth`. */
export function ownerOf(request: FastifyRequest): KeyOwner {
  const owner = owners.get(request);
  if (!owner) throw new UnauthenticatedError('Missing API key.', { code: 'MISSING_API_KEY' });
  return owner;
}

/**
 * The key of an `Authorization` header: none without one, a problem when it is not `Bearer <key>`.
 * The one reading of the header, for HTTP routes and WebSocket upgrades alike.
 */
export function bearerKeyOf(header: string | undefined): { key?: string; problem?: string } {
  if (!header) return {};
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? { key: m[1] as string } : { problem: 'Malformed Authorization header: expected Bearer <key>.' };
}

/**
 * The owner of a presented key, charged one request of its budget: a missing, malformed or unknown
 * key is a 401, a spent budget a 429 with RateLimit headers. The one check of every door that takes
 * keys over HTTP (the /v0 routes, the MCP endpoint).
 */
export async function authenticateKey(
  apiKeys: KeyAuthenticator,
  limiter: RateLimiter,
  presented: { key?: string; problem?: string },
  reply: FastifyReply,
  missing = 'Missing API key: send Authorization: Bearer <key>.',
): Promise<KeyOwner> {
  const { key, problem } = presented;
  if (problem) throw new UnauthenticatedError(problem, { code: 'MALFORMED_API_KEY' });
  if (!key) throw new UnauthenticatedError(missing, { code: 'MISSING_API_KEY' });
  const owner = await apiKeys.authenticate(key);
  if (!owner) throw new UnauthenticatedError('Invalid API key.', { code: 'INVALID_API_KEY' });
  await charge(limiter, owner, reply);
  return owner;
}

/** One request of the key's budget (the same for a key and for a console session standing for it). */
async function charge(limiter: RateLimiter, owner: KeyOwner, reply: FastifyReply): Promise<void> {
  const rate = await limiter.hit(owner.apiKeyId);
  reply.header('ratelimit-limit', String(rate.limit));
  reply.header('ratelimit-remaining', String(rate.remaining));
  reply.header('ratelimit-reset', String(rate.resetSeconds));
  if (!rate.allowed) {
    throw new AppError(
      'rate_limited',
      `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.resetSeconds} s.`,
      {
        code: 'RATE_LIMIT_EXCEEDED',
        details: { code: 'RATE_LIMIT_EXCEEDED', retry_after_seconds: rate.resetSeconds },
      },
    );
  }
}

/** The console's session cookie (console/console.routes.ts sets it). */
export const CONSOLE_COOKIE = 'am_console';

/** A cookie's value from a Cookie header, if present. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** What the routes need of console sessions: the owner of a session cookie with its CSRF token. */
export interface SessionAuthenticator {
  authenticate(token: string, csrfToken: string | undefined): Promise<KeyOwner | undefined>;
}

/**
 * `Authorization: Bearer am_…` on every /v0 route, then the per-key request budget (authenticateKey).
 * Without an Authorization header, the web console's session cookie stands for its key, with the
 * CSRF token in `X-CSRF-Token` (a cross-site page can send the cookie, never the header).
 */
export function bearerAuth(apiKeys: KeyAuthenticator, limiter: RateLimiter, sessions?: SessionAuthenticator) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization;
    const session = header === undefined && sessions ? cookieOf(request.headers.cookie, CONSOLE_COOKIE) : undefined;
    if (session !== undefined && sessions) {
      const csrf = request.headers['x-csrf-token'];
      const owner = await sessions.authenticate(session, Array.isArray(csrf) ? csrf[0] : csrf);
      if (!owner)
        throw new UnauthenticatedError('The console session has ended: sign in again.', { code: 'SESSION_EXPIRED' });
      await charge(limiter, owner, reply);
      owners.set(request, owner);
      return;
    }
    owners.set(request, await authenticateKey(apiKeys, limiter, bearerKeyOf(header), reply));
  };
}
