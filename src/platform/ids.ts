import { hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

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

/**
 * A UUID of version 7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Ids made in
 * time order land at the right edge of a B-tree index instead of on random pages, so inserting
 * them touches, and a commit writes, a few pages instead of one per row.
 */
export function timeOrderedUuid(now: Date, ids: Ids): string {
  const ms = now.getTime().toString(16).padStart(12, '0').slice(-12);
  // The random digits of a version 4 UUID (`xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx`) after its
  // version digit: 3 hex digits, the variant digit's 2 random bits (the variant set again, should
  // an injected source not be version 4) and 15 hex digits, 74 bits, in place.
  const v4 = ids.uuid();
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${v4.slice(15, 18)}-${VARIANT[parseInt(v4.charAt(19), 16) & 3]}${v4.slice(20)}`;
}

const VARIANT = ['8', '9', 'a', 'b'];

/** A secret with a recognisable prefix (so leaked keys can be scanned for) and `bytes` of entropy. */
export function newSecret(ids: Ids, prefix: string, bytes = 32): string {
  return `${prefix}${ids.token(bytes)}`;
}

/**
 * Hash for high-entropy secrets (API keys). A fast hash is right here: the keys carry 256 random
 * bits, so there is nothing to brute-force, and lookups happen on every request.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
