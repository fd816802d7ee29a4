import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { ConfigOf } from '../platform/config/config.js';
import type { Database } from '../platform/db/database.js';
import { buildHttpApp } from '../platform/http/app.js';
import { corsResponseHeaders, registerCorsPreflight, type CorsPolicy } from '../platform/http/cors.js';
import { registerDocsRoutes } from './engine/docs.routes.js';
import { sendError } from './engine/http.js';
import { createEngine } from './engine/operations.js';
import type { AnyDb } from './engine/persistence.js';
import { registerResourceRoutes } from './engine/routes.js';
import type { propertyConfigSpec } from './property.config.js';
import { propertyRegistry } from './registry.js';
import type { KostenSaetze } from './calculator/kaufnebenkosten.js';
import { KOSTEN_SETTINGS } from './resources/immobilie.provider.js';
import type { SecurityDatabase } from './security/account.table.js';
import { createApiKeyAuthenticator } from './security/api-key.repository.js';

export type PropertyConfig = ConfigOf<typeof propertyConfigSpec>;

export interface PropertyAppDeps {
  readonly config: PropertyConfig;
  readonly database: Database<unknown>;
}

/** What the resources' hooks read from the configuration (see resources/immobilie.provider.ts). */
export function propertyHookSettings(config: PropertyConfig): Readonly<Record<string, unknown>> {
  const kosten: KostenSaetze = { notarProzent: config.notarPercent, grundbuchProzent: config.grundbuchPercent, maklerProzent: config.maklerPercent };
  return { [KOSTEN_SETTINGS]: kosten };
}

export const PAGINATION = { pageParameter: 'page', itemsPerPageParameter: 'itemsPerPage', defaultItemsPerPage: 30 } as const;

/** Builds the property service's Fastify app (no listen): the engine over the resource registry. */
export async function buildPropertyApp({ config, database }: PropertyAppDeps): Promise<FastifyInstance> {
  const http = {
    prefix: propertyRegistry.prefix,
    hydraPrefix: config.hydraPrefix,
    publicUrl: config.publicUrl?.replace(/\/+$/, ''),
    fallbackOrigin: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`,
  };
  const app = buildHttpApp({
    name: 'property',
    logLevel: config.logLevel,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    ready: () => database.ping(),
    frameworkErrors: (err, request, reply) => sendError(request, reply, err, http),
  });
  const db = database.db as AnyDb;
  const engine = createEngine({
    registry: propertyRegistry,
    db,
    pagination: { ...PAGINATION, maximumItemsPerPage: config.maxItemsPerPage },
    settings: propertyHookSettings(config),
  });
  const cors: CorsPolicy = {
    origins: config.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-API-KEY', 'Accept', 'If-None-Match', 'If-Match', 'X-Request-Id'],
    exposedHeaders: ['Link', 'Location', 'Content-Location', 'ETag', 'Accept-Patch', 'X-Request-Id'],
    maxAgeSeconds: 3600,
  };
  registerResourceRoutes(app, {
    ...http,
    corsHeaders: corsResponseHeaders(cors),
    engine,
    authenticate: createApiKeyAuthenticator(database.db as Kysely<SecurityDatabase>),
    pageParameter: PAGINATION.pageParameter,
  });
  registerDocsRoutes(app, { ...http, registry: propertyRegistry, maximumItemsPerPage: config.maxItemsPerPage });
  await registerCorsPreflight(app, cors);
  return app;
}
