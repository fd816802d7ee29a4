import {
  AppError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from '../../platform/errors/app-error.js';

export class DomainNotFoundError extends NotFoundError {
  constructor(domainId: string) {
    super(`Domain ${domainId} not found.`, {
      code: 'DOMAIN_NOT_FOUND',
      details: { field: 'domain_id', code: 'DOMAIN_NOT_FOUND' },
    });
  }
}

export class InvalidDomainNameError extends ValidationError {
  constructor(why: string) {
    super(`domain: ${why}`, 'domain', 'INVALID_DOMAIN');
  }
}

export class DomainReservedError extends ValidationError {
  constructor(domain: string, configured: string) {
    super(
      `domain: ${domain} overlaps ${configured}, a domain this service serves for everyone (INBOX_DOMAINS).`,
      'domain',
      'DOMAIN_RESERVED',
    );
  }
}

export class DomainExistsError extends ConflictError {
  constructor(domain: string) {
    super(`The domain ${domain} was already added to this organization.`, {
      code: 'DOMAIN_EXISTS',
      details: { field: 'domain', code: 'DOMAIN_EXISTS' },
    });
  }
}

/** First verified wins: another organization proved it owns the domain (docs/decisions/0019). */
export class DomainTakenError extends ConflictError {
  constructor(domain: string) {
    super(`The domain ${domain} is verified by another organization.`, {
      code: 'DOMAIN_TAKEN',
      details: { field: 'domain', code: 'DOMAIN_TAKEN' },
    });
  }
}

export class TrackingNotSupportedError extends ValidationError {
  constructor() {
    super(
      'tracking_enabled: open tracking is not offered by this service; leave it false.',
      'tracking_enabled',
      'TRACKING_NOT_SUPPORTED',
    );
  }
}

export class EmptyDomainUpdateError extends ValidationError {
  constructor() {
    super('Give at least one of feedback_enabled, subdomains_enabled, tracking_enabled.', undefined, 'EMPTY_UPDATE');
  }
}

export class DomainInUseError extends ConflictError {
  constructor(domain: string, inboxes: number) {
    super(`The domain ${domain} still has ${inboxes} inbox(es); delete them first.`, {
      code: 'DOMAIN_IN_USE',
      details: { field: 'domain_id', code: 'DOMAIN_IN_USE', inboxes },
    });
  }
}

export class InboxKeyCannotManageDomainsError extends ForbiddenError {
  constructor() {
    super('An API key limited to one inbox cannot add domains.', {
      code: 'PERMISSION_DENIED',
      details: { code: 'PERMISSION_DENIED' },
    });
  }
}

/** The DNS lookups of a verification did not get an answer: nothing was recorded; try again. */
export class DnsUnavailableError extends AppError {
  constructor(what: string) {
    super('unavailable', `DNS did not answer (${what}); nothing was recorded, try again.`, {
      code: 'DNS_UNAVAILABLE',
      details: { code: 'DNS_UNAVAILABLE' },
    });
  }
}

/** Creating an inbox on a domain of the organization that is not verified yet. */
export class DomainNotVerifiedError extends ValidationError {
  constructor(domain: string) {
    super(
      `The domain ${domain} is not verified yet: publish its DNS records and call verify.`,
      'domain',
      'DOMAIN_NOT_VERIFIED',
    );
  }
}

/** Creating an inbox on a domain another organization verified. */
export class DomainNotOwnedError extends ForbiddenError {
  constructor(domain: string) {
    super(`The domain ${domain} belongs to another organization.`, {
      code: 'DOMAIN_NOT_OWNED',
      details: { field: 'domain', code: 'DOMAIN_NOT_OWNED' },
    });
  }
}
