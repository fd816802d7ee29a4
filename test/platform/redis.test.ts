import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { sharedRateLimiter } from '../../src/platform/http/rate-limit.js';
import { connectRedis } from '../../src/platform/redis.js';
import { privateRedis, type PrivateRedis } from '../support/redis-server.js';

/** Lines ioredis writes itself (to the console) when no one listens for its errors. */
function captureConsole(): { lines: string[]; restore(): void } {
  const lines: string[] = [];
  const original = {
    error: console.error,
    warn: console.warn,
    log: console.log,
    write: process.stderr.write.bind(process.stderr),
  };
  const keep = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
  console.error = keep;
  console.warn = keep;
  console.log = keep;
  process.stderr.write = ((chunk: string | Uint8Array) => (
    lines.push(String(chunk)),
    true
  )) as typeof process.stderr.write;
  return {
    lines,
    restore() {
      Object.assign(console, { error: original.error, warn: original.warn, log: original.log });
      process.stderr.write = original.write;
    },
  };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Redis down: shared rate limits fall back to per-process counting and recover', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await privateRedis();
  });
  afterAll(async () => {
    redis.thaw();
    await redis.stop();
  });

  it('counts across instances in Redis, falls back per process while it is stopped or frozen, logs each change once as JSON-able objects, and recovers', async () => {
    const logs: { level: string; o: object; msg: string }[] = [];
    const log = {
      warn: (o: object, msg: string) => void logs.push({ level: 'warn', o, msg }),
      info: (o: object, msg: string) => void logs.push({ level: 'info', o, msg }),
    };
    const registry = new Registry();
    // A command timeout generous enough for a loaded CI machine (the service's default is 50 ms).
    const a = connectRedis({ url: redis.url, log, registry, probeMs: 200, commandTimeoutMs: 500 });
    const b = connectRedis({
      url: redis.url,
      log: { warn: () => {}, info: () => {} },
      probeMs: 200,
      commandTimeoutMs: 500,
    });
    expect(await a.connected()).toBe(true);
    expect(await b.connected()).toBe(true);
    const prefix = `rl:${Math.random()}`;
    const first = sharedRateLimiter(a, 3, prefix, { registry });
    const second = sharedRateLimiter(b, 3, prefix);
    const console = captureConsole();
    try {
      // Two instances share one count while Redis answers.
      const shared = [await first.hit('k'), await second.hit('k'), await first.hit('k'), await second.hit('k')];
      expect(shared.map((r) => r.allowed)).toEqual([true, true, true, false]);
      expect(a.state()).toBe('ok');

      // Stopped: every hit still answers, counted in each process on its own.
      await redis.stop();
      const during = [];
      for (let i = 0; i < 4; i++) during.push(await first.hit('outage'));
      expect(during.map((r) => r.allowed)).toEqual([true, true, true, false]);
      expect((await second.hit('outage')).allowed).toBe(true); // the other process counts its own
      expect(a.state()).toBe('down');
      expect(await registry.getSingleMetricAsString('redis_up')).toMatch(/redis_up 0/);
      expect(await registry.getSingleMetricAsString('rate_limit_fallback_total')).toMatch(
        /rate_limit_fallback_total [1-9]/,
      );
      expect(logs.filter((l) => l.level === 'warn')).toHaveLength(1);
      expect(logs[0]?.msg).toMatch(/Redis unavailable/);

      // Back: the count is shared again.
      await redis.start();
      await until(async () => (await first.hit('probe'), a.state() === 'ok'), 'Redis to be used again');
      expect(logs.filter((l) => l.level === 'info').map((l) => l.msg)).toEqual([
        expect.stringMatching(/Redis is back/),
      ]);
      await until(async () => (await second.hit('probe'), b.state() === 'ok'), 'the second instance to reconnect');
      const again = [
        await first.hit('again'),
        await second.hit('again'),
        await first.hit('again'),
        await second.hit('again'),
      ];
      expect(again.map((r) => r.allowed)).toEqual([true, true, true, false]);

      // Frozen: the socket stays open and nothing answers; the command timeout and the circuit keep hits answering.
      redis.freeze();
      const frozen = [];
      for (let i = 0; i < 4; i++) frozen.push(await first.hit('frozen'));
      expect(frozen.map((r) => r.allowed)).toEqual([true, true, true, false]);
      expect(a.state()).toBe('down');
      redis.thaw();
      await until(async () => (await first.hit('probe2'), a.state() === 'ok'), 'Redis to answer after the freeze');
    } finally {
      console.restore();
      await first.close();
      await second.close();
    }
    expect(console.lines.filter((l) => /ioredis|Unhandled error event/.test(l))).toEqual([]);
  });
});
