import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  generateKeyPair,
  hkdfSync,
  randomBytes,
} from 'node:crypto';
import { promisify } from 'node:util';
import { dkimDnsRecord } from '../outbound/dkim.js';

/**
 * The DKIM keys of custom domains: generated per domain (RSA 2048, what every verifier takes) and
 * kept encrypted at rest with AES-256-GCM. The key-encryption key comes from
 * `INBOX_DOMAIN_KEY_SECRET` when it is set; otherwise from a random secret the service keeps in its
 * own database (which protects nothing against a copy of the database; docs/decisions/0019).
 * A sealed key names its source (`env` or `db`), so setting the secret later keeps older keys
 * readable.
 */

const generate = promisify(generateKeyPair);

export interface DomainKeyPair {
  /** PKCS#8 PEM. */
  readonly privateKeyPem: string;
  /** The TXT value to publish at `<selector>._domainkey.<domain>`. */
  readonly dnsValue: string;
}

export async function generateDomainKey(): Promise<DomainKeyPair> {
  const { privateKey } = await generate('rsa', { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    dnsValue: dkimDnsRecord(privateKey, 'rsa-sha256'),
  };
}

/** The `p=` tag of a DKIM record value, '' without one. */
export function publicKeyOf(dnsValue: string): string {
  return /(?:^|;)\s*p=([^;]*)/.exec(dnsValue)?.[1]?.replace(/\s+/g, '') ?? '';
}

export interface KeySealer {
  seal(pem: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

type Source = 'env' | 'db';

/**
 * `secret`: the setting (undefined when unset); `storedSecret`: the database's own secret, created
 * on first use.
 */
export function createKeySealer(secret: string | undefined, storedSecret: () => Promise<string>): KeySealer {
  const derive = (material: string) =>
    Buffer.from(hkdfSync('sha256', Buffer.from(material, 'utf8'), Buffer.alloc(0), 'inbox domain DKIM keys v1', 32));
  const fromEnv = secret === undefined ? undefined : derive(secret);
  let fromDb: Promise<Buffer> | undefined;
  const keyOf = (source: Source): Promise<Buffer> => {
    if (source === 'env') {
      if (!fromEnv)
        return Promise.reject(new Error('a DKIM key was sealed with INBOX_DOMAIN_KEY_SECRET, which is no longer set'));
      return Promise.resolve(fromEnv);
    }
    fromDb ??= storedSecret().then(derive, (err: unknown) => {
      fromDb = undefined;
      throw err;
    });
    return fromDb;
  };
  return {
    async seal(pem) {
      const source: Source = fromEnv ? 'env' : 'db';
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', await keyOf(source), iv);
      const body = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()]);
      return [
        'v1',
        source,
        iv.toString('base64'),
        cipher.getAuthTag().toString('base64'),
        body.toString('base64'),
      ].join(':');
    },
    async open(sealed) {
      const [version, source, iv, tag, body] = sealed.split(':');
      if (version !== 'v1' || (source !== 'env' && source !== 'db') || !iv || !tag || body === undefined)
        throw new Error('a stored DKIM key is not in a known format');
      const decipher = createDecipheriv('aes-256-gcm', await keyOf(source), Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      let pem: string;
      try {
        pem = Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
      } catch {
        // Never the sealed text: only that it did not open.
        throw new Error('a stored DKIM key could not be decrypted (was INBOX_DOMAIN_KEY_SECRET changed?)');
      }
      createPrivateKey(pem);
      return pem;
    },
  };
}
