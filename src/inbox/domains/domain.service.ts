import { domainToASCII } from 'node:url';
import type { Kysely } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { decodeCursor, page } from '../../platform/db/cursor.js';
import { isUniqueViolation } from '../../platform/db/dialect.js';
import type { GroupCommit } from '../../platform/db/group-commit.js';
import type { Ids } from '../../platform/ids.js';
import { type KeyOwner, inScope, requirePermission } from '../core/scope.js';
import { podInScope } from '../pods/pod-scope.js';
import type { InboxDatabase } from '../schema/database.js';
import { parseLimit } from '../lists/list-query.js';
import { domainKey } from '../mail/domains.js';
import type { DomainKey } from '../outbound/dkim.js';
import {
  checkKey,
  checkRecords,
  DnsLookupError,
  expectedRecords,
  statusOf,
  zoneFile,
  type ExpectedRecord,
  type Lookup,
  type RecordCheck,
} from './dns-records.js';
import {
  DnsUnavailableError,
  DomainExistsError,
  DomainInUseError,
  DomainNotFoundError,
  DomainNotOwnedError,
  DomainNotVerifiedError,
  DomainReservedError,
  DomainTakenError,
  EmptyDomainUpdateError,
  InboxKeyCannotManageDomainsError,
  InvalidDomainNameError,
  TrackingNotSupportedError,
} from './domain.errors.js';
import { generateDomainKey, type KeySealer } from './domain-keys.js';
import {
  countInboxesOn,
  deleteDomain,
  findClaimedDomains,
  findDomain,
  insertDomain,
  listDomains,
  recordCheck,
  updateDomain,
  type Domain,
  type DomainSettings,
} from './domain.repository.js';

/**
 * Custom domains (docs/decisions/0019-custom-domains.md): an organization adds a domain, gets the
 * DNS records to publish (MX to our SMTP host, SPF, DKIM with a key generated for the domain,
 * DMARC), and verifies them; a verified domain takes inboxes, receives mail and signs what it
 * sends with its own key. The first organization to verify a domain owns it.
 */

export interface DomainServiceDeps {
  readonly db: Kysely<InboxDatabase>;
  readonly commits: GroupCommit<InboxDatabase>;
  readonly clock: Clock;
  readonly ids: Ids;
  /** INBOX_DOMAINS: served for everyone, so no organization may claim them or what overlaps them. */
  readonly configuredDomains: readonly string[];
  /** The host our MX records name (INBOX_SMTP_HOSTNAME). */
  readonly mxHost: string;
  readonly spfIncludes: readonly string[];
  /** DNS lookups of verify (INBOX_DNS_SERVERS). */
  readonly lookup: Lookup;
  /** The longest a verification waits for DNS, ms. */
  readonly verifyTimeoutMs: number;
  readonly sealer: KeySealer;
}

export interface DomainView {
  readonly domain: Domain;
  readonly records: readonly (ExpectedRecord & RecordCheck)[];
}

/** Where a route is: the organization's routes, or a pod's (`/v0/pods/:pod_id/domains`). */
export interface DomainPlace {
  readonly podId?: string;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_PEM_CACHE = 1000;

/** The ASCII spelling of a domain name given by a caller, or InvalidDomainNameError. */
export function parseDomainName(input: string): string {
  const trimmed = input.trim().toLowerCase().replace(/\.$/, '');
  if (!trimmed) throw new InvalidDomainNameError('is empty.');
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\u0000-\u001f\u007f]/.test(trimmed))
    throw new InvalidDomainNameError('contains spaces or control characters.');
  if (trimmed.includes('@') || trimmed.includes('/') || trimmed.includes(':'))
    throw new InvalidDomainNameError('is a domain name only, like example.com (no address, URL or port).');
  const ascii = domainToASCII(trimmed);
  if (!ascii)
    throw new InvalidDomainNameError(`${JSON.stringify(input)} is not a valid (internationalized) domain name.`);
  const labels = ascii.split('.');
  if (ascii.length > 253) throw new InvalidDomainNameError('is longer than 253 characters.');
  if (labels.length < 2) throw new InvalidDomainNameError('needs at least two labels, like example.com.');
  if (!labels.every((l) => LABEL.test(l)))
    throw new InvalidDomainNameError('labels are letters, digits and inner hyphens, 1-63 characters each.');
  if (/^\d+$/.test(labels[labels.length - 1] as string))
    throw new InvalidDomainNameError('is an IP address, not a domain name.');
  return ascii;
}

/** `a.b.example.com` → `a.b.example.com`, `b.example.com`, `example.com`. */
function selfAndParents(ascii: string): string[] {
  const labels = ascii.split('.');
  const out: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) out.push(labels.slice(i).join('.'));
  return out;
}

export function createDomainService(deps: DomainServiceDeps) {
  const { db, commits, clock, ids, sealer } = deps;
  const configured = deps.configuredDomains.map(domainKey);
  const pems = new Map<string, string>();

  const recordsOf = (d: Pick<Domain, 'domain' | 'dkimSelector' | 'dkimRecord' | 'subdomainsEnabled'>) =>
    expectedRecords({
      domain: d.domain,
      selector: d.dkimSelector,
      dkimValue: d.dkimRecord,
      subdomainsEnabled: d.subdomainsEnabled,
      mxHost: deps.mxHost,
      spfIncludes: deps.spfIncludes,
    });

  function view(domain: Domain): DomainView {
    return {
      domain,
      records: recordsOf(domain).map((r) => ({
        ...r,
        ...(domain.checks[checkKey(r)] ?? { status: 'MISSING' as const }),
      })),
    };
  }

  /** The domain if the key may see it from `place`; else the 404 a missing one gives. */
  async function visible(owner: KeyOwner, place: DomainPlace, domainId: string): Promise<Domain> {
    let key: string;
    try {
      key = parseDomainName(domainId);
    } catch {
      throw new DomainNotFoundError(domainId);
    }
    const domain = await findDomain(db, owner.organizationId, key);
    if (!domain || !inScope(owner, domain) || (place.podId !== undefined && domain.podId !== place.podId))
      throw new DomainNotFoundError(domainId);
    return domain;
  }

  function refuseOverlap(ascii: string): void {
    for (const c of configured)
      if (c === ascii || c.endsWith(`.${ascii}`) || ascii.endsWith(`.${c}`)) throw new DomainReservedError(ascii, c);
  }

  /** A verified domain serving `ascii` (itself, or a parent that allows subdomains), whoever owns it. */
  async function serving(ascii: string): Promise<Domain | undefined> {
    const found = await findClaimedDomains(db, selfAndParents(ascii));
    return (
      found.find((d) => d.domain === ascii) ??
      found
        .filter((d) => d.subdomainsEnabled && d.status === 'VERIFIED')
        .sort((a, b) => b.domain.length - a.domain.length)[0]
    );
  }

  async function privateKeyOf(d: Domain): Promise<string> {
    let pem = pems.get(d.sealedPrivateKey);
    if (pem === undefined) {
      pem = await sealer.open(d.sealedPrivateKey);
      if (pems.size >= MAX_PEM_CACHE) pems.delete(pems.keys().next().value as string);
      pems.set(d.sealedPrivateKey, pem);
    }
    return pem;
  }

  return {
    /** The place of a pod route: the pod must be the organization's and in the key's scope (404 otherwise). */
    async pod(owner: KeyOwner, podId: string): Promise<DomainPlace> {
      await podInScope(db, owner, podId);
      return { podId };
    },

    async create(
      owner: KeyOwner,
      place: DomainPlace,
      input: { domain: string } & Partial<DomainSettings>,
    ): Promise<DomainView> {
      requirePermission(owner, 'domainCreate');
      if (owner.inboxId !== undefined) throw new InboxKeyCannotManageDomainsError();
      const ascii = parseDomainName(input.domain);
      refuseOverlap(ascii);
      if (input.trackingEnabled) throw new TrackingNotSupportedError();
      if ((await findClaimedDomains(db, [ascii])).some((d) => d.organizationId !== owner.organizationId))
        throw new DomainTakenError(ascii);
      if (await findDomain(db, owner.organizationId, ascii)) throw new DomainExistsError(ascii);
      const key = await generateDomainKey();
      const now = clock.now().toISOString();
      const domain: Domain = {
        organizationId: owner.organizationId,
        domain: ascii,
        podId: place.podId ?? owner.podId ?? null,
        status: 'NOT_STARTED',
        reason: null,
        feedbackEnabled: input.feedbackEnabled ?? true,
        subdomainsEnabled: input.subdomainsEnabled ?? false,
        trackingEnabled: false,
        // A selector per domain and key, so that a new key can be published beside the old one.
        dkimSelector: `am${ids
          .token(6)
          .toLowerCase()
          .replace(/[^a-z0-9]/g, '0')}`,
        dkimRecord: key.dnsValue,
        sealedPrivateKey: await sealer.seal(key.privateKeyPem),
        checks: {},
        checkedAt: null,
        claimed: false,
        createdAt: now,
        updatedAt: now,
      };
      try {
        await commits.run((trx) => insertDomain(trx, domain));
      } catch (err) {
        if (isUniqueViolation(err)) throw new DomainExistsError(ascii);
        throw err;
      }
      return view(domain);
    },

    async get(owner: KeyOwner, place: DomainPlace, domainId: string): Promise<DomainView> {
      requirePermission(owner, 'domainRead');
      return view(await visible(owner, place, domainId));
    },

    async list(
      owner: KeyOwner,
      place: DomainPlace,
      query: { limit?: number; pageToken?: string; ascending?: boolean },
    ) {
      requirePermission(owner, 'domainRead');
      const limit = parseLimit(query.limit);
      const after = query.pageToken ? decodeCursor(query.pageToken, 'string') : undefined;
      const direction = after?.direction ?? (query.ascending ? 'asc' : 'desc');
      // Domains belong to no inbox: a key limited to one sees none.
      if (owner.inboxId !== undefined) return { limit, items: [] as Domain[], nextPageToken: undefined };
      const podId = place.podId ?? owner.podId;
      const rows = await listDomains(db, owner.organizationId, {
        limit,
        direction,
        ...(podId !== undefined ? { podId } : {}),
        ...(after ? { after } : {}),
      });
      return { limit, ...page(rows, limit, (d) => ({ sort: d.createdAt, tiebreak: d.domain }), direction) };
    },

    async update(
      owner: KeyOwner,
      place: DomainPlace,
      domainId: string,
      changes: Partial<DomainSettings>,
    ): Promise<DomainView> {
      requirePermission(owner, 'domainUpdate');
      const current = await visible(owner, place, domainId);
      if (
        changes.feedbackEnabled === undefined &&
        changes.subdomainsEnabled === undefined &&
        changes.trackingEnabled === undefined
      )
        throw new EmptyDomainUpdateError();
      if (changes.trackingEnabled) throw new TrackingNotSupportedError();
      const next = { ...current, ...changes, trackingEnabled: false, updatedAt: clock.now().toISOString() };
      // Records added or removed (the wildcard MX) change what is proven; a domain never checked
      // stays NOT_STARTED. A claimed domain keeps its claim (its apex records were proven): only its
      // subdomains wait for the next verify.
      let updated: Domain = next;
      if (current.checkedAt !== null && current.status !== 'FAILED') {
        const s = statusOf(view(next).records);
        updated = {
          ...next,
          status: s.status === 'VERIFIED' || !current.claimed ? s.status : 'PENDING',
          reason: s.reason ?? null,
        };
      }
      await commits.run((trx) => updateDomain(trx, updated));
      return view(updated);
    },

    async delete(owner: KeyOwner, place: DomainPlace, domainId: string): Promise<void> {
      requirePermission(owner, 'domainDelete');
      const domain = await visible(owner, place, domainId);
      await commits.run(async (trx) => {
        const inboxes = await countInboxesOn(trx, domain.organizationId, domain.domain);
        if (inboxes > 0) throw new DomainInUseError(domain.domain, inboxes);
        if (!(await deleteDomain(trx, domain.organizationId, domain.domain))) throw new DomainNotFoundError(domainId);
      });
    },

    /**
     * Looks the records up in DNS and records which match. All valid: VERIFIED, and the domain is
     * the organization's (unless another verified it first: FAILED and 409). A domain that was
     * verified and no longer has its records is released.
     */
    async verify(owner: KeyOwner, place: DomainPlace, domainId: string): Promise<DomainView> {
      requirePermission(owner, 'domainUpdate');
      const domain = await visible(owner, place, domainId);
      const records = recordsOf(domain);
      let timer: NodeJS.Timeout | undefined;
      let checks: Map<string, RecordCheck>;
      try {
        checks = await Promise.race([
          checkRecords(deps.lookup, records),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new DnsLookupError(`no answer within ${deps.verifyTimeoutMs} ms`)),
              deps.verifyTimeoutMs,
            );
          }),
        ]);
      } catch (err) {
        if (err instanceof DnsLookupError) throw new DnsUnavailableError(err.message);
        throw err;
      } finally {
        clearTimeout(timer);
      }
      const outcome = statusOf([...checks.values()]);
      const now = clock.now().toISOString();
      const verified = outcome.status === 'VERIFIED';
      const checked: Domain = {
        ...domain,
        status: outcome.status,
        reason: outcome.reason ?? null,
        checks: Object.fromEntries(checks),
        checkedAt: now,
        updatedAt: now,
        claimed: verified,
      };
      const taken: Domain = {
        ...checked,
        status: 'FAILED',
        reason: 'domain_claimed_by_another_organization',
        claimed: false,
      };
      let result: Domain;
      try {
        result = await commits.run(async (trx) => {
          const elsewhere =
            verified &&
            (await findClaimedDomains(trx, [domain.domain])).some((d) => d.organizationId !== domain.organizationId);
          const d = elsewhere ? taken : checked;
          await recordCheck(trx, d);
          return d;
        });
      } catch (err) {
        // Two organizations verified at once: the unique index let one win.
        if (!isUniqueViolation(err)) throw err;
        await commits.run((trx) => recordCheck(trx, taken));
        result = taken;
      }
      if (result.status === 'FAILED') throw new DomainTakenError(domain.domain);
      return view(result);
    },

    async zoneFile(owner: KeyOwner, place: DomainPlace, domainId: string): Promise<{ domain: string; text: string }> {
      requirePermission(owner, 'domainRead');
      const domain = await visible(owner, place, domainId);
      return { domain: domain.domain, text: zoneFile(domain.domain, recordsOf(domain)) };
    },

    /**
     * The spelling inboxes of `owner` in pod `podId` use for `requested`, a domain that is not one of
     * INBOX_DOMAINS: a verified domain of the organization (the organization's, or that pod's).
     */
    async inboxDomain(owner: KeyOwner, podId: string, requested: string): Promise<string | undefined> {
      let ascii: string;
      try {
        ascii = parseDomainName(requested);
      } catch {
        return undefined;
      }
      const d = await serving(ascii);
      if (d && d.organizationId !== owner.organizationId) throw new DomainNotOwnedError(ascii);
      if (d && (d.podId === null || d.podId === podId)) return ascii;
      if (d) return undefined;
      const own = await findDomain(db, owner.organizationId, ascii);
      if (own && (own.podId === null || own.podId === podId)) throw new DomainNotVerifiedError(ascii);
      return undefined;
    },

    /** The ASCII spelling of `domain` when a verified custom domain serves it (inbound mail). */
    async servedDomain(domain: string): Promise<string | undefined> {
      const ascii = domainKey(domain);
      return (await serving(ascii)) ? ascii : undefined;
    },

    /** The DKIM key of the verified custom domain that serves `domain`, for outbound mail. */
    async signingKey(domain: string): Promise<DomainKey | undefined> {
      const d = await serving(domainKey(domain));
      if (!d) return undefined;
      return { signingDomain: d.domain, selector: d.dkimSelector, privateKeyPem: await privateKeyOf(d) };
    },
  };
}

export type DomainService = ReturnType<typeof createDomainService>;
