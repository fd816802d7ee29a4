import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { memoryRateLimiter, redisRateLimiter, type RateLimiter } from '../../src/platform/http/rate-limit.js';

const backends: [string, (limit: number, now: () => number) => RateLimiter][] = [['memory', (limit, now) => memoryRateLimiter(limit, 60_000, now)]];
if (process.env.TEST_REDIS_URL) {
  const url = process.env.TEST_REDIS_URL;
  backends.push(['redis', (limit, now) => redisRateLimiter(new Redis(url), limit, `test:${process.pid}:${Math.random()}`, 60_000, now)]);
}

describe.each(backends)('%s rate limiter', (_name, make) => {
  it('allows the limit per window and key, then refuses until the window ends', async () => {
    let t = Date.UTC(2026, 0, 1, 0, 0, 10);
    const limiter = make(3, () => t);
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
});
