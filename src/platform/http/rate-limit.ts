import { Counter, type Registry } from 'prom-client';
import type { SharedRedis } from '../redis.js';

export interface RateLimitResult {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
}

export interface RateLimiter {
  hit(key: string): Promise<RateLimitResult>;
  /**
   * `hit` without a promise, for a limiter that counts in this process's memory: hot paths then
   * decide in the same turn. Absent where the count lives elsewhere (Redis).
   */
  readonly hitNow?: (key: string) => RateLimitResult;
  /** The window of `key` as it stands, without counting: `allowed` says whether one more hit would be. */
  peek(key: string): Promise<RateLimitResult>;
  close(): Promise<void>;
}

/**
 * Fixed one-minute windows per key. In memory for one process; in Redis (INCR + PEXPIRE) when
 * several instances must share the count (`sharedRateLimiter`). Windows are aligned to the clock
 * minute so that every instance agrees on when one ends.
 */
export function memoryRateLimiter(limit: number, windowMs = 60_000, now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  let sweeps = 0;
  const hitNow = (key: string): RateLimitResult => {
    const t = now();
    const start = t - (t % windowMs);
    let w = windows.get(key);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      windows.set(key, w);
      // Forget old windows now and then so that idle keys do not accumulate.
      if (++sweeps % 1000 === 0) for (const [k, v] of windows) if (v.start !== start) windows.delete(k);
    }
    w.count++;
    return {
      allowed: w.count <= limit,
      limit,
      remaining: Math.max(0, limit - w.count),
      resetSeconds: Math.ceil((start + windowMs - t) / 1000),
    };
  };
  return {
    hitNow,
    async hit(key) {
      return hitNow(key);
    },
    async peek(key) {
      const t = now();
      const start = t - (t % windowMs);
      const w = windows.get(key);
      const count = w && w.start === start ? w.count : 0;
      return {
        allowed: count < limit,
        limit,
        remaining: Math.max(0, limit - count),
        resetSeconds: Math.ceil((start + windowMs - t) / 1000),
      };
    },
    async close() {},
  };
}

/**
 * Counts in Redis while it answers, and in this process while it does not: an outage of Redis
 * loosens the limit to "per process" (each instance allows `limit`) instead of failing requests.
 * Each hit that fell back is counted in `rate_limit_fallback_total`; the switch itself is
 * logged by `SharedRedis`.
 */
export function sharedRateLimiter(
  redis: SharedRedis,
  limit: number,
  prefix: string,
  options: { registry?: Registry; windowMs?: number; now?: () => number } = {},
): RateLimiter {
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const local = memoryRateLimiter(limit, windowMs, now);
  const fallbacks = new Counter({
    name: 'rate_limit_fallback_total',
    help: 'Rate-limit hits counted in this process because Redis was unavailable',
    registers: options.registry ? [options.registry] : [],
  });
  return {
    async hit(key) {
      const t = now();
      const start = t - (t % windowMs);
      const redisKey = `${prefix}:${key}:${start}`;
      let count: number;
      try {
        count = await redis.run(async (r) => {
          const [[error, n]] = (await r
            .multi()
            .incr(redisKey)
            .pexpire(redisKey, windowMs * 2)
            .exec()) as [[Error | null, number], unknown];
          if (error) throw error;
          return n;
        });
      } catch {
        fallbacks.inc();
        return local.hit(key);
      }
      return {
        allowed: count <= limit,
        limit,
        remaining: Math.max(0, limit - count),
        resetSeconds: Math.ceil((start + windowMs - t) / 1000),
      };
    },
    async peek(key) {
      const t = now();
      const start = t - (t % windowMs);
      let count: number;
      try {
        count = Number((await redis.run((r) => r.get(`${prefix}:${key}:${start}`))) ?? 0);
      } catch {
        fallbacks.inc();
        return local.peek(key);
      }
      return {
        allowed: count < limit,
        limit,
        remaining: Math.max(0, limit - count),
        resetSeconds: Math.ceil((start + windowMs - t) / 1000),
      };
    },
    async close() {
      await redis.close();
    },
  };
}
