import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

/** Injectable id and secret source. */
export interface Ids {
  uuid(): string;
  /** `bytes` random bytes as base64url (no padding). */
  token(bytes: number): string;
}

export const systemIds: Ids = {
  uuid: () => randomUUID(),
  token: (bytes) => randomBytes(bytes).toString('base64url'),
};

/** A secret with a recognisable prefix (so leaked keys can be scanned for) and `bytes` of entropy. */
export function newSecret(ids: Ids, prefix: string, bytes = 32): string {
  return `${prefix}${ids.token(bytes)}`;
}

/**
 * Hash for high-entropy secrets (API keys). A fast hash is right here: the keys carry 256 random
 * bits, so there is nothing to brute-force, and lookups happen on every request.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
