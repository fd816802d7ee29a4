import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The JSON Web Tokens of the Mercure hub: HS256 (HMAC-SHA256 over a shared secret), the
 * algorithm every Mercure hub accepts by default. Only what the hub needs: sign, and verify the
 * signature, the algorithm and the `exp`/`nbf` times; anything else in a token is refused.
 */

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

export function signJwt(claims: Readonly<Record<string, unknown>>, secret: string): string {
  const body = `${HEADER}.${b64url(JSON.stringify(claims))}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

/** The claims of a valid token, or undefined (bad shape, another algorithm, bad signature, expired). */
export function verifyJwt(
  token: string,
  secret: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Record<string, unknown> | undefined {
  if (token.length > 8192) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  try {
    const h = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown };
    if (h.alg !== 'HS256') return undefined;
    const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest();
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) return undefined;
    const { exp, nbf } = claims as { exp?: unknown; nbf?: unknown };
    if (exp !== undefined && (typeof exp !== 'number' || exp <= nowSeconds)) return undefined;
    if (nbf !== undefined && (typeof nbf !== 'number' || nbf > nowSeconds)) return undefined;
    return claims as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** The topic selectors of a token's `mercure.subscribe` or `mercure.publish` claim ([] when absent or malformed). */
export function mercureSelectors(claims: Record<string, unknown> | undefined, kind: 'subscribe' | 'publish'): string[] {
  const mercure = claims?.mercure as Record<string, unknown> | undefined;
  const list = mercure?.[kind];
  return Array.isArray(list) ? list.filter((s): s is string => typeof s === 'string') : [];
}
