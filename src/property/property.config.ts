import { env } from '../platform/config/config.js';
import { sharedConfigSpec } from '../platform/config/shared.config.js';

export const propertyConfigSpec = {
  ...sharedConfigSpec,
  port: env.port('PROPERTY_PORT', 'property HTTP API port', 3001),
  databaseUrl: env.optionalString('PROPERTY_DATABASE_URL', '`postgres://…` for PostgreSQL (`?schema=name` selects a schema), or `sqlite:/path/file.db`', 'SQLite in `DATA_DIR` (`property.db`)'),
  databasePoolSize: env.integer('PROPERTY_DATABASE_POOL_SIZE', 'PostgreSQL connection pool size', 10, 1, 200),
  publicUrl: env.url('PROPERTY_PUBLIC_URL', 'absolute base URL used in links (`Link` header, `@vocab`) instead of the request Host, e.g. `https://api.example.org`', ['http:', 'https:'], 'unset (from each request)'),
  hydraPrefix: env.boolean('PROPERTY_HYDRA_PREFIX', 'JSON-LD spelling: `true` = API Platform 3.x (`hydra:member`), `false` = 4.x (`member`)', true),
  maxItemsPerPage: env.integer('PROPERTY_MAX_ITEMS_PER_PAGE', 'largest accepted `itemsPerPage` (larger values are clamped)', 100, 1, 10_000),
  corsOrigins: env.list('PROPERTY_CORS_ORIGINS', 'origins allowed by CORS, comma-separated; `*` allows any', ['*']),
  bodyLimit: env.integer('PROPERTY_BODY_LIMIT', 'largest accepted request body in bytes', 1024 * 1024, 1024, 100 * 1024 * 1024),
  notarPercent: env.decimal('PROPERTY_NOTAR_PERCENT', 'notary fees in percent of the purchase price, for the computed `kaufnebenkosten`', 1.5, 0, 100),
  grundbuchPercent: env.decimal('PROPERTY_GRUNDBUCH_PERCENT', 'land registry fees in percent of the purchase price, for the computed `kaufnebenkosten`', 0.5, 0, 100),
  maklerPercent: env.decimal('PROPERTY_MAKLER_PERCENT', "broker commission (buyer's share) in percent of the purchase price; `0` = no broker, `makler` is then absent", 3.57, 0, 100),
  trustProxy: env.boolean('PROPERTY_TRUST_PROXY', 'trust `X-Forwarded-*` headers from a reverse proxy', false),
} as const;
