import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Database } from '../platform/db/database.js';
import { buildManagementApp, metricsExposure, newMetricsRegistry, type Readiness } from '../platform/http/app.js';
import { buildPropertyApp, propertyErrorRenderer, type PropertyConfig } from './app.js';
import { loggerOptions } from '../platform/log/logger.js';
import { connectRedis, type SharedRedis } from '../platform/redis.js';
import { createPropertyRateLimits } from './security/rate-limits.js';
import { migrateProperty, openPropertyDatabase } from './open-database.js';

export { migrateProperty, openPropertyDatabase };

export interface RunningPropertyService {
  readonly app: FastifyInstance;
  readonly url: string;
  /** The management listener (`/healthz`, `/readyz`, `/metrics`), when PROPERTY_MANAGEMENT_PORT is set. */
  readonly managementUrl: string | undefined;
  readonly database: Database<unknown>;
  close(): Promise<void>;
}

/** Opens the database, migrates it, builds the app and listens: what `main.ts` and tests run. */
export async function startPropertyService(config: PropertyConfig): Promise<RunningPropertyService> {
  const database = await openPropertyDatabase(config);
  let redis: SharedRedis | undefined;
  try {
    await migrateProperty(database);
    const registry = newMetricsRegistry();
    if (config.redisUrl) {
      redis = connectRedis({ url: config.redisUrl, log: pino(loggerOptions(config.logLevel, 'property')), registry });
      await redis.connected();
    }
    const shared = redis;
    const rateLimits = createPropertyRateLimits(config, redis, registry);
    const ready = async (): Promise<Readiness> => {
      await database.ping();
      return shared ? { database: 'ok', redis: shared.state() === 'ok' ? 'ok' : 'degraded' } : { database: 'ok' };
    };
    const hasManagementPort = config.managementPort !== undefined;
    const app = await buildPropertyApp({
      config,
      database,
      registry,
      ready,
      metrics: metricsExposure(config.metricsToken, 'api', hasManagementPort),
      rateLimits,
    });
    const url = await app.listen({ host: config.host, port: config.port });
    let management: FastifyInstance | undefined;
    let managementUrl: string | undefined;
    if (config.managementPort !== undefined) {
      management = buildManagementApp({
        name: 'property',
        logLevel: config.logLevel,
        registry,
        ready,
        metrics: metricsExposure(config.metricsToken, 'management', true),
        renderError: propertyErrorRenderer(config),
      });
      managementUrl = await management
        .listen({ host: config.host, port: config.managementPort })
        .catch(async (err: unknown) => {
          await app.close();
          throw err;
        });
    }
    return {
      app,
      url,
      managementUrl,
      database,
      async close() {
        await app.close();
        await management?.close();
        await shared?.close();
        await database.destroy();
      },
    };
  } catch (err) {
    await redis?.close();
    await database.destroy();
    throw err;
  }
}
