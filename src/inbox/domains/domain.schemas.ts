import { Type } from 'typebox';
import type { Domain } from './domain.repository.js';
import type { DomainView } from './domain.service.js';

/** Wire shapes of agentmail 0.5.27's Domain, DomainItem, ListDomainsResponse and their requests. */

export const DomainIdParams = Type.Object({
  domain_id: Type.String({
    minLength: 1,
    maxLength: 260,
    description: 'The domain name (its ASCII or Unicode spelling)',
  }),
});
export const PodDomainParams = Type.Object({
  pod_id: Type.String({ minLength: 1, maxLength: 64 }),
  domain_id: DomainIdParams.properties.domain_id,
});
export const PodParams = Type.Object({ pod_id: Type.String({ minLength: 1, maxLength: 64 }) });

const FeedbackEnabled = Type.Boolean({
  description: 'Bounce and complaint notifications reach your inboxes (default true)',
});
const SubdomainsEnabled = Type.Boolean({
  description: 'Inboxes on any subdomain too; adds a wildcard MX record (default false)',
});
const TrackingEnabled = Type.Boolean({
  description: 'Open tracking: not offered by this service, only false is accepted',
});

export const CreateDomainBody = Type.Object({
  domain: Type.String({
    minLength: 1,
    maxLength: 260,
    description: 'e.g. example.com; an internationalized name is stored in its ASCII (xn--) form',
  }),
  allow_conflicting_provider: Type.Optional(
    Type.Boolean({ description: 'Accepted for compatibility; nothing here inspects other providers' }),
  ),
  feedback_enabled: Type.Optional(FeedbackEnabled),
  subdomains_enabled: Type.Optional(SubdomainsEnabled),
  tracking_enabled: Type.Optional(TrackingEnabled),
});

export const UpdateDomainBody = Type.Object({
  feedback_enabled: Type.Optional(FeedbackEnabled),
  subdomains_enabled: Type.Optional(SubdomainsEnabled),
  tracking_enabled: Type.Optional(TrackingEnabled),
});

export const ListDomainsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Items per page (default 50, at most 100)' })),
  page_token: Type.Optional(Type.String({ maxLength: 1000 })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first' })),
});

const VerificationRecord = Type.Object({
  type: Type.Union([Type.Literal('MX'), Type.Literal('TXT'), Type.Literal('CNAME')]),
  name: Type.String(),
  value: Type.String(),
  status: Type.Union([Type.Literal('MISSING'), Type.Literal('INVALID'), Type.Literal('VALID')]),
  priority: Type.Optional(Type.Integer()),
  reason: Type.Optional(Type.String({ description: 'duplicate_records or value_mismatch' })),
});

const itemFields = {
  pod_id: Type.Optional(Type.String()),
  domain_id: Type.String(),
  domain: Type.String(),
  feedback_enabled: Type.Boolean(),
  subdomains_enabled: Type.Boolean(),
  tracking_enabled: Type.Boolean(),
  updated_at: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
};

export const DomainItemResponse = Type.Object(itemFields);

export const DomainResponse = Type.Object({
  ...itemFields,
  status: Type.Union([
    Type.Literal('NOT_STARTED'),
    Type.Literal('PENDING'),
    Type.Literal('INVALID'),
    Type.Literal('FAILED'),
    Type.Literal('VERIFYING'),
    Type.Literal('VERIFIED'),
  ]),
  reason: Type.Optional(
    Type.String({
      description:
        'Why the domain is not VERIFIED: dns_records_missing, dns_records_invalid, domain_claimed_by_another_organization',
    }),
  ),
  records: Type.Array(VerificationRecord),
});

export const ListDomainsResponse = Type.Object({
  count: Type.Integer(),
  limit: Type.Optional(Type.Integer()),
  next_page_token: Type.Optional(Type.String()),
  domains: Type.Array(DomainItemResponse),
});

export function toDomainItemResponse(d: Domain) {
  return {
    ...(d.podId !== null ? { pod_id: d.podId } : {}),
    domain_id: d.domain,
    domain: d.domain,
    feedback_enabled: d.feedbackEnabled,
    subdomains_enabled: d.subdomainsEnabled,
    tracking_enabled: d.trackingEnabled,
    updated_at: d.updatedAt,
    created_at: d.createdAt,
  };
}

export function toDomainResponse({ domain: d, records }: DomainView) {
  return {
    ...toDomainItemResponse(d),
    status: d.status,
    ...(d.reason !== null && d.status !== 'VERIFIED' ? { reason: d.reason } : {}),
    records: records.map((r) => ({
      type: r.type,
      name: r.name,
      value: r.value,
      status: r.status,
      ...(r.priority !== undefined ? { priority: r.priority } : {}),
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
    })),
  };
}
