import { env } from '../platform/config/config.js';
import { sharedConfigSpec } from '../platform/config/shared.config.js';

export const propertyConfigSpec = {
  ...sharedConfigSpec,
  port: env.port('PROPERTY_PORT', 'property HTTP API port', 3001),
  managementPort: env.optionalPort('PROPERTY_MANAGEMENT_PORT', 'port of the management listener (`/healthz`, `/readyz`, `/metrics`)', 'unset (none)'),
  databaseUrl: env.optionalString('PROPERTY_DATABASE_URL', '`postgres://…` for PostgreSQL (`?schema=name` selects a schema), or `sqlite:/path/file.db`', 'SQLite in `DATA_DIR` (`property.db`)'),
  databasePoolSize: env.integer('PROPERTY_DATABASE_POOL_SIZE', 'PostgreSQL connection pool size', 10, 1, 200),
  publicUrl: env.url('PROPERTY_PUBLIC_URL', 'absolute base URL used in links (`Link` header, `@vocab`) instead of the request Host, e.g. `https://api.example.org`', ['http:', 'https:'], 'unset (from each request)'),
  hydraPrefix: env.boolean('PROPERTY_HYDRA_PREFIX', 'JSON-LD spelling: `true` = API Platform 3.x (`hydra:member`), `false` = 4.x (`member`)', true),
  adminDir: env.optionalString('PROPERTY_ADMIN_DIR', 'directory of the built admin served at `/admin` (written by `npm run build`, or `npm run build:admin` alone)', '`dist/admin` of the installation'),
  maxItemsPerPage: env.integer('PROPERTY_MAX_ITEMS_PER_PAGE', 'largest accepted `itemsPerPage` (larger values are clamped)', 100, 1, 10_000),
  paginationClientEnabled: env.boolean('PROPERTY_PAGINATION_CLIENT_ENABLED', 'let clients turn pagination off with `pagination=false` (API Platform `pagination_client_enabled`)', false),
  paginationClientPartial: env.boolean('PROPERTY_PAGINATION_CLIENT_PARTIAL', 'let clients ask for partial pagination with `partial=true`: no `hydra:totalItems`, no count query (API Platform `pagination_client_partial`)', false),
  maxUnpaginatedItems: env.integer('PROPERTY_PAGINATION_MAX_UNPAGINATED', 'hard cap of `pagination=false`: a collection with more matching items answers 400', 1000, 1, 100_000),
  countCap: env.integer('PROPERTY_COUNT_CAP', 'filtered collections count at most this many matches; beyond it the page has partial pagination (no `hydra:totalItems`). Unfiltered and owner-scoped totals are always exact', 10_000, 1, 10_000_000),
  corsOrigins: env.list('PROPERTY_CORS_ORIGINS', 'origins allowed by CORS, comma-separated; `*` allows any', ['*']),
  bodyLimit: env.integer('PROPERTY_BODY_LIMIT', 'largest accepted request body in bytes', 1024 * 1024, 1024, 100 * 1024 * 1024),
  rateLimitPerMinute: env.integer('PROPERTY_RATE_LIMIT_PER_MINUTE', 'API requests per minute per API key (429 beyond); per process, or shared by every instance through `REDIS_URL`', 1000, 1, 10_000_000),
  rateLimitPerAddressPerMinute: env.integer('PROPERTY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE', 'API requests per minute per client address, with or without a key (429 beyond; the address is the proxy\'s unless `PROPERTY_TRUST_PROXY`)', 3000, 1, 10_000_000),
  registrationLimitPerHour: env.integer('PROPERTY_REGISTRATION_LIMIT_PER_HOUR', 'self-registrations (`POST /api/users` without a key) per hour per client address (429 beyond)', 20, 1, 10_000_000),
  rateLimitRedisPrefix: env.string('PROPERTY_RATE_LIMIT_REDIS_PREFIX', 'prefix of the rate-limit keys in Redis; deployments that share one Redis need different prefixes', 'property:rl'),
  notarPercent: env.decimal('PROPERTY_NOTAR_PERCENT', 'notary fees in percent of the purchase price, for the computed `kaufnebenkosten`', 1.5, 0, 100),
  grundbuchPercent: env.decimal('PROPERTY_GRUNDBUCH_PERCENT', 'land registry fees in percent of the purchase price, for the computed `kaufnebenkosten`', 0.5, 0, 100),
  maklerPercent: env.decimal('PROPERTY_MAKLER_PERCENT', "broker commission (buyer's share) in percent of the purchase price; `0` = no broker, `makler` is then absent", 3.57, 0, 100),
  trustProxy: env.boolean('PROPERTY_TRUST_PROXY', 'trust `X-Forwarded-*` headers from a reverse proxy', false),
} as const;
