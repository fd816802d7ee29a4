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

/**
 * A UUID of version 7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Ids made in
 * time order land at the right edge of a B-tree index instead of on random pages, so inserting
 * them touches, and a commit writes, a few pages instead of one per row.
 */
export function timeOrderedUuid(now: Date, ids: Ids): string {
  const ms = now.getTime().toString(16).padStart(12, '0').slice(-12);
  // The random hex digits of a version 4 UUID (all but its version and variant digits).
  const v4 = ids.uuid().replace(/-/g, '');
  const r = v4.slice(0, 12) + v4.slice(13, 16) + v4.slice(17);
  const variant = ((parseInt(r[3] as string, 16) & 0x3) | 0x8).toString(16);
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}

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
