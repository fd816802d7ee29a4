import { ValidationError } from '../../platform/errors/app-error.js';

/**
 * Custom delivery headers (webhooks.updateHeaders, `headers` on create): names are RFC 9110
 * tokens, values visible ASCII with inner spaces or tabs (no CR, LF or NUL: no header injection),
 * and no name the delivery sets itself (the signature headers and the framing ones) — those are
 * never overridden. Values are write-only: reads return the names only, and no log line holds them.
 */
export const MAX_CUSTOM_HEADERS = 20;
const MAX_NAME = 256;
const MAX_VALUE = 4096;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const VALUE = /^[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?$/;

/** Set by every delivery: the signature (Svix and Standard Webhooks names) and the request's framing. */
export const RESERVED_HEADERS = new Set([
  'svix-id',
  'svix-timestamp',
  'svix-signature',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'host',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'expect',
  'user-agent',
]);

function invalid(field: string, message: string, code = 'INVALID_HEADER'): never {
  throw new ValidationError(`${field}: ${message}`, field, code);
}

export function checkHeaderName(field: string, name: string): string {
  if (typeof name !== 'string' || !name.length || name.length > MAX_NAME || !TOKEN.test(name))
    invalid(field, `${JSON.stringify(String(name).slice(0, 64))} is not a valid HTTP header name.`);
  if (RESERVED_HEADERS.has(name.toLowerCase()))
    invalid(field, `${name} is set by every delivery and cannot be replaced.`, 'RESERVED_HEADER');
  return name;
}

/** Checks a headers map; the error names the header, never its value. */
export function checkHeaders(field: string, headers: Readonly<Record<string, unknown>>): Record<string, string> {
  const entries = Object.entries(headers);
  if (!entries.length) invalid(field, 'must contain at least one header when given.', 'EMPTY_HEADERS');
  const seen = new Set<string>();
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    checkHeaderName(field, name);
    const key = name.toLowerCase();
    if (seen.has(key)) invalid(field, `${name} is named twice (header names are case-insensitive).`);
    seen.add(key);
    if (typeof value !== 'string' || value.length > MAX_VALUE || !VALUE.test(value))
      invalid(
        field,
        `the value of ${name} must be 1 to ${MAX_VALUE} visible ASCII characters (inner spaces and tabs allowed; no CR, LF or other control characters).`,
      );
    out[name] = value;
  }
  return out;
}

/** Merges a change into the current headers: names compare case-insensitively; a set name replaces any spelling of it. */
export function mergeHeaders(
  current: Readonly<Record<string, string>> | null,
  set: Readonly<Record<string, string>>,
  remove: readonly string[],
): Record<string, string> {
  const drop = new Set([...remove, ...Object.keys(set)].map((n) => n.toLowerCase()));
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(current ?? {})) if (!drop.has(name.toLowerCase())) merged[name] = value;
  Object.assign(merged, set);
  if (Object.keys(merged).length > MAX_CUSTOM_HEADERS)
    invalid('headers', `a webhook may carry at most ${MAX_CUSTOM_HEADERS} custom headers.`, 'TOO_MANY_HEADERS');
  return merged;
}

/** The headers of one delivery: the custom ones first, then the delivery's own, which always win. */
export function deliveryHeaders(
  custom: Readonly<Record<string, string>> | null,
  own: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(custom ?? {}))
    if (!RESERVED_HEADERS.has(name.toLowerCase())) out[name] = value;
  return { ...out, ...own };
}
