import type { LoggerOptions } from 'pino';

/**
 * Paths pino must never print. Credentials arrive in headers (API keys, bearer tokens) and leave
 * in bodies (a key shown once at creation); both are censored wherever a log line could hold them.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.apiKey',
  '*.api_key',
  '*.password',
  '*.secret',
  '*.databaseUrl',
  // A config object, should one ever be logged: relay credentials and DKIM keys.
  '*.smtpRelayUrl',
  '*.dkimPrivateKey',
  '*.privateKey',
  'apiKey',
  'password',
  'secret',
];

export function loggerOptions(level: string, name: string): LoggerOptions {
  return {
    level,
    name,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // Never log a query string verbatim: filters are harmless, but signed download URLs are not.
    serializers: {
      req(req: { method?: string; url?: string; id?: string; ip?: string }) {
        return { id: req.id, method: req.method, url: req.url?.split('?')[0], remoteAddress: req.ip };
      },
    },
  };
}
