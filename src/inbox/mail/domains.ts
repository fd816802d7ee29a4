import { domainToASCII } from 'node:url';

/**
 * Domain names compared as DNS compares them: case-insensitively, and an internationalized name
 * the same in its Unicode and its ASCII (`xn--`) spelling. smtp-server hands over RCPT domains in
 * Unicode (it decodes punycode), while `INBOX_DOMAINS` and inbox ids may use either spelling.
 */

/** The ASCII (punycode, lower-case) form of `domain`; the lower-cased input when it is no valid name. */
export function domainKey(domain: string): string {
  const lower = domain.trim().toLowerCase();
  if (/^[\x21-\x7e]*$/.test(lower) && !/(^|\.)xn--/.test(lower)) return lower;
  return domainToASCII(lower) || lower;
}

/** The domain part of an address (after its last `@`), '' without one. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? '' : address.slice(at + 1);
}

/**
 * An address as DNS and mailboxes compare it: lower case, the domain in its ASCII form. Two
 * addresses with the same key reach the same mailbox (`A@Bücher.test`, `a@xn--bcher-kva.test`).
 */
export function addressKey(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? address.toLowerCase() : `${address.slice(0, at).toLowerCase()}@${domainKey(address.slice(at + 1))}`;
}

/**
 * The local domains as configured, found by any spelling: `spelling(d)` is the configured
 * spelling of `d` (the one inbox ids use), or undefined when `d` is not local; `inboxId(a)` the
 * inbox id an address on a local domain names (lower case, the domain as configured).
 */
export function localDomainSet(domains: readonly string[]): {
  has(domain: string): boolean;
  spelling(domain: string): string | undefined;
  inboxId(address: string): string | undefined;
  readonly defaultDomain: string | undefined;
} {
  const byKey = new Map<string, string>();
  for (const d of domains) {
    const key = domainKey(d);
    if (!byKey.has(key)) byKey.set(key, d.trim().toLowerCase());
  }
  return {
    has: (domain) => byKey.has(domainKey(domain)),
    spelling: (domain) => byKey.get(domainKey(domain)),
    inboxId: (address) => {
      const domain = byKey.get(domainKey(domainOf(address)));
      return domain === undefined ? undefined : `${address.slice(0, address.lastIndexOf('@')).toLowerCase()}@${domain}`;
    },
    defaultDomain: domains[0]?.trim().toLowerCase(),
  };
}
