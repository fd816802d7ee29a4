import type { Selectable } from 'kysely';
import type { Cursor } from '../../platform/db/cursor.js';
import { afterKey } from '../../platform/db/keyset.js';
import type { Db } from '../schema/database.js';
import type { DomainStatus, RecordCheck } from './dns-records.js';
import type { DomainTable } from '../schema/domain.table.js';

export interface Domain {
  readonly organizationId: string;
  /** ASCII, lower case: also the domain_id. */
  readonly domain: string;
  readonly podId: string | null;
  readonly status: DomainStatus;
  readonly reason: string | null;
  readonly feedbackEnabled: boolean;
  readonly subdomainsEnabled: boolean;
  readonly trackingEnabled: boolean;
  readonly dkimSelector: string;
  /** The TXT value of the DKIM record. */
  readonly dkimRecord: string;
  /** Encrypted (domain-keys.ts). */
  readonly sealedPrivateKey: string;
  /** The last DNS check per record (dns-records.ts `checkKey`); empty before the first. */
  readonly checks: Readonly<Record<string, RecordCheck>>;
  readonly checkedAt: string | null;
  /** Whether the organization holds the domain (it was verified, and not released since). */
  readonly claimed: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type DomainSettings = Pick<Domain, 'feedbackEnabled' | 'subdomainsEnabled' | 'trackingEnabled'>;

const flag = (b: boolean): number => (b ? 1 : 0);

function domainFromRow(row: Selectable<DomainTable>): Domain {
  return {
    organizationId: row.organization_id,
    domain: row.domain,
    podId: row.pod_id,
    status: row.status as DomainStatus,
    reason: row.reason,
    feedbackEnabled: Boolean(row.feedback_enabled),
    subdomainsEnabled: Boolean(row.subdomains_enabled),
    trackingEnabled: Boolean(row.tracking_enabled),
    dkimSelector: row.dkim_selector,
    dkimRecord: row.dkim_public_key,
    sealedPrivateKey: row.dkim_private_key,
    checks: row.record_checks ? (JSON.parse(row.record_checks) as Record<string, RecordCheck>) : {},
    checkedAt: row.checked_at,
    claimed: row.claimed_domain !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertDomain(db: Db, d: Domain): Promise<void> {
  await db
    .insertInto('domains')
    .values({
      organization_id: d.organizationId,
      domain: d.domain,
      pod_id: d.podId,
      status: d.status,
      reason: d.reason,
      feedback_enabled: flag(d.feedbackEnabled),
      subdomains_enabled: flag(d.subdomainsEnabled),
      tracking_enabled: flag(d.trackingEnabled),
      dkim_selector: d.dkimSelector,
      dkim_public_key: d.dkimRecord,
      dkim_private_key: d.sealedPrivateKey,
      record_checks: null,
      claimed_domain: null,
      checked_at: null,
      created_at: d.createdAt,
      updated_at: d.updatedAt,
    })
    .execute();
}

export async function findDomain(db: Db, organizationId: string, domain: string): Promise<Domain | undefined> {
  const row = await db
    .selectFrom('domains')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('domain', '=', domain)
    .executeTakeFirst();
  return row ? domainFromRow(row) : undefined;
}

/** `podId`: only that pod's domains; undefined: all of the organization's. */
export async function listDomains(
  db: Db,
  organizationId: string,
  options: { podId?: string; limit: number; direction: 'asc' | 'desc'; after?: Cursor },
): Promise<Domain[]> {
  let q = db.selectFrom('domains').selectAll().where('organization_id', '=', organizationId);
  if (options.podId !== undefined) q = q.where('pod_id', '=', options.podId);
  const after = options.after;
  if (after) q = q.where((eb) => afterKey(eb, 'created_at', 'domain', after, options.direction));
  const rows = await q
    .orderBy('created_at', options.direction)
    .orderBy('domain', options.direction)
    .limit(options.limit + 1)
    .execute();
  return rows.map(domainFromRow);
}

/** Settings and the status they imply (a change that adds a record makes a verified domain pending again). */
export async function updateDomain(
  db: Db,
  d: Pick<Domain, 'organizationId' | 'domain' | 'status' | 'reason' | 'updatedAt' | 'claimed'> & DomainSettings,
): Promise<void> {
  await db
    .updateTable('domains')
    .set({
      feedback_enabled: flag(d.feedbackEnabled),
      subdomains_enabled: flag(d.subdomainsEnabled),
      tracking_enabled: flag(d.trackingEnabled),
      status: d.status,
      reason: d.reason,
      updated_at: d.updatedAt,
    })
    .where('organization_id', '=', d.organizationId)
    .where('domain', '=', d.domain)
    .execute();
}

/**
 * The outcome of a DNS check; `claimed` takes (or gives up) the domain for the organization. Taking
 * a domain another organization holds fails on the unique index (isUniqueViolation).
 */
export async function recordCheck(
  db: Db,
  d: Pick<Domain, 'organizationId' | 'domain' | 'status' | 'reason' | 'checks' | 'checkedAt' | 'updatedAt' | 'claimed'>,
): Promise<void> {
  await db
    .updateTable('domains')
    .set({
      status: d.status,
      reason: d.reason,
      record_checks: JSON.stringify(d.checks),
      claimed_domain: d.claimed ? d.domain : null,
      checked_at: d.checkedAt,
      updated_at: d.updatedAt,
    })
    .where('organization_id', '=', d.organizationId)
    .where('domain', '=', d.domain)
    .execute();
}

export async function deleteDomain(db: Db, organizationId: string, domain: string): Promise<boolean> {
  const result = await db
    .deleteFrom('domains')
    .where('organization_id', '=', organizationId)
    .where('domain', '=', domain)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The verified domains among `names` (whichever organization holds them). */
export async function findClaimedDomains(db: Db, names: readonly string[]): Promise<Domain[]> {
  if (!names.length) return [];
  const rows = await db
    .selectFrom('domains')
    .selectAll()
    .where('claimed_domain', 'in', [...names])
    .execute();
  return rows.map(domainFromRow);
}

/** The organization's inboxes on `domain` or on its subdomains. */
export async function countInboxesOn(db: Db, organizationId: string, domain: string): Promise<number> {
  const row = await db
    .selectFrom('inboxes')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where((eb) => eb.or([eb('domain', '=', domain), eb('domain', 'like', `%.${domain}`)]))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
