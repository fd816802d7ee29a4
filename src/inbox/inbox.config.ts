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
  // Outbound mail through the relay (src/inbox/outbound/, docs/decisions/0006-outbound-mail.md).
  smtpRelayRetryHours: env.integer('INBOX_SMTP_RELAY_RETRY_HOURS', 'how long mail the relay defers (4xx) or cannot take (connection failures) is retried before it bounces, hours; 0 bounces at the first failure', 48, 0, 720),
  smtpRelayTimeoutMs: env.integer('INBOX_SMTP_RELAY_TIMEOUT_MS', 'time the relay has to accept the connection, greet and answer each command, ms', 60_000, 500, 600_000),
  smtpRelayMaxConnections: env.integer('INBOX_SMTP_RELAY_MAX_CONNECTIONS', 'connections to the relay that a worker process keeps open and sends over in parallel', 5, 1, 100),
  smtpRelayTlsCa: env.optionalString('INBOX_SMTP_RELAY_TLS_CA', "path of a PEM file of certificate authorities trusted for the relay's TLS certificate, besides the system ones"),
  dkimSelector: env.optionalString('INBOX_DKIM_SELECTOR', 'DKIM selector (`s=`) of outbound mail; set together with `INBOX_DKIM_PRIVATE_KEY`'),
  dkimPrivateKey: env.optionalString('INBOX_DKIM_PRIVATE_KEY', 'DKIM signing key (RSA or Ed25519): PEM text, or the path of a PEM file; never logged'),
  dkimDomains: env.list('INBOX_DKIM_DOMAINS', 'comma-separated domains whose outbound mail is DKIM-signed (`d=`); unset signs for every domain of `INBOX_DOMAINS`', []),
  roles: env.list('INBOX_ROLES', 'process roles to run: `api` (HTTP) and `worker` (webhook deliveries, outbound mail)', ['api', 'worker']),
} as const;
