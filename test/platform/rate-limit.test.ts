import { describe, expect, it } from 'vitest';
import { memoryRateLimiter, sharedRateLimiter, type RateLimiter } from '../../src/platform/http/rate-limit.js';
import { connectRedis } from '../../src/platform/redis.js';

const backends: [string, (limit: number, now: () => number) => RateLimiter | Promise<RateLimiter>][] = [
  ['memory', (limit, now) => memoryRateLimiter(limit, 60_000, now)],
];
if (process.env.TEST_REDIS_URL) {
  const url = process.env.TEST_REDIS_URL;
  backends.push([
    'redis',
    async (limit, now) => {
      const redis = connectRedis({ url, log: { warn: () => {}, info: () => {} } });
      expect(await redis.connected()).toBe(true);
      return sharedRateLimiter(redis, limit, `test:${process.pid}:${Math.random()}`, { now });
    },
  ]);
}

describe.each(backends)('%s rate limiter', (_name, make) => {
  it('allows the limit per window and key, then refuses until the window ends', async () => {
    let t = Date.UTC(2026, 0, 1, 0, 0, 10);
    const limiter = await make(3, () => t);
    try {
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await limiter.hit('k'));
      expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
      expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
      expect(results[3]?.resetSeconds).toBe(50);
      expect((await limiter.hit('other')).allowed).toBe(true);
      t += 50_000;
      expect((await limiter.hit('k')).allowed).toBe(true);
    } finally {
      await limiter.close();
    }
  });

  it('peeks at a window without counting: allowed while one more hit would be', async () => {
    let t = Date.UTC(2026, 0, 1, 0, 0, 10);
    const limiter = await make(2, () => t);
    try {
      expect(await limiter.peek('p')).toEqual({ allowed: true, limit: 2, remaining: 2, resetSeconds: 50 });
      await limiter.hit('p');
      expect((await limiter.peek('p')).remaining).toBe(1);
      await limiter.hit('p');
      expect(await limiter.peek('p')).toEqual({ allowed: false, limit: 2, remaining: 0, resetSeconds: 50 });
      expect((await limiter.peek('p')).allowed).toBe(false);
      t += 50_000;
      expect((await limiter.peek('p')).allowed).toBe(true);
    } finally {
      await limiter.close();
    }
  });
});
