import type { Redis } from 'ioredis';

export interface RateLimitResult {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
}

export interface RateLimiter {
  hit(key: string): Promise<RateLimitResult>;
  close(): Promise<void>;
}

/**
 * Fixed one-minute windows per key. In memory for one process; in Redis (INCR + PEXPIRE) when
 * several instances must share the count. Windows are aligned to the clock minute so that every
 * instance agrees on when one ends.
 */
export function memoryRateLimiter(limit: number, windowMs = 60_000, now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  let sweeps = 0;
  return {
    async hit(key) {
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
      return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetSeconds: Math.ceil((start + windowMs - t) / 1000) };
    },
    async close() {},
  };
}

export function redisRateLimiter(redis: Redis, limit: number, prefix: string, windowMs = 60_000, now: () => number = Date.now): RateLimiter {
  return {
    async hit(key) {
      const t = now();
      const start = t - (t % windowMs);
      const redisKey = `${prefix}:${key}:${start}`;
      const [[, count]] = (await redis.multi().incr(redisKey).pexpire(redisKey, windowMs * 2).exec()) as [[Error | null, number], unknown];
      return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds: Math.ceil((start + windowMs - t) / 1000) };
    },
    async close() {
      await redis.quit();
    },
  };
}
