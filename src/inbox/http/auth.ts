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
  return owner;
}

/**
 * `Authorization: Bearer am_…` on every /v0 route, then the per-key request budget (authenticateKey).
 */
export function bearerAuth(apiKeys: KeyAuthenticator, limiter: RateLimiter) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    owners.set(request, await authenticateKey(apiKeys, limiter, bearerKeyOf(request.headers.authorization), reply));
  };
}

/** The owner of a request authenticated by another door's own check (the MCP endpoint): for ownerOf. */
export function setOwner(request: FastifyRequest, owner: KeyOwner): void {
  owners.set(request, owner);
}
