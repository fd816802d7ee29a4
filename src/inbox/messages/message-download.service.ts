import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import type { Ids } from '../../platform/ids.js';
import type { InboxDatabase } from '../schema/database.js';
import { DownloadLinkExpiredError, DownloadLinkInvalidError } from '../core/message.errors.js';
import { findServiceSecret, insertServiceSecretIfAbsent } from '../mailstore/message.repository.js';

export const DOWNLOAD_SIGNING_KEY = 'download_signing_key';

export type DownloadTarget =
  | { readonly kind: 'attachment'; readonly messagePk: number; readonly attachmentId: string }
  | { readonly kind: 'raw'; readonly messagePk: number }
  /** An attachment of a draft (drafts/): its bytes wait in draft_attachments until the draft is sent. */
  | { readonly kind: 'draft-attachment'; readonly draftPk: number; readonly attachmentId: string };

export interface DownloadLinksDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly ttlSeconds: number;
}

/**
 * Signed, short-lived download tokens: `<payload>.<signature>`, both base64url, where the payload
 * names what may be downloaded and until when, and the signature is HMAC-SHA256 under a key the
 * service generates once and keeps in `service_secrets` (so every instance and restart agrees).
 * A token is a capability: whoever holds it may fetch those bytes until it expires, without a key.
 */
export function createDownloadLinks({ db, clock, ids, ttlSeconds }: DownloadLinksDeps) {
  let key: Promise<Buffer> | undefined;

  async function loadKey(): Promise<Buffer> {
    let secret = await findServiceSecret(db, DOWNLOAD_SIGNING_KEY);
    if (secret === undefined) {
      await insertServiceSecretIfAbsent(db, DOWNLOAD_SIGNING_KEY, ids.token(32));
      secret = await findServiceSecret(db, DOWNLOAD_SIGNING_KEY);
    }
    if (secret === undefined) throw new Error('download signing key could not be stored');
    return Buffer.from(secret, 'base64url');
  }

  function signingKey(): Promise<Buffer> {
    key ??= loadKey().catch((err: unknown) => {
      key = undefined;
      throw err;
    });
    return key;
  }

  const mac = (k: Buffer, payload: string) => createHmac('sha256', k).update(`v1.${payload}`).digest();

  return {
    async sign(target: DownloadTarget): Promise<{ token: string; expiresAt: string }> {
      const expires = Math.floor(clock.now().getTime() / 1000) + ttlSeconds;
      const fields =
        target.kind === 'attachment'
          ? ['a', target.messagePk, target.attachmentId, expires]
          : target.kind === 'draft-attachment'
            ? ['d', target.draftPk, target.attachmentId, expires]
            : ['r', target.messagePk, expires];
      const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
      const signature = mac(await signingKey(), payload).toString('base64url');
      return { token: `${payload}.${signature}`, expiresAt: new Date(expires * 1000).toISOString() };
    },

    /** What the token grants; a forged or altered token is invalid (404), an old one expired (410). */
    async verify(token: string): Promise<DownloadTarget> {
      const [payload, signature, extra] = token.split('.');
      if (!payload || !signature || extra !== undefined) throw new DownloadLinkInvalidError();
      const expected = mac(await signingKey(), payload);
      const given = Buffer.from(signature, 'base64url');
      if (
        given.length !== expected.length ||
        !timingSafeEqual(given, expected) ||
        given.toString('base64url') !== signature
      )
        throw new DownloadLinkInvalidError();
      let fields: unknown;
      try {
        fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      } catch {
        throw new DownloadLinkInvalidError();
      }
      if (!Array.isArray(fields)) throw new DownloadLinkInvalidError();
      const expires = fields[fields.length - 1];
      let target: DownloadTarget;
      if (fields[0] === 'a' && fields.length === 4 && Number.isInteger(fields[1]) && typeof fields[2] === 'string')
        target = { kind: 'attachment', messagePk: fields[1] as number, attachmentId: fields[2] };
      else if (fields[0] === 'd' && fields.length === 4 && Number.isInteger(fields[1]) && typeof fields[2] === 'string')
        target = { kind: 'draft-attachment', draftPk: fields[1] as number, attachmentId: fields[2] };
      else if (fields[0] === 'r' && fields.length === 3 && Number.isInteger(fields[1]))
        target = { kind: 'raw', messagePk: fields[1] as number };
      else throw new DownloadLinkInvalidError();
      if (typeof expires !== 'number' || expires * 1000 <= clock.now().getTime()) throw new DownloadLinkExpiredError();
      return target;
    },
  };
}

export type DownloadLinks = ReturnType<typeof createDownloadLinks>;
