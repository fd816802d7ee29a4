import { memoryRateLimiter, sharedRateLimiter, type RateLimiter } from './http/rate-limit.js';
import type { SharedRedis } from './redis.js';

const WINDOW_MS = 15 * 60_000;

/**
 * Failed logins of the protocols without HTTP (IMAP, SMTP submission) in 15-minute windows: a
 * budget of `limit` per user name and ten times as many per client address (one address may be a
 * whole office behind NAT). Only failures count. Through `redis` the count is shared by every
 * instance (an attacker spreading guesses over instances gets no more of them), and while Redis
 * is down each process counts for itself, as the API's limits do; without it, this process counts.
 * One budget serves both protocols of a process, so guesses over IMAP and submission add up.
 */
export function loginBudget(limit: number, options: { redis?: SharedRedis; prefix?: string; now?: () => number } = {}) {
  const prefix = options.prefix ?? 'inbox:login';
  const limiter = (n: number, what: string): RateLimiter =>
    options.redis
      ? sharedRateLimiter(options.redis, n, `${prefix}:${what}`, {
          windowMs: WINDOW_MS,
          ...(options.now ? { now: options.now } : {}),
        })
      : memoryRateLimiter(n, WINDOW_MS, options.now);
  const users = limiter(limit, 'user');
  const addresses = limiter(limit * 10, 'ip');
  const userKey = (user: string) => user.toLowerCase();
  return {
    /** Whether a login of `user` from `address` is refused without being tried. */
    async blocked(user: string, address: string): Promise<boolean> {
      const [byUser, byAddress] = await Promise.all([users.peek(userKey(user)), addresses.peek(address)]);
      return !byUser.allowed || !byAddress.allowed;
    },
    async failed(user: string, address: string): Promise<void> {
      await Promise.all([users.hit(userKey(user)), addresses.hit(address)]);
    },
  };
}

export type LoginBudget = ReturnType<typeof loginBudget>;
