import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { Counter, Gauge, type Registry } from 'prom-client';
import { redactUrl } from './config/config.js';

/**
 * The one Redis connection of a process, for state several instances share (rate-limit counts).
 * Redis is an optimisation of correctness across instances, never a dependency of a request:
 * while it is down, `run` fails at once (no offline queue, no retries per command, a short
 * command timeout, and a circuit that stays open until Redis answers again), so callers fall back
 * to per-process state with their usual latency. See docs/deploy.md, "Redis down".
 *
 * Every state change is logged once, through the service's JSON logger: ioredis's own
 * "Unhandled error event" lines never appear, because an `error` listener is always attached.
 */
export interface SharedRedis {
  /** Runs a command; throws `RedisUnavailable` at once while Redis is known to be down. */
  run<T>(command: (redis: Redis) => Promise<T>): Promise<T>;
  /**
   * Resolves once Redis answered for the first time, or after `timeoutMs` (a process that starts
   * while Redis is down starts all the same, on its fallback).
   */
  connected(timeoutMs?: number): Promise<boolean>;
  /** `ok` while Redis answers, `down` while callers run on their per-process fallback. */
  state(): 'ok' | 'down';
  close(): Promise<void>;
}

export class RedisUnavailable extends Error {}

export interface SharedRedisOptions {
  readonly url: string;
  readonly log: { warn(o: object, msg: string): void; info(o: object, msg: string): void };
  /** Longest a command may take before it counts as a failure, ms. */
  readonly commandTimeoutMs?: number;
  /** While down, how often one command is let through to see whether Redis is back, ms. */
  readonly probeMs?: number;
  /** Where `redis_up` and `redis_unavailable_total` are registered. */
  readonly registry?: Registry;
}

/** ioredis, loaded when a process connects (one without REDIS_URL never loads it). */
const loadRedis = (): typeof Redis => (createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis }).Redis;

export function connectRedis(options: SharedRedisOptions): SharedRedis {
  const Redis = loadRedis();
  const { log } = options;
  const commandTimeoutMs = options.commandTimeoutMs ?? 50;
  const probeMs = options.probeMs ?? 1_000;
  const target = redactUrl(options.url);
  const client = new Redis(options.url, {
    lazyConnect: false,
    // A command while disconnected fails at once instead of waiting in a queue for a reconnect.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 1_000,
    // Keep reconnecting in the background, at most every 2 s, for as long as the process runs.
    retryStrategy: (times) => Math.min(times * 100, 2_000),
  });
  const registers = options.registry ? [options.registry] : [];
  const up = new Gauge({
    name: 'redis_up',
    help: '1 while Redis answers, 0 while shared state falls back to per-process state',
    registers,
  });
  const unavailable = new Counter({
    name: 'redis_unavailable_total',
    help: 'Redis commands not run or failed because Redis was unavailable',
    registers,
  });

  let down = true; // until the first `ready`
  let everReady = false;
  let nextProbe = 0;
  let closing = false;
  up.set(0);

  const goDown = (reason: string) => {
    if (down) return;
    down = true;
    nextProbe = Date.now() + probeMs;
    up.set(0);
    if (!closing)
      log.warn(
        { redis: target, reason },
        'Redis unavailable: shared state falls back to per-process state until it returns',
      );
  };
  const goUp = () => {
    if (!down) return;
    down = false;
    up.set(1);
    if (everReady) log.info({ redis: target }, 'Redis is back: shared state is used again');
    everReady = true;
  };

  client.on('ready', goUp);
  client.on('error', (err: Error) => goDown(err.message));
  client.on('close', () => goDown('connection closed'));
  // Once at start, so that a process that boots while Redis is down says so.
  let startWarned = false;
  client.on('error', (err: Error) => {
    if (everReady || startWarned || closing) return;
    startWarned = true;
    log.warn(
      { redis: target, reason: err.message },
      'Redis unavailable at start: shared state falls back to per-process state until it answers',
    );
  });

  return {
    async run(command) {
      if (down) {
        // A hung Redis keeps its socket "ready": let one command through now and then to find out.
        if (client.status !== 'ready' || Date.now() < nextProbe) {
          unavailable.inc();
          throw new RedisUnavailable('Redis is unavailable');
        }
        nextProbe = Date.now() + probeMs;
      }
      try {
        const result = await command(client);
        goUp();
        return result;
      } catch (err) {
        unavailable.inc();
        goDown(err instanceof Error ? err.message : String(err));
        throw new RedisUnavailable(`Redis command failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    connected(timeoutMs = 2_000) {
      if (everReady) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        client.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
    state: () => (down ? 'down' : 'ok'),
    async close() {
      closing = true;
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}
