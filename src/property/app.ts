import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { ConfigOf } from '../platform/config/config.js';
import type { Database } from '../platform/db/database.js';
import type { Registry } from 'prom-client';
import { buildHttpApp, type MetricsExposure, type Readiness } from '../platform/http/app.js';
import { corsResponseHeaders, registerCorsPreflight, type CorsPolicy } from '../platform/http/cors.js';
import { registerAdminRoutes } from './admin/admin.routes.js';
import { randomBytes } from 'node:crypto';
import { registerDocsRoutes } from './engine/docs.routes.js';
import { renderError } from './engine/errors.js';
import { sendError } from './engine/http.js';
import { createEngine, type PaginationOptions } from './engine/operations.js';
import type { AnyDb } from './engine/persistence.js';
import { registerResourceRoutes, type CommittedWrite } from './engine/routes.js';
import type { propertyConfigSpec } from './property.config.js';
import { createMercureHub } from './mercure/hub.js';
import { MERCURE_PATH, registerMercureRoutes } from './mercure/hub.routes.js';
import { mercurePublisher } from './mercure/publisher.js';
import { writeTagsOf } from './engine/http-cache.js';
import { createVarnishPurger } from './http-cache/varnish.client.js';
import { propertyRegistry } from './registry.js';
import type { KostenSaetze } from './calculator/kaufnebenkosten.js';
import { KOSTEN_SETTINGS } from './resources/immobilie.provider.js';
import type { SecurityDatabase } from './security/account.table.js';
import { createApiKeyAuthenticator } from './security/api-key.repository.js';
import { createPropertyRateLimits, registerRateLimits, type PropertyRateLimits } from './security/rate-limits.js';

export type PropertyConfig = ConfigOf<typeof propertyConfigSpec>;

export interface PropertyAppDeps {
  readonly config: PropertyConfig;
  readonly database: Database<unknown>;
  /** The service's metrics in this process (shared with its management listener). */
  readonly registry?: Registry;
  readonly ready?: () => Promise<Readiness>;
  /** Whether the API port serves /metrics; off unless said. */
  readonly metrics?: MetricsExposure;
  /** Request budgets; in this process's memory when not given. The caller closes them. */
  readonly rateLimits?: PropertyRateLimits;
}

/** What the resources' hooks read from the configuration (see resources/immobilie.provider.ts). */
export function propertyHookSettings(config: PropertyConfig): Readonly<Record<string, unknown>> {
  const kosten: KostenSaetze = {
    notarProzent: config.notarPercent,
    grundbuchProzent: config.grundbuchPercent,
    maklerProzent: config.maklerPercent,
  };
  return { [KOSTEN_SETTINGS]: kosten };
}

export const PAGINATION = {
  pageParameter: 'page',
  itemsPerPageParameter: 'itemsPerPage',
  defaultItemsPerPage: 30,
} as const;

/** The engine's pagination settings from the configuration. */
export function paginationOptions(config: PropertyConfig): PaginationOptions {
  return {
    ...PAGINATION,
    maximumItemsPerPage: config.maxItemsPerPage,
    clientEnabled: config.paginationClientEnabled,
    clientPartial: config.paginationClientPartial,
    unpaginatedMaximum: config.maxUnpaginatedItems,
    countCap: config.countCap,
  };
}

/** Builds the property service's Fastify app (no listen): the engine over the resource registry. */
function httpOptions(config: PropertyConfig) {
  return {
    prefix: propertyRegistry.prefix,
    hydraPrefix: config.hydraPrefix,
    publicUrl: config.publicUrl?.replace(/\/+$/, ''),
    fallbackOrigin: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`,
    ...(config.mercureEnabled ? { mercureHubPath: MERCURE_PATH } : {}),
  };
}

/** The service's error mapper for listeners other than the API (the management port). */
export function propertyErrorRenderer(
  config: PropertyConfig,
): (err: Error, request: FastifyRequest, reply: FastifyReply) => unknown {
  const http = httpOptions(config);
  return (err, request, reply) => sendError(request, reply, err, http);
}

export async function buildPropertyApp({
  config,
  database,
  registry,
  ready,
  metrics,
  rateLimits,
}: PropertyAppDeps): Promise<FastifyInstance> {
  const http = httpOptions(config);
  const app = buildHttpApp({
    name: 'property',
    index: {
      api: `${http.prefix}`,
      docs: `${http.prefix}/docs.html`,
      openapi: `${http.prefix}/docs.json`,
      admin: '/admin',
    },
    logLevel: config.logLevel,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    ready: ready ?? (async () => (await database.ping(), { database: 'ok' })),
    ...(registry ? { registry } : {}),
    ...(metrics ? { metrics } : {}),
    requestTimeout: config.requestTimeoutMs,
    frameworkErrors: (err, request, reply) => sendError(request, reply, err, http),
    // Before there is a request, there is no Accept header to negotiate: the default format.
    clientErrorBody: (status, message) => {
      const rendered = renderError(status, message, undefined, 'jsonld', http.hydraPrefix, http.prefix);
      return { contentType: rendered.contentType, body: JSON.stringify(rendered.body) };
    },
  });
  const User = propertyRegistry.byShortName('User');
  registerRateLimits(app, rateLimits ?? createPropertyRateLimits(config), {
    prefix: propertyRegistry.prefix,
    registrationPath: User?.path ?? `${propertyRegistry.prefix}/users`,
  });
  const db = database.db as AnyDb;
  const engine = createEngine({
    registry: propertyRegistry,
    db,
    pagination: paginationOptions(config),
    settings: propertyHookSettings(config),
  });
  const cors: CorsPolicy = {
    origins: config.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: [
      'Content-Type',
      'Authorization',
      'X-API-KEY',
      'Accept',
      'If-None-Match',
      'If-Match',
      'X-Request-Id',
    ],
    exposedHeaders: ['Link', 'Location', 'Content-Location', 'ETag', 'Accept-Patch', 'X-Request-Id'],
    maxAgeSeconds: 3600,
  };
  const usersPath = User?.path ?? `${propertyRegistry.prefix}/users`;
  const authenticate = createApiKeyAuthenticator(database.db as Kysely<SecurityDatabase>);
  // After each committed write, one hook: the Mercure update (decision 0038; not awaited) and the
  // shared caches' purge (decision 0047; awaited, so the writer's next read through the cache is fresh).
  const afterCommit: ((write: CommittedWrite) => void | Promise<void>)[] = [];
  if (config.mercureEnabled) {
    // The Mercure hub (decision 0038): updates travel through the database's signal to every instance.
    const mercureSecret = config.mercureJwtSecret ?? randomBytes(32).toString('hex');
    if (mercureSecret.length < 32) throw new Error('PROPERTY_MERCURE_JWT_SECRET must have at least 32 characters');
    const hub = createMercureHub({ database, log: app.log });
    await hub.start();
    app.addHook('preClose', async () => hub.close());
    afterCommit.push(mercurePublisher(hub, propertyRegistry, http, usersPath));
    registerMercureRoutes(app, {
      ...http,
      hub,
      secret: mercureSecret,
      authenticate,
      usersPath,
      tokenTtlSeconds: config.mercureTokenTtlSeconds,
    });
  }
  if (config.httpCachePurgeUrls.length) {
    const purger = createVarnishPurger({
      urls: config.httpCachePurgeUrls,
      timeoutMs: config.httpCachePurgeTimeoutMs,
      log: app.log,
      ...(registry ? { registry } : {}),
    });
    app.addHook('onClose', async () => purger.close());
    const writeTags = writeTagsOf(propertyRegistry);
    afterCommit.push(({ resource, operation, item }) => {
      const tags = writeTags(resource, operation, item);
      return tags.length ? purger.purge(tags) : undefined;
    });
  }
  registerResourceRoutes(app, {
    ...http,
    corsHeaders: corsResponseHeaders(cors),
    engine,
    ...(afterCommit.length ? { onWrite: joinHooks(afterCommit) } : {}),
    authenticate,
    pageParameter: PAGINATION.pageParameter,
    httpCache: { maxAge: config.httpCacheMaxAge, sharedMaxAge: config.httpCacheSharedMaxAge },
    varyForwarded: config.trustProxy && !http.publicUrl,
  });
  registerDocsRoutes(app, {
    ...http,
    registry: propertyRegistry,
    maximumItemsPerPage: config.maxItemsPerPage,
    clientPagination: {
      clientEnabled: config.paginationClientEnabled,
      clientPartial: config.paginationClientPartial,
      unpaginatedMaximum: config.maxUnpaginatedItems,
    },
  });
  registerAdminRoutes(app, {
    path: '/admin',
    entrypoint: propertyRegistry.prefix,
    title: propertyRegistry.title,
    directory: config.adminDir,
  });
  await registerCorsPreflight(app, cors);
  return app;
}

/** Runs every after-commit hook; the answer waits for those that return a promise. */
function joinHooks(
  hooks: readonly ((write: CommittedWrite) => void | Promise<void>)[],
): (write: CommittedWrite) => void | Promise<void> {
  if (hooks.length === 1) return hooks[0] as (write: CommittedWrite) => void | Promise<void>;
  return (write) => {
    const waits = hooks.map((hook) => hook(write)).filter((r): r is Promise<void> => r instanceof Promise);
    return waits.length ? Promise.all(waits).then(() => undefined) : undefined;
  };
}
