import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Registry } from 'prom-client';
import { AppError } from '../../platform/errors/app-error.js';
import {
  memoryRateLimiter,
  sharedRateLimiter,
  type RateLimiter,
  type RateLimitResult,
} from '../../platform/http/rate-limit.js';
import { hashSecret } from '../../platform/ids.js';
import type { SharedRedis } from '../../platform/redis.js';

/**
 * The property service's request budgets (issue 13, item 14). Every API request counts against
 * its client address, and, when it carries an X-API-KEY, against that key too; a self-
 * registration (POST of the user collection without a key) also counts against the address's
 * hourly registration budget. Fixed windows, in memory for one process or shared through Redis
 * when REDIS_URL is set. Beyond a budget: 429 in the service's error format, with Retry-After.
 * See docs/decisions/0013-hostile-input-and-first-minutes.md.
 */
export interface PropertyRateLimits {
  /** Requests per minute per API key. */
  readonly perKey: RateLimiter;
  /** Requests per minute per client address, with or without a key. */
  readonly perAddress: RateLimiter;
  /** Self-registrations per hour per client address. */
  readonly registrations: RateLimiter;
}

export interface RateLimitSettings {
  readonly rateLimitPerMinute: number;
  readonly rateLimitPerAddressPerMinute: number;
  readonly registrationLimitPerHour: number;
  readonly rateLimitRedisPrefix: string;
}

const HOUR = 3_600_000;

/**
 * The three budgets: through `redis` when given (counting per process while it is down, as the
 * inbox's budget does), else in this process's memory. The caller owns and closes `redis`.
 */
export function createPropertyRateLimits(
  settings: RateLimitSettings,
  redis?: SharedRedis,
  registry?: Registry,
): PropertyRateLimits {
  if (redis) {
    const prefix = settings.rateLimitRedisPrefix;
    return {
      // The fallback counter is registered once (all three budgets count into it).
      perKey: sharedRateLimiter(redis, settings.rateLimitPerMinute, `${prefix}:key`, registry ? { registry } : {}),
      perAddress: sharedRateLimiter(redis, settings.rateLimitPerAddressPerMinute, `${prefix}:addr`),
      registrations: sharedRateLimiter(redis, settings.registrationLimitPerHour, `${prefix}:reg`, { windowMs: HOUR }),
    };
  }
  return {
    perKey: memoryRateLimiter(settings.rateLimitPerMinute),
    perAddress: memoryRateLimiter(settings.rateLimitPerAddressPerMinute),
    registrations: memoryRateLimiter(settings.registrationLimitPerHour, HOUR),
  };
}

/** The budget of a refused request, in the words of its 429 answer. */
function exceeded(result: RateLimitResult, what: string): AppError {
  return new AppError(
    'rate_limited',
    `Rate limit exceeded: at most ${result.limit} ${what}; retry in ${result.resetSeconds} s.`,
    {
      code: 'RATE_LIMIT_EXCEEDED',
      details: { retry_after_seconds: result.resetSeconds },
    },
  );
}

/** Of two budgets a request counted against, the tighter: the one refused, else the one with less left. */
const tighter = (a: RateLimitResult, b: RateLimitResult | undefined): RateLimitResult =>
  b !== undefined && (b.remaining < a.remaining || (!b.allowed && a.allowed)) ? b : a;

/**
 * The answer to a request's hits: the RateLimit-* headers of the tightest budget it counted
 * against, and the error of the budget it went over, if any (a registration's budget first, then
 * the key's, then the address's).
 */
function decide(
  reply: FastifyReply,
  byAddress: RateLimitResult,
  byKey: RateLimitResult | undefined,
  byRegistration: RateLimitResult | undefined,
): AppError | undefined {
  const tightest = tighter(tighter(byAddress, byKey), byRegistration);
  reply
    .header('ratelimit-limit', String(tightest.limit))
    .header('ratelimit-remaining', String(tightest.remaining))
    .header('ratelimit-reset', String(tightest.resetSeconds));
  const refused =
    byRegistration && !byRegistration.allowed
      ? exceeded(byRegistration, 'registrations per hour from one client address')
      : byKey && !byKey.allowed
        ? exceeded(byKey, 'requests per minute per API key')
        : !byAddress.allowed
          ? exceeded(byAddress, 'requests per minute from one client address')
          : undefined;
  if (refused) reply.header('retry-after', String(refused.details.retry_after_seconds));
  return refused;
}

/**
 * Counts every request under `prefix` (CORS preflights aside) before authentication, so that
 * invented keys are counted against their address too, and refuses those over a budget. Budgets
 * kept in this process's memory are counted in the same turn (no promise per request on the hot
 * read paths); shared ones (Redis) are awaited.
 */
export function registerRateLimits(
  app: FastifyInstance,
  limits: PropertyRateLimits,
  options: { prefix: string; registrationPath: string },
): void {
  const { perAddress, perKey, registrations } = limits;
  const inMemory =
    perAddress.hitNow && perKey.hitNow && registrations.hitNow
      ? { address: perAddress.hitNow, key: perKey.hitNow, registration: registrations.hitNow }
      : undefined;
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method === 'OPTIONS' || !request.url.startsWith(options.prefix)) return done();
    const key = request.headers['x-api-key'];
    const keyHash = typeof key === 'string' && key !== '' ? hashSecret(key).slice(0, 32) : undefined;
    const address = request.ip;
    const registering =
      keyHash === undefined && request.method === 'POST' && request.url.split('?')[0] === options.registrationPath;
    if (inMemory) {
      const byKey = keyHash === undefined ? undefined : inMemory.key(keyHash);
      const byRegistration = registering ? inMemory.registration(address) : undefined;
      return done(decide(reply, inMemory.address(address), byKey, byRegistration));
    }
    void (async () => {
      const [byAddress, byKey] = await Promise.all([
        perAddress.hit(address),
        keyHash === undefined ? undefined : perKey.hit(keyHash),
      ]);
      const byRegistration = registering ? await registrations.hit(address) : undefined;
      return decide(reply, byAddress, byKey, byRegistration);
    })().then((refused) => done(refused), done);
  });
}
