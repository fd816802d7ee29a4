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
  rateLimitPerMinute: env.integer('PROPERTY_RATE_LIMIT_PER_MINUTE', 'API requests per minute per API key (429 beyond); per process, or shared by every instance through `REDIS_URL`', 1000, 1, 10_000_000),
  rateLimitPerAddressPerMinute: env.integer('PROPERTY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE', 'API requests per minute per client address, with or without a key (429 beyond; the address is the proxy\'s unless `PROPERTY_TRUST_PROXY`)', 3000, 1, 10_000_000),
  registrationLimitPerHour: env.integer('PROPERTY_REGISTRATION_LIMIT_PER_HOUR', 'self-registrations (`POST /api/users` without a key) per hour per client address (429 beyond)', 20, 1, 10_000_000),
  rateLimitRedisPrefix: env.string('PROPERTY_RATE_LIMIT_REDIS_PREFIX', 'prefix of the rate-limit keys in Redis; deployments that share one Redis need different prefixes', 'property:rl'),
  trustProxy: env.boolean('PROPERTY_TRUST_PROXY', 'trust `X-Forwarded-*` headers from a reverse proxy', false),
} as const;
