import { Resolver } from 'node:dns/promises';
import type { AuthenticateResult, authenticate } from 'mailauth';

/**
 * SPF, DKIM and DMARC of inbound mail (mailauth), turned into the header lines a receiving MTA
 * prepends and into the labels this service defines (docs/decisions/0005-inbound-smtp.md):
 *
 * - `unauthenticated`: the From domain is not proven: DMARC did not pass and no DKIM signature
 *   aligned with the From domain verified (no DMARC record, fail, temperror, timeout, several
 *   or no From addresses).
 * - `spam`: DMARC failed and the From domain publishes `p=quarantine` or `p=reject` for all its
 *   mail (no `pct` below 100): the domain's owner asked receivers to treat such mail as suspect.
 */
export const UNAUTHENTICATED_LABEL = 'unauthenticated';
export const SPAM_LABEL = 'spam';

/** mailauth's DNS hook: `dns.promises.resolve` semantics (errors carry ENOTFOUND / ENODATA codes). */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>;

export interface AuthContext {
  /** MAIL FROM, '' for the null sender. */
  readonly sender: string;
  readonly ip: string;
  readonly helo: string;
  /** Our authserv-id: the host name of the listener. */
  readonly authservId: string;
}

export interface AuthVerdict {
  /** `Received-SPF` and `Authentication-Results` fields, each ending in CRLF, to prepend. */
  readonly headers: string;
  readonly labels: readonly string[];
  /** The DMARC result (`pass`, `fail`, `none`, `temperror`, …), for logs and tests. */
  readonly dmarc: string;
}

export type AuthVerifier = (source: Buffer, context: AuthContext) => Promise<AuthVerdict>;

/**
 * The system's resolvers (or `servers`), each query bounded: a dead DNS server costs at most the
 * verifier's budget, never an SMTP timeout at the sender.
 */
export function createDnsResolver(servers: readonly string[], timeoutMs: number): DnsResolver {
  const resolver = new Resolver({ timeout: Math.max(50, Math.min(2000, Math.floor(timeoutMs / 2))), tries: 2 });
  if (servers.length) resolver.setServers([...servers]);
  return (name, rrtype) => resolver.resolve(name, rrtype as 'TXT');
}

class AuthTimeout extends Error {}

/** A verifier over `resolver` that gives up after `timeoutMs`, answering temperror. */
/** mailauth and what it needs (certificates, DNS records, ASN.1) load with the first message verified, not at start. */
let mailauth: Promise<{ authenticate: typeof authenticate }> | undefined;

export function createAuthVerifier(options: { resolver: DnsResolver; timeoutMs: number }): AuthVerifier {
  return async (source, context) => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AuthTimeout()), options.timeoutMs);
    });
    try {
      const result = await Promise.race([
        (mailauth ??= import('mailauth')).then(({ authenticate }) =>
          authenticate(source, {
            sender: context.sender,
            ip: context.ip,
            helo: context.helo,
            mta: context.authservId,
            resolver: options.resolver as never,
            // BIMI only picks a logo; nothing here shows one, so its lookups are not worth their time.
            disableBimi: true,
          }),
        ),
        deadline,
      ]);
      return verdictOf(result);
    } catch (err) {
      // The abandoned lookups finish in the background, each bounded by the resolver's timeout.
      return temperror(
        context.authservId,
        err instanceof AuthTimeout ? `DNS lookups took over ${options.timeoutMs} ms` : 'verification failed',
      );
    } finally {
      clearTimeout(timer);
    }
  };
}

export function verdictOf(result: AuthenticateResult): AuthVerdict {
  const dmarc = result.dmarc || undefined;
  const dmarcResult = dmarc ? dmarc.status.result : 'none';
  const alignedDkim = result.dkim.results.some((r) => r.status.result === 'pass' && Boolean(r.status.aligned));
  const authenticated = dmarcResult === 'pass' || (dmarcResult === 'none' && alignedDkim);
  const labels: string[] = [];
  if (!authenticated) labels.push(UNAUTHENTICATED_LABEL);
  const policy = dmarc?.policy?.toLowerCase();
  const fullyEnforced = dmarc?.pct === undefined || Number(dmarc.pct) >= 100;
  if (dmarcResult === 'fail' && (policy === 'quarantine' || policy === 'reject') && fullyEnforced)
    labels.push(SPAM_LABEL);
  return { headers: result.headers, labels, dmarc: dmarcResult };
}

/** What a message gets when nothing could be verified (RFC 8601 `temperror`: try again later). */
export function temperror(authservId: string, reason: string): AuthVerdict {
  const comment = `(${reason.replace(/[()\\]/g, '')})`;
  const headers = `Authentication-Results: ${authservId};\r\n dkim=temperror ${comment};\r\n spf=temperror ${comment};\r\n dmarc=temperror ${comment}\r\n`;
  return { headers, labels: [UNAUTHENTICATED_LABEL], dmarc: 'temperror' };
}
