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
 * The local domains as configured, found by any spelling: `spelling(d)` is the configured
 * spelling of `d` (the one inbox ids use), or undefined when `d` is not local.
 */
export function localDomainSet(domains: readonly string[]): { has(domain: string): boolean; spelling(domain: string): string | undefined; readonly defaultDomain: string | undefined } {
  const byKey = new Map<string, string>();
  for (const d of domains) {
    const key = domainKey(d);
    if (!byKey.has(key)) byKey.set(key, d.trim().toLowerCase());
  }
  return {
    has: (domain) => byKey.has(domainKey(domain)),
    spelling: (domain) => byKey.get(domainKey(domain)),
    defaultDomain: domains[0]?.trim().toLowerCase(),
  };
}
