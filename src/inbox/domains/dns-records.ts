/**
 * The DNS records a custom domain publishes for this service, how they read as a BIND zone
 * fragment, and how the answers of a DNS lookup compare with them. No I/O: the lookups go through
 * the resolver the caller hands in.
 */

export type RecordType = 'MX' | 'TXT';
export type RecordStatus = 'MISSING' | 'INVALID' | 'VALID';
export type DomainStatus = 'NOT_STARTED' | 'PENDING' | 'INVALID' | 'FAILED' | 'VERIFYING' | 'VERIFIED';

export interface ExpectedRecord {
  readonly type: RecordType;
  /** Fully qualified, without the trailing dot. */
  readonly name: string;
  readonly value: string;
  readonly priority?: number;
  /** What the check looks for. */
  readonly role: 'mx' | 'spf' | 'dkim' | 'dmarc';
}

export interface RecordCheck {
  readonly status: RecordStatus;
  /** `duplicate_records`, `value_mismatch` or `dns_lookup_failed` (the SDK's words where it has them). */
  readonly reason?: string;
}

export interface RecordSettings {
  readonly domain: string;
  readonly selector: string;
  readonly dkimValue: string;
  readonly subdomainsEnabled: boolean;
  /** The host name our MX records point at (INBOX_SMTP_HOSTNAME). */
  readonly mxHost: string;
  /** Domains the SPF record includes (INBOX_DOMAIN_SPF_INCLUDE). */
  readonly spfIncludes: readonly string[];
}

const MX_PRIORITY = 10;
export const DMARC_VALUE = 'v=DMARC1; p=none';

export function spfValue(includes: readonly string[]): string {
  return ['v=spf1', 'mx', ...includes.map((d) => `include:${d}`), '~all'].join(' ');
}

export function expectedRecords(s: RecordSettings): ExpectedRecord[] {
  const mxHost = s.mxHost.toLowerCase().replace(/\.$/, '');
  return [
    { type: 'MX', name: s.domain, value: mxHost, priority: MX_PRIORITY, role: 'mx' },
    ...(s.subdomainsEnabled
      ? [{ type: 'MX' as const, name: `*.${s.domain}`, value: mxHost, priority: MX_PRIORITY, role: 'mx' as const }]
      : []),
    { type: 'TXT', name: s.domain, value: spfValue(s.spfIncludes), role: 'spf' },
    { type: 'TXT', name: `${s.selector}._domainkey.${s.domain}`, value: s.dkimValue, role: 'dkim' },
    { type: 'TXT', name: `_dmarc.${s.domain}`, value: DMARC_VALUE, role: 'dmarc' },
  ];
}

/** The key a record's check is stored under. */
export const checkKey = (r: ExpectedRecord): string => `${r.type} ${r.name} ${r.role}`;

/** A TXT value as one or more quoted strings of at most 255 bytes (RFC 1035 §3.3.14). */
function quoted(value: string): string {
  const chunks: string[] = [];
  for (let i = 0; i < value.length; i += 255) chunks.push(`"${value.slice(i, i + 255).replace(/["\\]/g, '\\$&')}"`);
  return chunks.length === 1 ? (chunks[0] as string) : `( ${chunks.join(' ')} )`;
}

/** The records as a BIND zone file fragment: absolute names, so it can be pasted into any zone. */
export function zoneFile(domain: string, records: readonly ExpectedRecord[]): string {
  const lines = [
    `; DNS records for ${domain}: publish them, then call POST /v0/domains/${domain}/verify.`,
    '$TTL 3600',
  ];
  for (const r of records)
    lines.push(
      [`${r.name}.`, 'IN', r.type, r.type === 'MX' ? `${r.priority ?? MX_PRIORITY} ${r.value}.` : quoted(r.value)].join(
        '\t',
      ),
    );
  return `${lines.join('\n')}\n`;
}

/** `dns.promises.resolve` semantics: MX answers `{ exchange, priority }[]`, TXT answers `string[][]`. */
export type Lookup = (name: string, rrtype: 'MX' | 'TXT') => Promise<unknown>;

/** The lookup failed for a reason other than "no such record": the answer says nothing about the domain. */
export class DnsLookupError extends Error {}

const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

async function answers<T>(lookup: Lookup, name: string, rrtype: 'MX' | 'TXT'): Promise<T[]> {
  try {
    const result = await lookup(name, rrtype);
    return Array.isArray(result) ? (result as T[]) : [];
  } catch (err) {
    if (ABSENT.has((err as NodeJS.ErrnoException).code ?? '')) return [];
    throw new DnsLookupError(`${rrtype} ${name}: ${(err as NodeJS.ErrnoException).code ?? 'lookup failed'}`);
  }
}

const host = (name: string) => name.toLowerCase().replace(/\.$/, '');
const tokens = (value: string) => value.toLowerCase().split(/\s+/).filter(Boolean);
const tag = (value: string, name: string) =>
  new RegExp(`(?:^|;)\\s*${name}\\s*=\\s*([^;]*)`, 'i').exec(value)?.[1]?.replace(/\s+/g, '');

/** `found`: whether the expected record is there; `others`: records at the name that are not it. */
function one(found: boolean, others: number): RecordCheck {
  if (!found) return others ? { status: 'INVALID', reason: 'value_mismatch' } : { status: 'MISSING' };
  return others ? { status: 'INVALID', reason: 'duplicate_records' } : { status: 'VALID' };
}

async function checkOne(lookup: Lookup, r: ExpectedRecord): Promise<RecordCheck> {
  if (r.role === 'mx') {
    const mx = await answers<{ exchange: string }>(lookup, r.name, 'MX');
    const ours = mx.filter((m) => host(m.exchange) === r.value).length;
    return one(ours > 0, mx.length - ours);
  }
  const txt = (await answers<string[] | string>(lookup, r.name, 'TXT')).map((t) =>
    (Array.isArray(t) ? t.join('') : t).trim(),
  );
  if (r.role === 'spf') {
    const spf = txt.filter((t) => /^v=spf1(\s|$)/i.test(t));
    if (spf.length > 1) return { status: 'INVALID', reason: 'duplicate_records' };
    const have = new Set(tokens(spf[0] ?? ''));
    // The owner may list more senders; ours must be among them.
    // Other TXT records at the apex (site verifications) are none of our business.
    return spf.length === 1 &&
      tokens(r.value)
        .slice(1, -1)
        .every((t) => have.has(t))
      ? { status: 'VALID' }
      : one(false, spf.length);
  }
  if (r.role === 'dkim') {
    const wanted = tag(r.value, 'p');
    const ours = txt.filter((t) => tag(t, 'p') === wanted).length;
    return one(ours > 0, txt.length - ours);
  }
  const dmarc = txt.filter((t) => /^v=DMARC1\s*(;|$)/i.test(t));
  if (dmarc.length > 1) return { status: 'INVALID', reason: 'duplicate_records' };
  // Any policy is the owner's choice; a record without a valid one is ignored by receivers.
  const policy = tag(dmarc[0] ?? '', 'p')?.toLowerCase();
  return dmarc.length === 1 && (policy === 'none' || policy === 'quarantine' || policy === 'reject')
    ? { status: 'VALID' }
    : one(false, txt.length);
}

/** Looks every record up; a failed lookup (timeout, SERVFAIL) throws DnsLookupError. */
export async function checkRecords(
  lookup: Lookup,
  records: readonly ExpectedRecord[],
): Promise<Map<string, RecordCheck>> {
  const results = await Promise.all(records.map(async (r) => [checkKey(r), await checkOne(lookup, r)] as const));
  return new Map(results);
}

/** The domain's status after a check of all its records. */
export function statusOf(checks: readonly RecordCheck[]): { status: DomainStatus; reason?: string } {
  if (checks.every((c) => c.status === 'VALID')) return { status: 'VERIFIED' };
  if (checks.some((c) => c.status === 'INVALID')) return { status: 'INVALID', reason: 'dns_records_invalid' };
  return { status: 'PENDING', reason: 'dns_records_missing' };
}
