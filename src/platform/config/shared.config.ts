import { env } from './config.js';

/** Settings every process reads, whichever service it runs. */
export const sharedConfigSpec = {
  host: env.string('HOST', 'listen address of every listener', '127.0.0.1'),
  dataDir: env.string('DATA_DIR', 'where SQLite files (and stored mail) live', './data'),
  logLevel: env.oneOf(
    'LOG_LEVEL',
    'pino log level',
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    'info',
  ),
  requestTimeoutMs: env.integer(
    'REQUEST_TIMEOUT_MS',
    'time an HTTP client has to send the headers of a request, and again its body, ms; 408 and the connection closed beyond, however steadily bytes trickle in',
    60_000,
    100,
    3_600_000,
  ),
  verifyStatementCache: env.boolean(
    'DB_VERIFY_STATEMENT_CACHE',
    'compile every compiled-once statement again on each run and fail when its SQL or parameters differ from the cached ones (tests; slower)',
    false,
  ),
  preparedStatements: env.boolean(
    'DB_PREPARED_STATEMENTS',
    'PostgreSQL: keep the statements a process runs often prepared on each connection, so the server parses and plans them once; turn off behind a pooler that hands each transaction another server connection without tracking prepared statements (PgBouncer in transaction mode before 1.21)',
    true,
  ),
  redisUrl: env.url(
    'REDIS_URL',
    'shared rate-limit state for several instances (optional); while Redis is down each process counts on its own (see docs/deploy.md)',
    ['redis:', 'rediss:'],
  ),
  metricsToken: env.optionalString(
    'METRICS_TOKEN',
    'bearer token that GET /metrics requires (`Authorization: Bearer …`); with it /metrics is also served on the API port, without it only on the management port',
    'unset (no token)',
  ),
} as const;
