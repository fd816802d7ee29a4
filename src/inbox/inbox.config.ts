import { type ConfigOf, env } from '../platform/config/config.js';
import { sharedConfigSpec } from '../platform/config/shared.config.js';

export const inboxConfigSpec = {
  ...sharedConfigSpec,
  port: env.port('INBOX_PORT', 'inbox HTTP API port', 3000),
  managementPort: env.optionalPort(
    'INBOX_MANAGEMENT_PORT',
    'port of the management listener (`/healthz`, `/readyz`, `/metrics`)',
    'unset: none with the `api` role; `INBOX_PORT` without it',
  ),
  databaseUrl: env.optionalString(
    'INBOX_DATABASE_URL',
    '`postgres://…` for PostgreSQL (`?schema=name` selects a schema), or `sqlite:/path/file.db`',
    'SQLite in `DATA_DIR` (`inbox.db`)',
  ),
  databasePoolSize: env.integer('INBOX_DATABASE_POOL_SIZE', 'PostgreSQL connection pool size', 10, 1, 200),
  domains: env.list(
    'INBOX_DOMAINS',
    'comma-separated local domains; the first is the default for new inboxes; mail to them is delivered locally',
    ['inbox.localhost'],
  ),
  publicUrl: env.url(
    'INBOX_PUBLIC_URL',
    'absolute base URL of the API for download links, e.g. `https://mail.example.org`',
    ['http:', 'https:'],
    'unset (from each request)',
  ),
  rateLimitPerMinute: env.integer(
    'INBOX_RATE_LIMIT_PER_MINUTE',
    'API requests per minute per API key (429 beyond)',
    1000,
    1,
    10_000_000,
  ),
  sendLimitPerDay: env.integer(
    'INBOX_SEND_LIMIT_PER_DAY',
    'messages an organization may send per UTC day (429 beyond)',
    10_000,
    1,
    100_000_000,
  ),
  maxAttachmentBytes: env.integer(
    'INBOX_MAX_ATTACHMENT_BYTES',
    'total decoded size of the attachments one request gives inline (base64 `content`), bytes; the largest accepted request body follows from it (400 `ATTACHMENTS_TOO_LARGE` beyond)',
    10 * 1024 * 1024,
    0,
    100 * 1024 * 1024,
  ),
  // Attachments given by `url` (outgoing/attachment-urls.ts, docs/decisions/0042).
  attachmentUrlMaxBytes: env.integer(
    'INBOX_ATTACHMENT_URL_MAX_BYTES',
    'total bytes fetched for the attachments one request gives by `url` (send, reply, forward, draft), redirects followed, under the egress policy of `INBOX_WEBHOOK_ALLOW_PRIVATE` (400 `ATTACHMENT_URL_TOO_LARGE` beyond)',
    30 * 1024 * 1024,
    0,
    100 * 1024 * 1024,
  ),
  attachmentUrlTimeoutMs: env.integer(
    'INBOX_ATTACHMENT_URL_TIMEOUT_MS',
    'time one attachment `url` has to deliver its file, redirects included, ms (400 `ATTACHMENT_URL_TIMEOUT` beyond)',
    30_000,
    100,
    300_000,
  ),
  maxBodyBytes: env.integer(
    'INBOX_MAX_BODY_BYTES',
    'largest `text` and largest `html` the caller gives for one sent message (send, reply, forward), UTF-8 bytes each (400 `BODY_TOO_LARGE` beyond)',
    2 * 1024 * 1024,
    1024,
    64 * 1024 * 1024,
  ),
  maxRecipients: env.integer('INBOX_MAX_RECIPIENTS', 'recipients (to + cc + bcc) per sent message', 50, 1, 1000),
  downloadUrlTtlSeconds: env.integer(
    'INBOX_DOWNLOAD_URL_TTL_SECONDS',
    'lifetime of signed attachment and raw-message download URLs',
    900,
    10,
    7 * 24 * 3600,
  ),
  webhookAllowPrivate: env.boolean(
    'INBOX_WEBHOOK_ALLOW_PRIVATE',
    'allow webhook URLs and attachment URLs on private, loopback and link-local addresses (tests, local use); off, both are refused there, at every redirect',
    false,
  ),
  webhookTimeoutMs: env.integer(
    'INBOX_WEBHOOK_TIMEOUT_MS',
    'time a webhook receiver has to answer, ms',
    15_000,
    100,
    120_000,
  ),
  smtpRelayUrl: env.url(
    'INBOX_SMTP_RELAY_URL',
    'SMTP relay for mail to non-local domains (`smtp://user:pass@host:port`, `smtps://` for implicit TLS); unset refuses such sends',
    ['smtp:', 'smtps:'],
  ),
  // Inbound SMTP (role `smtp`): see docs/decisions/0005-inbound-smtp.md.
  smtpPort: env.port('INBOX_SMTP_PORT', 'inbound SMTP listener port (role `smtp`)', 2525),
  smtpHost: env.optionalString('INBOX_SMTP_HOST', 'listen address of the SMTP listener', 'the value of `HOST`'),
  smtpHostname: env.optionalString(
    'INBOX_SMTP_HOSTNAME',
    'name in the SMTP greeting and in the Received and Authentication-Results headers it adds',
    "the machine's host name",
  ),
  smtpTlsKey: env.optionalString(
    'INBOX_SMTP_TLS_KEY',
    'private key for STARTTLS: a PEM file path, or the PEM itself; STARTTLS is offered only with a key and a certificate',
  ),
  smtpTlsCert: env.optionalString(
    'INBOX_SMTP_TLS_CERT',
    'certificate chain for STARTTLS: a PEM file path, or the PEM itself',
  ),
  smtpMaxMessageBytes: env.integer(
    'INBOX_SMTP_MAX_MESSAGE_BYTES',
    'largest inbound message, bytes (advertised with SIZE; 552 beyond)',
    25 * 1024 * 1024,
    1024,
    200 * 1024 * 1024,
  ),
  smtpMaxRecipients: env.integer(
    'INBOX_SMTP_MAX_RECIPIENTS',
    'RCPT TO per inbound message (452 beyond; RFC 5321 asks for at least 100)',
    100,
    1,
    1000,
  ),
  smtpMaxConnections: env.integer(
    'INBOX_SMTP_MAX_CONNECTIONS',
    'concurrent SMTP connections (421 beyond)',
    500,
    1,
    100_000,
  ),
  smtpMaxConnectionsPerIp: env.integer(
    'INBOX_SMTP_MAX_CONNECTIONS_PER_IP',
    'concurrent SMTP connections from one client address (421 beyond)',
    20,
    1,
    100_000,
  ),
  smtpMaxMessagesPerConnection: env.integer(
    'INBOX_SMTP_MAX_MESSAGES_PER_CONNECTION',
    'mail transactions per SMTP connection (421 and close beyond)',
    1000,
    1,
    1_000_000,
  ),
  smtpMaxBufferedBytes: env.integer(
    'INBOX_SMTP_MAX_BUFFERED_BYTES',
    'DATA bytes all SMTP sessions together may hold in memory; a message that would go beyond gets 452 and its sender retries; at least INBOX_SMTP_MAX_MESSAGE_BYTES',
    256 * 1024 * 1024,
    1024,
    64 * 1024 * 1024 * 1024,
  ),
  smtpDataTimeoutMs: env.integer(
    'INBOX_SMTP_DATA_TIMEOUT_MS',
    'time a sender has from DATA to the final dot, however steadily it sends; 421 and the connection closed beyond',
    600_000,
    1000,
    3_600_000,
  ),
  smtpGreetingDelayMs: env.integer(
    'INBOX_SMTP_GREETING_DELAY_MS',
    'pause before the SMTP greeting; clients that talk during it are refused (early-talker check)',
    100,
    0,
    30_000,
  ),
  smtpVerifyAuth: env.boolean('INBOX_SMTP_VERIFY_AUTH', 'verify SPF, DKIM and DMARC of inbound mail (needs DNS)', true),
  smtpAuthTimeoutMs: env.integer(
    'INBOX_SMTP_AUTH_TIMEOUT_MS',
    'time budget of the SPF/DKIM/DMARC DNS lookups of one message; the message is stored as not authenticated beyond it',
    5000,
    100,
    60_000,
  ),
  smtpDnsServers: env.list(
    'INBOX_SMTP_DNS_SERVERS',
    'DNS servers (`ip` or `ip:port`, comma-separated) for SPF/DKIM/DMARC lookups',
    [],
  ),
  // Outbound mail through the relay (src/inbox/outbound/, docs/decisions/0006-outbound-mail.md).
  smtpRelayRetryHours: env.integer(
    'INBOX_SMTP_RELAY_RETRY_HOURS',
    'how long mail the relay defers (4xx) or cannot take (connection failures) is retried before it bounces, hours; 0 bounces at the first failure',
    48,
    0,
    720,
  ),
  smtpRelayTimeoutMs: env.integer(
    'INBOX_SMTP_RELAY_TIMEOUT_MS',
    'time the relay has to accept the connection, greet and answer each command, ms',
    60_000,
    500,
    600_000,
  ),
  smtpRelayMaxConnections: env.integer(
    'INBOX_SMTP_RELAY_MAX_CONNECTIONS',
    'connections to the relay that a worker process keeps open and sends over in parallel',
    5,
    1,
    100,
  ),
  smtpRelayTlsCa: env.optionalString(
    'INBOX_SMTP_RELAY_TLS_CA',
    "path of a PEM file of certificate authorities trusted for the relay's TLS certificate, besides the system ones",
  ),
  dkimSelector: env.optionalString(
    'INBOX_DKIM_SELECTOR',
    'DKIM selector (`s=`) of outbound mail; set together with `INBOX_DKIM_PRIVATE_KEY`',
  ),
  dkimPrivateKey: env.optionalString(
    'INBOX_DKIM_PRIVATE_KEY',
    'DKIM signing key (RSA or Ed25519): PEM text, or the path of a PEM file; never logged',
  ),
  dkimDomains: env.list(
    'INBOX_DKIM_DOMAINS',
    'comma-separated domains whose outbound mail is DKIM-signed (`d=`); unset signs for every domain of `INBOX_DOMAINS`',
    [],
  ),
  smtpRelayAllowPlaintextAuth: env.boolean(
    'INBOX_SMTP_RELAY_ALLOW_PLAINTEXT_AUTH',
    'send the relay credentials of an `smtp://` URL even when the relay offers no STARTTLS (they then cross the network in clear text); loopback relays are always allowed',
    false,
  ),
  // Real-time events over WebSocket (src/inbox/realtime/, docs/decisions/0015-realtime-events-over-websocket.md).
  wsMaxConnections: env.integer(
    'INBOX_WS_MAX_CONNECTIONS',
    'WebSocket connections (`/v0` real-time events) one process holds (503 beyond)',
    10_000,
    1,
    1_000_000,
  ),
  wsMaxConnectionsPerKey: env.integer(
    'INBOX_WS_MAX_CONNECTIONS_PER_KEY',
    'WebSocket connections one API key may hold on one process (429 beyond)',
    100,
    1,
    1_000_000,
  ),
  wsPingIntervalMs: env.integer(
    'INBOX_WS_PING_INTERVAL_MS',
    'interval of the WebSocket pings the server sends, ms',
    30_000,
    100,
    3_600_000,
  ),
  wsIdleTimeoutMs: env.integer(
    'INBOX_WS_IDLE_TIMEOUT_MS',
    'a WebSocket client that neither answers a ping nor sends a frame for this long is disconnected, ms (checked at each ping; at least the ping interval)',
    75_000,
    100,
    3_600_000,
  ),
  wsMaxBufferedBytes: env.integer(
    'INBOX_WS_MAX_BUFFERED_BYTES',
    'bytes of events waiting to be sent to one WebSocket client; a client that does not read beyond it is disconnected (close code 1008)',
    4 * 1024 * 1024,
    1024,
    1024 * 1024 * 1024,
  ),
  // Custom domains (src/inbox/domains/, docs/decisions/0019-custom-domains.md).
  dnsServers: env.list(
    'INBOX_DNS_SERVERS',
    'DNS servers (`ip` or `ip:port`, comma-separated) that domain verification asks for the records of custom domains',
    [],
  ),
  domainKeySecret: env.optionalString(
    'INBOX_DOMAIN_KEY_SECRET',
    'secret (at least 32 characters) that encrypts the DKIM private keys of custom domains in the database (AES-256-GCM); never logged',
    'unset: a key kept in the database itself',
  ),
  domainSpfIncludes: env.list(
    'INBOX_DOMAIN_SPF_INCLUDE',
    'comma-separated domains the SPF record asked of custom domains includes (`include:`), e.g. the SPF domain of the SMTP relay; the record always has `mx`',
    [],
  ),
  // Agent sign-up (POST /v0/agent/sign-up, /v0/agent/verify): docs/decisions/0018-pods-and-scoped-keys.md.
  agentSignup: env.boolean(
    'INBOX_AGENT_SIGNUP',
    'let agents create an organization with an inbox and a limited key (`POST /v0/agent/sign-up`); off answers 403',
    false,
  ),
  agentSignupSender: env.string(
    'INBOX_AGENT_SIGNUP_SENDER',
    'username (on the first of `INBOX_DOMAINS`) of the service inbox that mails sign-up codes',
    'no-reply',
  ),
  agentSignupPerHour: env.integer(
    'INBOX_AGENT_SIGNUP_PER_HOUR',
    'sign-up requests per client address per hour (429 beyond)',
    10,
    1,
    100_000,
  ),
  roles: env.listOf<string>(
    'INBOX_ROLES',
    'process roles to run: `api` (HTTP), `worker` (webhook deliveries, outbound mail) and `smtp` (inbound SMTP); anything else stops the process',
    ['api', 'worker', 'smtp'],
    ['api', 'worker', 'smtp'],
  ),
} as const;

export type InboxConfig = ConfigOf<typeof inboxConfigSpec>;
