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

/** How many characters of a secret path segment a log line keeps: enough to tell two apart. */
export const SECRET_SEGMENT_SHOWN = 6;

/**
 * The path of a request URL as it may be logged: no query string (filters are harmless, but
 * signed download URLs are not), and the segment after each of `secretPathPrefixes` (a
 * capability token in the path) cut to its first few characters.
 */
export function loggablePath(url: string | undefined, secretPathPrefixes: readonly string[] = []): string | undefined {
  if (url === undefined) return undefined;
  const path = url.split('?')[0] as string;
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape: match on the raw path.
  }
  for (const prefix of secretPathPrefixes) {
    if (decoded.startsWith(prefix) && decoded.length > prefix.length + SECRET_SEGMENT_SHOWN)
      return `${prefix}${decoded.slice(prefix.length, prefix.length + SECRET_SEGMENT_SHOWN)}…`;
  }
  return path;
}

export function loggerOptions(level: string, name: string, secretPathPrefixes: readonly string[] = []): LoggerOptions {
  return {
    level,
    name,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: {
      req(req: { method?: string; url?: string; id?: string; ip?: string }) {
        return {
          id: req.id,
          method: req.method,
          url: loggablePath(req.url, secretPathPrefixes),
          remoteAddress: req.ip,
        };
      },
    },
  };
}
