import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
// mailauth loads with the first message signed, not at start.
const loadSigner = async () => (await import('mailauth/lib/dkim/sign.js')).dkimSign;

/**
 * DKIM signing of outbound mail (RFC 6376, relaxed/relaxed), with mailauth's signer. The key
 * lives only in this module's closure: it is never part of an object that reaches a log line
 * or an error message.
 */

export interface DkimConfig {
  readonly domains: readonly string[];
  readonly dkimSelector: string | undefined;
  readonly dkimPrivateKey: string | undefined;
  readonly dkimDomains: readonly string[];
}

export interface DkimSigner {
  /** The lower-cased domains whose mail is signed. */
  readonly domains: readonly string[];
  readonly selector: string;
  readonly algorithm: DkimAlgorithm;
  /** The message with a DKIM-Signature header in front when `domain` is signed for; else unchanged. */
  sign(raw: Buffer, domain: string, at: Date): Promise<Buffer>;
}

export type DkimAlgorithm = 'rsa-sha256' | 'ed25519-sha256';

// RFC 6376 §3.1: a selector is dot-separated domain labels.
const SELECTOR = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
/** Verifiers (mailauth among them) refuse shorter RSA keys. */
const MIN_RSA_BITS = 1024;

/** PEM text as given, or read from a file; `\n` escapes are undone for keys set on one line. */
function readKeyText(value: string, problems: string[]): string | undefined {
  const text = value.trim();
  if (text.startsWith('-----BEGIN')) return text.replace(/\\n/g, '\n');
  try {
    return readFileSync(text, 'utf8');
  } catch (err) {
    // Never the value itself: what failed as a path may be the key, mangled (quoted, without its
    // BEGIN line, base64 on one line); only the error code and the length say what it was.
    problems.push(
      `INBOX_DKIM_PRIVATE_KEY is neither PEM text (starting with -----BEGIN) nor the path of a readable file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}; a value of ${text.length} characters, not shown)`,
    );
    return undefined;
  }
}

function parseKey(pem: string, problems: string[]): { key: KeyObject; algorithm: DkimAlgorithm } | undefined {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    problems.push('INBOX_DKIM_PRIVATE_KEY is not a PEM private key');
    return undefined;
  }
  if (key.asymmetricKeyType === 'ed25519') return { key, algorithm: 'ed25519-sha256' };
  if (key.asymmetricKeyType !== 'rsa') {
    problems.push(
      `INBOX_DKIM_PRIVATE_KEY must be an RSA or Ed25519 key, got ${key.asymmetricKeyType ?? 'an unknown type'}`,
    );
    return undefined;
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) {
    problems.push(
      `INBOX_DKIM_PRIVATE_KEY is a ${bits}-bit RSA key; verifiers refuse keys under ${MIN_RSA_BITS} bits (use 2048)`,
    );
    return undefined;
  }
  return { key, algorithm: 'rsa-sha256' };
}

function signedDomains(config: DkimConfig, problems: string[]): string[] {
  const local = config.domains.map((d) => d.toLowerCase());
  const chosen = config.dkimDomains.length ? config.dkimDomains.map((d) => d.toLowerCase()) : local;
  // Mail leaves only From an inbox address, so a signature for another domain would never be used.
  for (const d of chosen)
    if (!local.includes(d)) problems.push(`INBOX_DKIM_DOMAINS names "${d}", which is not one of INBOX_DOMAINS`);
  return [...new Set(chosen)];
}

/**
 * The signer the settings describe, or undefined when DKIM is off (no selector and no key).
 * Adds every problem it finds to `problems` (the caller reports them together).
 */
export function dkimSignerFrom(config: DkimConfig, problems: string[]): DkimSigner | undefined {
  const { dkimSelector: selector, dkimPrivateKey: keySetting } = config;
  if (selector === undefined && keySetting === undefined) {
    if (config.dkimDomains.length)
      problems.push('INBOX_DKIM_DOMAINS is set, but INBOX_DKIM_SELECTOR and INBOX_DKIM_PRIVATE_KEY are not');
    return undefined;
  }
  if (selector === undefined) problems.push('INBOX_DKIM_PRIVATE_KEY is set without INBOX_DKIM_SELECTOR');
  else if (!SELECTOR.test(selector))
    problems.push(`INBOX_DKIM_SELECTOR must be a DNS label or dot-separated labels, got "${selector}"`);
  if (keySetting === undefined) problems.push('INBOX_DKIM_SELECTOR is set without INBOX_DKIM_PRIVATE_KEY');
  const pem = keySetting === undefined ? undefined : readKeyText(keySetting, problems);
  const parsed = pem === undefined ? undefined : parseKey(pem, problems);
  const domains = signedDomains(config, problems);
  if (!parsed || selector === undefined || !SELECTOR.test(selector)) return undefined;
  return createDkimSigner({ selector, key: parsed.key, algorithm: parsed.algorithm, domains });
}

/** Signs `raw` (RFC 6376, relaxed/relaxed) and puts the DKIM-Signature header in front. */
async function signWith(
  raw: Buffer,
  key: { signingDomain: string; selector: string; privateKey: string; algorithm: DkimAlgorithm },
  at: Date,
): Promise<Buffer> {
  const { signingDomain, selector, privateKey, algorithm } = key;
  // mailauth signs with the entries of signatureData; the top-level fields only satisfy its types.
  const result = await (
    await loadSigner()
  )(raw, {
    canonicalization: 'relaxed/relaxed',
    algorithm,
    signTime: at,
    signingDomain,
    selector,
    privateKey,
    signatureData: [{ signingDomain, selector, privateKey, algorithm, canonicalization: 'relaxed/relaxed' }],
  });
  const error = result.errors?.[0];
  if (error) throw new Error(`DKIM signing for ${signingDomain} failed: ${error.message}`);
  return Buffer.concat([Buffer.from(result.signatures, 'utf8'), raw]);
}

export function createDkimSigner(options: {
  selector: string;
  key: KeyObject;
  algorithm: DkimAlgorithm;
  domains: readonly string[];
}): DkimSigner {
  const { selector, algorithm, domains } = options;
  // PKCS#8 PEM whatever the input was (PKCS#1 RSA keys too): the one form mailauth takes for both key types.
  const privateKey = options.key.export({ type: 'pkcs8', format: 'pem' }).toString();
  return {
    domains,
    selector,
    algorithm,
    async sign(raw, domain, at) {
      const signingDomain = domain.toLowerCase();
      if (!domains.includes(signingDomain)) return raw;
      return signWith(raw, { signingDomain, selector, privateKey, algorithm }, at);
    },
  };
}

/** A custom domain's own key (domains/): `d=` is the verified domain, which may be a parent of the sender's. */
export interface DomainKey {
  readonly signingDomain: string;
  readonly selector: string;
  /** PKCS#8 PEM, RSA. */
  readonly privateKeyPem: string;
}

/**
 * Mail of a custom domain signed with that domain's key (`keyOf` answers for verified domains);
 * any other mail as `service` signs it (INBOX_DKIM_*), or unsigned without it.
 */
export function withDomainKeys(
  service: DkimSigner | undefined,
  keyOf: (domain: string) => Promise<DomainKey | undefined>,
): DkimSigner {
  return {
    domains: service?.domains ?? [],
    selector: service?.selector ?? '',
    algorithm: service?.algorithm ?? 'rsa-sha256',
    async sign(raw, domain, at) {
      const own = service?.domains.includes(domain.toLowerCase()) ? undefined : await keyOf(domain);
      if (!own) return service ? service.sign(raw, domain, at) : raw;
      return signWith(
        raw,
        {
          signingDomain: own.signingDomain,
          selector: own.selector,
          privateKey: own.privateKeyPem,
          algorithm: 'rsa-sha256',
        },
        at,
      );
    },
  };
}

/** The TXT record to publish at `<selector>._domainkey.<domain>` for a key (private or public). */
export function dkimDnsRecord(key: KeyObject, algorithm: DkimAlgorithm): string {
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  // Ed25519 records carry the raw 32-byte key (RFC 8463), RSA records the DER SubjectPublicKeyInfo.
  const p = algorithm === 'ed25519-sha256' ? spki.subarray(spki.length - 32) : spki;
  return `v=DKIM1; k=${algorithm === 'ed25519-sha256' ? 'ed25519' : 'rsa'}; p=${p.toString('base64')}`;
}
