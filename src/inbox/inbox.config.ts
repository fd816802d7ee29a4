import { env } from '../platform/config/config.js';
import { sharedConfigSpec } from '../platform/config/shared.config.js';

export const inboxConfigSpec = {
  ...sharedConfigSpec,
  port: env.port('INBOX_PORT', 'inbox HTTP API port', 3000),
  databaseUrl: env.optionalString('INBOX_DATABASE_URL', '`postgres://…` for PostgreSQL (`?schema=name` selects a schema), or `sqlite:/path/file.db`', 'SQLite in `DATA_DIR` (`inbox.db`)'),
  databasePoolSize: env.integer('INBOX_DATABASE_POOL_SIZE', 'PostgreSQL connection pool size', 10, 1, 200),
  domains: env.list('INBOX_DOMAINS', 'comma-separated local domains; the first is the default for new inboxes; mail to them is delivered locally', ['inbox.localhost']),
  publicUrl: env.url('INBOX_PUBLIC_URL', 'absolute base URL of the API for download links, e.g. `https://mail.example.org`', ['http:', 'https:'], 'unset (from each request)'),
  rateLimitPerMinute: env.integer('INBOX_RATE_LIMIT_PER_MINUTE', 'API requests per minute per API key (429 beyond)', 1000, 1, 10_000_000),
  sendLimitPerDay: env.integer('INBOX_SEND_LIMIT_PER_DAY', 'messages an organization may send per UTC day (429 beyond)', 10_000, 1, 100_000_000),
  maxAttachmentBytes: env.integer('INBOX_MAX_ATTACHMENT_BYTES', 'total decoded attachment size per sent message, bytes', 10 * 1024 * 1024, 0, 100 * 1024 * 1024),
  maxRecipients: env.integer('INBOX_MAX_RECIPIENTS', 'recipients (to + cc + bcc) per sent message', 50, 1, 1000),
  downloadUrlTtlSeconds: env.integer('INBOX_DOWNLOAD_URL_TTL_SECONDS', 'lifetime of signed attachment and raw-message download URLs', 900, 10, 7 * 24 * 3600),
  webhookAllowPrivate: env.boolean('INBOX_WEBHOOK_ALLOW_PRIVATE', 'allow webhook URLs on private, loopback and link-local addresses (tests, local use)', false),
  webhookTimeoutMs: env.integer('INBOX_WEBHOOK_TIMEOUT_MS', 'time a webhook receiver has to answer, ms', 15_000, 100, 120_000),
  smtpRelayUrl: env.url('INBOX_SMTP_RELAY_URL', 'SMTP relay for mail to non-local domains (`smtp://user:pass@host:port`, `smtps://` for implicit TLS); unset refuses such sends', ['smtp:', 'smtps:']),
  roles: env.list('INBOX_ROLES', 'process roles to run: `api` (HTTP) and `worker` (webhook deliveries, outbound mail)', ['api', 'worker']),
} as const;
